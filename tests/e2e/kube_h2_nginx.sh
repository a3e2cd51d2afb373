#!/usr/bin/env bash
# The cluster verbs over HTTP/2: nginx terminates TLS with h2 in front of the test
# API server (which speaks HTTP/1.1 only) and proxies unbuffered. submit, list,
# status, logs, logs -f (lines arriving while the pods run) and delete go through
# it; `ktrain -v` and nginx's access log both show that the requests used HTTP/2.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac
nginx_bin="$(command -v nginx || true)"
[ -n "$nginx_bin" ] || [ ! -x /usr/sbin/nginx ] || nginx_bin=/usr/sbin/nginx
if [ -z "$nginx_bin" ]; then
  echo "SKIP: nginx is not installed"
  exit 0
fi

command -v script >/dev/null || fail "script (util-linux) is not installed"

work="$(mktemp -d /tmp/ktrain-h2.XXXXXX)"
nginx_pid=""
stop_nginx() {
  if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
    kill -TERM "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  nginx_pid=""
}
# KEEP_WORK=1 keeps the work folder (nginx's logs, the outputs) for a look.
cleanup() { stop_nginx; stop_apiserver; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; }

cat >"$work/script.yaml" <<'YAML'
pods:
  - match: {job: "h2demo-*"}
    linePattern: "step {i} of rank {index}"
    lineCount: 30
    lineRate: 10
    hold: true
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1

# nginx's certificate, signed by the test CA (so the kubeconfig keeps ca.crt).
openssl req -new -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
  -keyout "$work/nginx.key" -out "$work/nginx.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/nginx.csr" -CA "$APISERVER_DIR/ca.crt" -CAkey "$APISERVER_DIR/ca.key" \
  -CAcreateserial -days 1 -extfile "$work/ext.cnf" -out "$work/nginx.crt" 2>/dev/null

# `http2 on` from nginx 1.25.1; `listen ... http2` before.
nginx_version="$("$nginx_bin" -v 2>&1 | sed -n 's|.*nginx/\([0-9][0-9.]*\).*|\1|p')"
echo "nginx $nginx_version"
new_http2=0
if [ "$(printf '%s\n1.25.1\n' "$nginx_version" | sort -V | head -n 1)" = "1.25.1" ]; then new_http2=1; fi

mkdir -p "$work/nginx/tmp"
write_conf() {  # PORT
  local listen="listen 127.0.0.1:$1 ssl http2;" h2=""
  if [ $new_http2 = 1 ]; then listen="listen 127.0.0.1:$1 ssl;" h2="http2 on;"; fi
  cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log info;
events { worker_connections 1024; }
http {
  log_format proto '\$server_protocol \$connection \$request_method \$uri \$status "\$http_user_agent"';
  access_log $work/nginx/access.log proto;
  client_body_temp_path $work/nginx/tmp/body;
  proxy_temp_path $work/nginx/tmp/proxy;
  fastcgi_temp_path $work/nginx/tmp/fastcgi;
  uwsgi_temp_path $work/nginx/tmp/uwsgi;
  scgi_temp_path $work/nginx/tmp/scgi;
  client_max_body_size 64m;
  upstream apiserver { server 127.0.0.1:$APISERVER_PORT; keepalive 16; }
  server {
    $listen
    $h2
    ssl_certificate $work/nginx.crt;
    ssl_certificate_key $work/nginx.key;
    location / {
      proxy_pass https://apiserver;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 3600s;
      proxy_send_timeout 3600s;
      proxy_ssl_trusted_certificate $APISERVER_DIR/ca.crt;
      proxy_ssl_verify on;
      proxy_ssl_name localhost;
      proxy_ssl_session_reuse on;
    }
  }
}
CONF
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
# A free port can be taken between the probe and nginx's bind: try a few.
nginx_port=""
for attempt in 1 2 3 4 5; do
  port="$(free_port)"
  write_conf "$port"
  "$nginx_bin" -t -q -c "$work/nginx/nginx.conf" -p "$work/nginx" -e stderr \
    || fail "nginx rejects its configuration"
  "$nginx_bin" -c "$work/nginx/nginx.conf" -p "$work/nginx" -e stderr 2>"$work/nginx/stderr" &
  nginx_pid=$!
  for i in $(seq 1 100); do
    if curl -s -o /dev/null --cacert "$APISERVER_DIR/ca.crt" "https://127.0.0.1:$port/_test/health"; then
      nginx_port=$port
      break
    fi
    kill -0 "$nginx_pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$nginx_port" ] && break
  stop_nginx
done
[ -n "$nginx_port" ] || fail "nginx did not start: $(cat "$work/nginx/stderr" "$work/nginx/error.log" 2>/dev/null)"
echo "nginx on 127.0.0.1:$nginx_port -> test API server on 127.0.0.1:$APISERVER_PORT"
expect_eq "$(curl -sS --http2 -o /dev/null -w '%{http_version}' --cacert "$APISERVER_DIR/ca.crt" \
  "https://127.0.0.1:$nginx_port/_test/health")" "2" "nginx speaks h2 (curl)"

# A kubeconfig for nginx: same token, same CA.
cat >"$work/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: h2
  cluster:
    server: https://127.0.0.1:$nginx_port
    certificate-authority: $APISERVER_DIR/ca.crt
users:
- name: h2-user
  user:
    token: $(cat "$APISERVER_DIR/token")
contexts:
- name: h2
  context: {cluster: h2, user: h2-user, namespace: default}
current-context: h2
YAML
export KUBECONFIG="$work/kubeconfig"

cat >"$work/ktrain.yaml" <<'YAML'
name: h2demo
image: registry.example.com/ml/h2demo:1.0.0
train:
  command: [python3, train.py]
  framework: none
  nodes: 2
  gpus: 0
  preflight: "off"
YAML
cd "$work"
admin DELETE /_test/requests >/dev/null

# submit
run="$("$ktrain" -v submit --run-id h2 2>"$work/submit.log")" || fail "submit: $(cat "$work/submit.log")"
cat "$work/submit.log"
expect_eq "$run" "h2demo-h2" "submit prints the run name"
expect_eq "$(grep -c '^I ' "$work/submit.log")" "4" "submit: 4 requests (Service, Secret owned by it, Job, the Job made owner of the Service)"
expect_eq "$(grep '^I ' "$work/submit.log" | grep -vc '(HTTP/2)$' || true)" "0" "submit: every request over HTTP/2"
expect_eq "$(api_curl /apis/batch/v1/namespaces/default/jobs/h2demo-h2 | json 'd["spec"]["completions"]')" "2" "the Job is on the server"

# list (wait for both ranks to run; the pods hold until released)
for i in $(seq 1 200); do
  state="$("$ktrain" list -o json | json '[r["state"] for r in d["runs"] if r["name"]=="h2demo-h2"]')"
  [ "$state" = '["Running"]' ] && break
  sleep 0.05
done
expect_eq "$state" '["Running"]' "list shows the run running"
list_out="$("$ktrain" -v list 2>"$work/list.log")"
expect_contains "$list_out" "h2demo-h2  train  Running        2     0" "list table row"
expect_contains "$(cat "$work/list.log")" "(HTTP/2)" "list over HTTP/2"

# logs -f while the pods write (30 lines a rank, 10 a second, then they hold until
# released): lines arrive as they are written (on a terminal, where each line is
# flushed; `script` gives it one), and it still follows after the last line.
"$ktrain" status h2demo-h2 >/dev/null
script -qfec "$ktrain -v logs -f h2demo-h2 2>$work/follow.log" /dev/null </dev/null >"$work/follow.tty" &
follow_pid=$!
partial=0 n=0
for i in $(seq 1 300); do
  n="$(tr -d '\r' <"$work/follow.tty" | grep -c '^\[node ' || true)"
  if [ "$n" -gt 0 ] && [ "$n" -lt 60 ]; then partial=1; fi
  [ "$n" -ge 60 ] && break
  sleep 0.05
done
expect_eq "$n" "60" "logs -f: 30 lines of each rank"
expect_eq "$partial" "1" "logs -f: lines arrived while the pods wrote them"
sleep 0.3
kill -0 "$follow_pid" 2>/dev/null || fail "logs -f ended while the pods still run: $(cat "$work/follow.log")"
echo "ok: logs -f still following after the last line"

# status while running
"$ktrain" -v status h2demo-h2 -o json >"$work/status.json" 2>"$work/status.log"
expect_eq "$(json 'd["state"]' <"$work/status.json")" "Running" "status state"
expect_eq "$(json '[r["phase"] for r in d["ranks"]]' <"$work/status.json")" '["Running", "Running"]' "status ranks"
expect_eq "$(grep '^I ' "$work/status.log" | grep -vc '(HTTP/2)$' || true)" "0" "status: every request over HTTP/2"

# Release the pods: logs -f ends, with every line once and in order per rank.
admin POST /_test/release '{"job":"h2demo-h2"}' >/dev/null
for i in $(seq 1 200); do
  kill -0 "$follow_pid" 2>/dev/null || break
  sleep 0.05
done
if kill -0 "$follow_pid" 2>/dev/null; then
  kill "$follow_pid"
  fail "logs -f did not end when the pods ended"
fi
wait "$follow_pid" || fail "logs -f exit status $?: $(cat "$work/follow.log")"
echo "ok: logs -f ends with the pods, exit status 0"
tr -d '\r' <"$work/follow.tty" >"$work/follow.out"
for r in 0 1; do
  expect_eq "$(grep "^\[node $r\] " "$work/follow.out" | sed "s/^\[node $r\] //" | md5sum)" \
    "$(for i in $(seq 1 30); do echo "step $i of rank $r"; done | md5sum)" "logs -f: rank $r complete, once, in order"
done
expect_contains "$(grep 'follow=true' "$work/follow.log")" "(HTTP/2)" "log streams over HTTP/2"

# logs (not following), after the run succeeded
for i in $(seq 1 200); do
  state="$("$ktrain" status h2demo-h2 -o json | json 'd["state"]')"
  [ "$state" = Succeeded ] && break
  sleep 0.05
done
expect_eq "$state" "Succeeded" "the run succeeded"
"$ktrain" -v logs h2demo-h2 >"$work/logs.out" 2>"$work/logs.log"
expect_eq "$(wc -l <"$work/logs.out" | tr -d ' ')" "60" "logs: 60 lines"
expect_eq "$(sed -n 1p "$work/logs.out")" "[node 0] step 1 of rank 0" "logs: first line"
expect_eq "$(tail -n 1 "$work/logs.out")" "[node 1] step 30 of rank 1" "logs: last line"
expect_eq "$(grep '^I ' "$work/logs.log" | grep -vc '(HTTP/2)$' || true)" "0" "logs: every request over HTTP/2"

# delete
"$ktrain" -v delete h2demo-h2 >"$work/delete.out" 2>"$work/delete.log"
expect_eq "$(cat "$work/delete.out")" "deleted h2demo-h2" "delete"
expect_eq "$(grep '^I DELETE' "$work/delete.log" | grep -vc '(HTTP/2)$' || true)" "0" "delete over HTTP/2"
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' /apis/batch/v1/namespaces/default/jobs/h2demo-h2)" "404" "the Job is gone"
expect_eq "$(api_curl '/api/v1/namespaces/default/secrets?labelSelector=ktrain.dev%2Frun%3Dh2demo-h2' | json 'len(d["items"])')" "0" "the Secret is gone"

# nginx's side: every request ktrain made came in over HTTP/2 and reached the server.
stop_nginx
ktrain_lines="$(grep '"ktrain/' "$work/nginx/access.log" || true)"
[ -n "$ktrain_lines" ] || fail "no ktrain request in nginx's access log"
echo "nginx saw $(wc -l <<<"$ktrain_lines") ktrain requests"
expect_eq "$(awk '{print $1}' <<<"$ktrain_lines" | sort -u)" "HTTP/2.0" "nginx: every ktrain request over HTTP/2.0"
expect_eq "$(grep -c ' PATCH /apis/batch/v1/namespaces/default/jobs/h2demo-h2 201 ' <<<"$ktrain_lines")" "1" "nginx: the Job's apply"
expect_contains "$ktrain_lines" " GET /api/v1/namespaces/default/pods/h2demo-h2-0-" "nginx: a log request"
server_count="$(admin GET '/_test/requests' | json 'len([r for r in d if r["userAgent"].startswith("ktrain/")])')"
expect_eq "$server_count" "$(wc -l <<<"$ktrain_lines" | tr -d ' ')" "every ktrain request reached the server once"
echo "PASS"
