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
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/nginx_h2.bash"
command -v script >/dev/null || fail "script (util-linux) is not installed"

work="$(mktemp -d /tmp/ktrain-h2.XXXXXX)"
# KEEP_WORK=1 keeps the work folder (nginx's logs, the outputs) for a look.
cleanup() { stop_nginx; stop_apiserver; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; }

cat >"$work/script.yaml" <<'YAML'
pods:
  - match: {job: "h2demo-*"}
    linePattern: "step {i} of rank {index}"
    lineCount: 30
    lineRate: 5
    hold: true
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1

front_apiserver_h2 "$work/nginx"

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
expect_eq "$(grep -c '^I ' "$work/submit.log")" "5" "submit: 5 requests (the server's release, Service, Secret owned by it, Job, the Job made owner of the Service)"
expect_eq "$(grep '^I ' "$work/submit.log" | grep -vc '(HTTP/2)$' || true)" "0" "submit: every request over HTTP/2"
expect_eq "$(api_curl /apis/batch/v1/namespaces/default/jobs/h2demo-h2 | json 'd["spec"]["completions"]')" "2" "the Job is on the server"

# logs -f while the pods write (30 lines a rank, 5 a second, then they hold until
# released), started as soon as the run is: lines arrive as they are written (on a
# terminal, where each line is flushed; `script` gives it one), and it still follows
# after the last line.
script -qfec "$ktrain -v logs -f h2demo-h2 2>$work/follow.log" /dev/null </dev/null >"$work/follow.tty" &
follow_pid=$!
partial=0 n=0
for i in $(seq 1 600); do
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
expect_eq "$(grep -Ec ' PATCH /apis/batch/v1/namespaces/default/jobs/h2demo-h2[?][^ ]* 201 ' <<<"$ktrain_lines")" "1" "nginx: the Job's apply"
expect_contains "$ktrain_lines" " GET /api/v1/namespaces/default/pods/h2demo-h2-0-" "nginx: a log request"
server_count="$(admin GET '/_test/requests' | json 'len([r for r in d if r["userAgent"].startswith("ktrain/")])')"
expect_eq "$server_count" "$(wc -l <<<"$ktrain_lines" | tr -d ' ')" "every ktrain request reached the server once"
echo "PASS"
