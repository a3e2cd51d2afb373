#!/usr/bin/env bash
# ktrain exec and port-forward against the test API server, whose pods run real
# processes (an HTTP server in each pod's own network namespace), with kubectl 1.32 as
# the peer for exec and port-forward over the same endpoints. exec: stdout, stderr and
# the exit status; stdin to its end (v5's close), 1 MiB of binary stdin back intact;
# --node and --rank; a terminal (its size, a resize, Ctrl-C) under script(1); a command
# that does not exist; a dropped connection (POST /_test/cut); forbidden; a pod that is
# not running; no such run; --local; usage errors; status's question for a checkpoint
# that the pod cannot answer, or that pods/exec forbids. port-forward: several connections at
# once to the pod's HTTP server, :REMOTE, a port nothing listens on, and the end of the
# pod ending it with a message; kubectl port-forward (SPDY in WebSocket) the same way,
# with 2 MB up to the pod as well.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac

work="$(mktemp -d /tmp/ktrain-exec.XXXXXX)"
cleanup() {
  [ -n "${pf_pid:-}" ] && kill "$pf_pid" 2>/dev/null || true
  [ -n "${kpf_pid:-}" ] && kill "$kpf_pid" 2>/dev/null || true
  # Whatever else still runs in the background (forwarders of a check that failed).
  jobs -p | xargs -r kill 2>/dev/null || true
  stop_apiserver
  rm -rf "$work"
}
# The pods' HTTP server: a port of its own per test (pods share the host's network
# where network namespaces are not allowed).
web_port=$((20000 + RANDOM % 20000))
mkdir -p "$work/site"
echo "hello from the pod" >"$work/site/index.html"
cat >"$work/script.yaml" <<YAML
nodes: 2
pods:
  - match: {job: "web-*"}
    hold: true
    process: [python3, -m, http.server, "$web_port", --bind, 127.0.0.1, --directory, "$work/site"]
  - match: {job: "stuck-*"}
    unschedulable: true
  - match: {job: "ckpt-*"}
    hold: true
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1 LC_ALL=C
cd "$work"

cat >web.yaml <<'YAML'
name: web
image: registry.example.com/ml/web:1.0.0
train:
  command: [python3, train.py]
  framework: none
  nodes: 2
  gpus: 2
  preflight: "off"
YAML
# wait_running RUN: until both nodes of RUN run (up to 10 s); $running says how many do.
wait_running() {
  for _ in $(seq 1 200); do
    running="$("$ktrain" status "$1" -o json | json 'sum(1 for r in d["ranks"] if r["phase"]=="Running")')"
    [ "$running" = 2 ] && break
    sleep 0.05
  done
}
k_ok "submit" submit -f web.yaml --run-id a
wait_running web-a
expect_eq "$running" "2" "both nodes run"
pod0="$("$ktrain" status web-a -o json | json 'd["ranks"][0]["pod"]')"
pod1="$("$ktrain" status web-a -o json | json 'd["ranks"][1]["pod"]')"

# --- exec: streams and exit status, beside kubectl -----------------------------------
cmd=(sh -c 'echo "out $JOB_COMPLETION_INDEX"; echo "err line" >&2; exit 4')
k exec web-a -- "${cmd[@]}"
expect_eq "$rc" "4" "exec: the command's exit status is ktrain's"
expect_eq "$out" "out 0" "exec: stdout of node 0"
expect_eq "$err" "err line" "exec: stderr apart"
k exec web-a --node 1 -- "${cmd[@]}"
expect_eq "$out" "out 1" "exec --node 1"
k exec web-a --rank 3 -- "${cmd[@]}"
expect_eq "$out" "out 1" "exec --rank 3 (2 ranks per node) is node 1"
k exec web-a -- true
expect_eq "$rc:$out:$err" "0::" "exec: success is 0, nothing printed"
if command -v kubectl >/dev/null 2>&1; then
  set +e
  kubectl exec "$pod0" -c train -- "${cmd[@]}" >kubectl.out 2>kubectl.err
  krc=$?
  set -e
  expect_eq "$krc" "4" "kubectl exec: the same exit status"
  expect_eq "$(cat kubectl.out)" "out 0" "kubectl exec: the same stdout"
  expect_contains "$(cat kubectl.err)" "err line" "kubectl exec: the same stderr"
  set +e
  printf 'a\nb\nc\n' | kubectl exec -i "$pod0" -c train -- wc -l >kubectl.out 2>kubectl.err
  set -e
  expect_eq "$(tr -d ' ' <kubectl.out)" "3" "kubectl exec -i: stdin to its end"
else
  echo "kubectl not installed: the peer comparison is skipped"
fi

# The client certificate of the kubeconfig's other user goes over the stream's TLS too.
k exec web-a --context cert -- echo by-certificate
expect_eq "$rc:$out" "0:by-certificate" "exec with a client certificate"
# A server that the kubeconfig's CA does not vouch for: TLS fails, and says so.
sed -e "s|$APISERVER_DIR/ca.crt|$APISERVER_DIR/other-ca.crt|" "$KUBECONFIG" >other-ca.kubeconfig
k --kubeconfig other-ca.kubeconfig exec web-a -- true
expect_eq "$rc" "3" "exec against a server of another CA: exit 3"
k exec web-a -- true
[ "$rc" = 0 ] || fail "exec after the CA check: $err"

# --- stdin ------------------------------------------------------------------------------
out="$(printf 'a\nb\nc\n' | "$ktrain" exec web-a -i -- wc -l)"
expect_eq "$(tr -d ' ' <<<"$out")" "3" "exec -i: stdin to its end (the command sees EOF)"
head -c 1048576 /dev/urandom >blob
"$ktrain" exec web-a -i -- cat <blob >blob.back
expect_eq "$(sha256sum <blob.back | cut -c1-64)" "$(sha256sum <blob | cut -c1-64)" \
  "exec -i: 1 MiB of binary stdin comes back intact"
out="$("$ktrain" exec web-a -- cat </dev/null)"
expect_eq "$out" "" "exec without -i: the command's stdin is empty"

# --- the pod's network: the command runs beside the pod's HTTP server -------------------
k exec web-a -- python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$web_port/').read().decode().strip())"
expect_eq "$out" "hello from the pod" "exec: the command reaches the pod's server on localhost"

# --- a terminal (script(1) gives ktrain one) -------------------------------------------
if command -v script >/dev/null 2>&1; then
  out="$(script -qec "stty rows 33 cols 111; $ktrain exec web-a -it -- stty size" /dev/null | tr -d '\r')"
  expect_contains "$out" "33 111" "exec -it: the remote terminal has the local size"
  # The resize comes once the remote command has read the first size (the pods' processes
  # share this file system), however long ktrain takes to start.
  started="$work/exec-started" wait_started="i=0; while [ ! -e $work/exec-started ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i + 1)); done"
  out="$(script -qec "stty rows 20 cols 80; ($ktrain exec web-a -it -- sh -c 'stty size; touch $started; sleep 1.5; stty size' </dev/tty) & $wait_started; stty rows 50 cols 132; wait" /dev/null | tr -d '\r')"
  expect_contains "$out" "20 80" "exec -it: the size at the start"
  expect_contains "$out" "50 132" "exec -it: a resize reaches the remote terminal"
  set +e
  rm -f "$started"
  out="$( (eval "$wait_started"; printf '\003') | script -qec "$ktrain exec web-a -it -- sh -c 'trap \"echo got-interrupt; exit 7\" INT; touch $started; sleep 5 & wait'" /dev/null | tr -d '\r')"
  rc=$?
  set -e
  expect_contains "$out" "got-interrupt" "exec -it: Ctrl-C goes to the remote command"
  out="$(script -qec "$ktrain exec web-a -it -- sh -c 'exit 5'; echo status=\$?" /dev/null | tr -d '\r')"
  expect_contains "$out" "status=5" "exec -it: the exit status"
  k exec web-a -it -- true </dev/null
  expect_eq "$rc" "0" "exec -it without a terminal runs without one"
  expect_contains "$err" "stdin is not a terminal" "exec -it without a terminal: a warning"
fi

# --- bad paths ----------------------------------------------------------------------------
k exec web-a -- no-such-command
expect_eq "$rc" "1" "exec of a missing command: exit 1"
expect_contains "$err" 'exec: "no-such-command": executable file not found in $PATH' \
  "exec of a missing command: the runtime's words"
k exec web-a
expect_eq "$rc" "2" "exec without a command: usage error"
expect_contains "$err" "exec needs a command after --" "exec without a command: says so"
k exec web-a -t -- true
expect_eq "$rc" "2" "exec -t without -i: usage error"
k exec web-a --node 5 -- true
expect_eq "$rc" "1" "exec --node 5 of a 2-node run: exit 1"
expect_contains "$err" "web-a has no node 5 (it has 2 nodes)" "exec --node 5: names the nodes"
k exec web-a --node 1 --rank 1 -- true
expect_eq "$rc" "2" "--node with --rank: usage error"
k exec nosuch -- true
expect_eq "$rc" "1" "exec of a run that does not exist: exit 1"
expect_contains "$err" "nosuch" "exec of a run that does not exist: names it"
k exec web-a --local -- true
expect_eq "$rc" "2" "exec --local: usage error"
expect_contains "$err" "exec works on the pods of a cluster run" "exec --local: says why"
k exec web-a -c nosuch -- true
expect_eq "$rc" "1" "exec -c nosuch: exit 1"
expect_contains "$err" "container nosuch is not valid for pod $pod0" "exec -c nosuch: the server's words"

sed -e 's/name: web/name: stuck/' web.yaml >stuck.yaml
k_ok "submit stuck" submit -f stuck.yaml --run-id a
sleep 0.3
k exec stuck-a -- true
expect_eq "$rc" "1" "exec into a pending pod: exit 1"
expect_contains "$err" "is Pending" "exec into a pending pod: says it is pending"
expect_contains "$err" "ktrain status stuck-a" "exec into a pending pod: points to status"

admin POST /_test/forbid '{"verb":"create","resource":"pods/exec","user":"*"}' >/dev/null
k exec web-a -- true
expect_eq "$rc" "3" "forbidden exec: exit 3 (not allowed, as for every verb)"
expect_contains "$err" "cannot create resource \"pods/exec\"" "forbidden exec: the server's words"
admin DELETE /_test/forbid >/dev/null

# status asks a running pod of a run with a checkpoint volume for its newest checkpoint
# (ktrain-launch --latest-checkpoint, which these pods' images lack); where it cannot,
# status still answers and says why the checkpoint is not known.
sed -e 's/name: web/name: ckpt/' \
  -e 's/^  preflight: "off"$/  preflight: "off"\n  volumes: [{emptyDir: true, mount: \/ckpt, checkpoint: true}]/' \
  web.yaml >ckpt.yaml
k_ok "submit ckpt" submit -f ckpt.yaml --run-id a
wait_running ckpt-a
expect_eq "$running" "2" "both nodes of ckpt-a run"
k status ckpt-a
expect_eq "$rc" "0" "status when the pod cannot answer: exit 0"
expect_contains "$out" "Checkpoint: not known: ktrain-launch --latest-checkpoint in node 0 (ckpt-a-0-" \
  "status: the checkpoint is not known, and why"
admin POST /_test/forbid '{"verb":"create","resource":"pods/exec","user":"*"}' >/dev/null
k status ckpt-a -o json
expect_eq "$rc" "0" "status without pods/exec: exit 0"
expect_contains "$(json 'd["checkpoint"]["note"]' <<<"$out")" "not known: cannot run a command in node 0" \
  "status -o json without pods/exec: the note says why"
expect_contains "$out" 'cannot create resource \"pods/exec\"' "status without pods/exec: the server's words"
admin DELETE /_test/forbid >/dev/null
k_ok "delete ckpt-a" delete ckpt-a

# A dropped connection: the stream ends without the exit status.
"$ktrain" exec web-a -- sh -c 'echo started; sleep 30' >cut.out 2>cut.err &
exec_pid=$!
for i in $(seq 1 100); do grep -q started cut.out 2>/dev/null && break; sleep 0.05; done
admin POST /_test/cut >/dev/null
set +e
timeout 20 tail --pid="$exec_pid" -f /dev/null
wait "$exec_pid"
rc=$?
set -e
expect_eq "$rc" "3" "a dropped exec stream: exit 3"
expect_contains "$(cat cut.err)" "ended before the command's exit status arrived" \
  "a dropped exec stream: says so"

# forwarded_port FILE [REMOTE]: waits (up to 10 s) for "Forwarding from 127.0.0.1:L ->
# REMOTE" in FILE and prints L ("" if it does not come).
forwarded_port() {
  local file=$1 remote=${2:-[0-9]*} port=""
  for _ in $(seq 1 200); do
    port="$(sed -n "s/^Forwarding from 127.0.0.1:\([0-9]*\) -> $remote\$/\1/p" "$file" 2>/dev/null | head -1)"
    [ -n "$port" ] && break
    sleep 0.05
  done
  echo "$port"
}

# --- port-forward -------------------------------------------------------------------------
# pages_through PORT WHO: 6 GETs of the pod's page at once through PORT, then its 300 kB
# file, checked.
pages_through() {
  local port=$1 who=$2 i pids=()
  for i in 1 2 3 4 5 6; do
    curl -sS -m 10 "http://127.0.0.1:$port/" >"get.$i" &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  for i in 1 2 3 4 5 6; do
    expect_eq "$(cat "get.$i")" "hello from the pod" "$who: connection $i of 6 at once"
  done
  curl -sS -m 10 "http://127.0.0.1:$port/big.bin" >big.back
  expect_eq "$(sha256sum <big.back | cut -c1-64)" "$(sha256sum <"$work/site/big.bin" | cut -c1-64)" \
    "$who: 300 kB come back intact"
}
"$ktrain" port-forward web-a ":$web_port" >pf.out 2>pf.err &
pf_pid=$!
local_port="$(forwarded_port pf.out)"
[ -n "$local_port" ] || fail "port-forward printed no port: $(cat pf.out pf.err)"
expect_contains "$(cat pf.out)" "-> $web_port" "port-forward :REMOTE: says where it forwards"
head -c 300000 /dev/urandom >"$work/site/big.bin"
pages_through "$local_port" "port-forward"

# An echo server in the pod, started by exec (what exec leaves running stays with the pod).
echo_port=$((web_port + 1))
k_ok "exec: an echo server in the background" exec web-a -- sh -c \
  "python3 -c '$(cat <<PY
import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", $echo_port))
s.listen(16)
def serve(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
PY
)' >/dev/null 2>&1 &"
for i in $(seq 1 100); do
  "$ktrain" exec web-a -- python3 -c "import socket
socket.create_connection(('127.0.0.1', $echo_port)).close()" >/dev/null 2>&1 && break
  sleep 0.1
done
head -c 2000000 /dev/urandom >up.bin
# Sends up.bin to 127.0.0.1:PORT and prints the SHA-256 of what comes back: as much as
# was sent ("count"), or all until the other side closes after this side's half-close
# ("half-close": SPDY carries it, the WebSocket protocol that ktrain speaks has none).
echo_through() {
  python3 - "$1" "$2" <<'PY'
import hashlib, socket, sys, threading, time
data = open("up.bin", "rb").read()
half_close = sys.argv[2] == "half-close"
for attempt in range(50):
    try:
        c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
        break
    except OSError:
        time.sleep(0.1)
def send():
    c.sendall(data)
    if half_close:
        c.shutdown(socket.SHUT_WR)
threading.Thread(target=send).start()
h = hashlib.sha256()
got = 0
while half_close or got < len(data):
    b = c.recv(65536)
    if not b:
        break
    got += len(b)
    h.update(b)
c.close()
print(h.hexdigest())
PY
}
# Several connections share one WebSocket (SPDY streams in it, as kubectl 1.31+), and
# a local half-close reaches the pod.
admin DELETE /_test/requests >/dev/null
"$ktrain" -v port-forward web-a ":$echo_port" >pfe.out 2>pfe.err &
pfe_pid=$!
local_echo="$(forwarded_port pfe.out)"
[ -n "$local_echo" ] || fail "port-forward to the echo server printed no port: $(cat pfe.out pfe.err)"
expect_contains "$(cat pfe.err)" "using SPDY/3.1+portforward.k8s.io" \
  "port-forward -v: says it tunnels SPDY"
up_sum="$(sha256sum <up.bin | cut -c1-64)"
got="$(echo_through "$local_echo" half-close)"
[ "$got" = "$up_sum" ] || echo "port-forward's stderr: $(grep -v '^I ' pfe.err)"
expect_eq "$got" "$up_sum" "port-forward: 2 MB up to the pod and back, then the half-close"
echo_through "$local_echo" half-close >echo.1 &
e1=$!
echo_through "$local_echo" count >echo.2 &
e2=$!
echo_through "$local_echo" half-close >echo.3
wait "$e1" "$e2"
expect_eq "$(cat echo.1 echo.2 echo.3 | sort -u)" "$up_sum" "port-forward: 3 x 2 MB at once"
# SIGTERM while a connection is open (the pod's side not done with it): it ends at once,
# exit 0, with no error for that connection.
python3 -c 'import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"x")
assert c.recv(1) == b"x"
open(sys.argv[2], "w").close()
time.sleep(30)' "$local_echo" idle.ready &
idle_pid=$!
for i in $(seq 1 200); do [ -e idle.ready ] && break; sleep 0.05; done
[ -e idle.ready ] || fail "the connection to keep open did not open"
kill "$pfe_pid"
set +e
timeout 10 tail --pid="$pfe_pid" -f /dev/null
kill -9 "$pfe_pid" 2>/dev/null
wait "$pfe_pid"
rc=$?
set -e
kill "$idle_pid" 2>/dev/null || true
expect_eq "$rc" "0" "port-forward: SIGTERM with a connection open ends it, exit 0"
expect_eq "$(grep -c 'ktrain: error' pfe.err || true)" "0" \
  "port-forward: SIGTERM with a connection open prints no error"
expect_eq "$(admin GET '/_test/requests?path=*/portforward' | json 'len(d)')" "1" \
  "port-forward: 5 connections in one WebSocket"

# A server without the SPDY tunnel (before 1.30): a WebSocket per connection in the
# kubelet's v4.channel.k8s.io, found without a word from the user.
admin POST /_test/script "$(cat "$work/script.yaml"; echo 'featureGates: {PortForwardWebsockets: false}')" >/dev/null
"$ktrain" -v port-forward web-a ":$echo_port" ":$web_port" >pfv4.out 2>pfv4.err &
pfv4_pid=$!
v4_echo="$(forwarded_port pfv4.out "$echo_port")"
v4_web="$(forwarded_port pfv4.out "$web_port")"
[ -n "$v4_echo" ] && [ -n "$v4_web" ] || fail "port-forward (v4) printed no ports: $(cat pfv4.out pfv4.err)"
expect_contains "$(cat pfv4.err)" "does not tunnel SPDY" "port-forward -v: says it falls back to v4"
expect_eq "$(echo_through "$v4_echo" count)" "$up_sum" "port-forward (v4): 2 MB up and back"
gets=()
for i in 1 2 3; do
  curl -sS -m 10 "http://127.0.0.1:$v4_web/" >"v4get.$i" &
  gets+=($!)
done
wait "${gets[@]}"
for i in 1 2 3; do
  expect_eq "$(cat "v4get.$i")" "hello from the pod" "port-forward (v4): connection $i of 3 at once"
done
kill "$pfv4_pid"
wait "$pfv4_pid" || true
admin POST /_test/script "$(cat "$work/script.yaml")" >/dev/null

# Any free local port (the one after the first may be a connection's own by now).
"$ktrain" port-forward web-a --node 1 ":1" >pf2.out 2>pf2.err &
pf2_pid=$!
local_port2="$(forwarded_port pf2.out)"
[ -n "$local_port2" ] || fail "the second port-forward printed no port: $(cat pf2.out pf2.err)"
curl -sS -m 10 "http://127.0.0.1:$local_port2/" >/dev/null 2>&1 || true
for i in $(seq 1 200); do grep -q "ktrain: error" pf2.err 2>/dev/null && break; sleep 0.05; done
expect_contains "$(cat pf2.err)" "failed to connect to localhost:1" \
  "port-forward to a port nothing listens on: the pod's side says so"
kill "$pf2_pid"
wait "$pf2_pid" || true

# kubectl 1.31+ as the peer over the same endpoint: SPDY/3.1 tunnelled in WebSocket
# (older kubectl asks for SPDY over an HTTP upgrade, which this server does not serve).
kubectl_minor="$(kubectl version --client -o json 2>/dev/null |
  json 'int("".join(c for c in d["clientVersion"]["minor"] if c.isdigit()))' 2>/dev/null || echo 0)"
if [ "$kubectl_minor" -ge 31 ]; then
  kubectl port-forward "pod/$pod0" ":$web_port" >kpf.out 2>kpf.err &
  kpf_pid=$!
  klocal="$(forwarded_port kpf.out)"
  [ -n "$klocal" ] || fail "kubectl port-forward printed no port: $(cat kpf.out kpf.err)"
  pages_through "$klocal" "kubectl port-forward"
  # 2 MB up to the pod's echo server and back over one connection, and the client's
  # half-close: it reaches the pod, whose close comes back.
  kubectl port-forward "pod/$pod0" ":$echo_port" >kpfe.out 2>kpfe.err &
  kpfe_pid=$!
  klocale="$(forwarded_port kpfe.out)"
  [ -n "$klocale" ] || fail "kubectl port-forward to the echo server printed no port: $(cat kpfe.out kpfe.err)"
  expect_eq "$(echo_through "$klocale" half-close)" "$(sha256sum <up.bin | cut -c1-64)" \
    "kubectl port-forward: 2 MB up to the pod and back, then the half-close"
  kill "$kpfe_pid"
  wait "$kpfe_pid" || true
  expect_eq "$(kill -0 "$kpf_pid" 2>/dev/null && echo running)" "running" \
    "kubectl port-forward: still forwarding after 7 connections"

  # A port nothing listens on: the pod's side says why on the error stream, and kubectl
  # 1.32 gives up on the connection.
  kubectl port-forward "pod/$pod0" ":1" >kpf2.out 2>kpf2.err &
  kpf2_pid=$!
  klocal2="$(forwarded_port kpf2.out)"
  [ -n "$klocal2" ] || fail "the second kubectl port-forward printed no port: $(cat kpf2.out kpf2.err)"
  curl -sS -m 10 "http://127.0.0.1:$klocal2/" >/dev/null 2>&1 || true
  set +e
  timeout 20 tail --pid="$kpf2_pid" -f /dev/null
  kill "$kpf2_pid" 2>/dev/null
  wait "$kpf2_pid"
  set -e
  expect_contains "$(cat kpf2.err)" "failed to connect to localhost:1" \
    "kubectl port-forward to a port nothing listens on: the pod's side says so"
else
  echo "kubectl older than 1.31 or not installed: the port-forward peer comparison is skipped"
fi

k port-forward web-a 99999
expect_eq "$rc" "2" "port-forward 99999: usage error"
expect_contains "$err" "is not a port" "port-forward 99999: says so"
k port-forward web-a
expect_eq "$rc" "2" "port-forward without ports: usage error"

k_ok "delete" delete web-a
set +e
timeout 20 tail --pid="$pf_pid" -f /dev/null
wait "$pf_pid"
rc=$?
set -e
pf_pid=""
expect_eq "$rc" "1" "port-forward ends with exit 1 when the pod goes"
expect_contains "$(cat pf.err)" "port-forward ends" "port-forward: says the pod went"
if [ -n "${kpf_pid:-}" ]; then
  set +e
  timeout 20 tail --pid="$kpf_pid" -f /dev/null
  kill "$kpf_pid" 2>/dev/null
  wait "$kpf_pid"
  rc=$?
  set -e
  kpf_pid=""
  expect_eq "$rc" "1" "kubectl port-forward ends with exit 1 when the pod goes"
  expect_contains "$(cat kpf.err)" "lost connection to pod" "kubectl port-forward: says the pod went"
fi
echo "PASS"
