#!/usr/bin/env bash
# serve --local: serve.command as a process on this machine, under a keeper as a run's
# nodes are; waited for until it answers its readiness path; listed, shown, followed and
# deleted as a run of kind serve; serving again leaves it as it is; a command that ends
# before it answers fails with its last lines, one that never answers times out (124);
# what only a cluster serves is refused; and without a cluster nothing runs here silently.
set -euo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
export HOME="$work/home"   # no ~/.kube/config
unset KUBECONFIG KUBERNETES_SERVICE_HOST KTRAIN_LOCAL
mkdir -p "$HOME"
trap '"$ktrain" delete web --local >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
expect_status() {  # expect_status WANT CMD...: runs CMD, checks its exit status
  local want=$1; shift
  set +e; "$@" >"$work/out" 2>"$work/err"; local got=$?; set -e
  [ "$got" = "$want" ] || { cat "$work/out" "$work/err"; fail "$* exited $got, expected $want"; }
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

mkdir "$work/proj" && cd "$work/proj"
cat >server.py <<'PY'
import http.server, sys, time
time.sleep(0.5)  # loading the model: the first probes find nothing listening
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200 if self.path in ("/healthz", "/predict") else 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"ok\n" if code == 200 else b"no\n")
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
project() {  # project COMMAND [MORE SERVE LINES]
  cat >ktrain.yaml <<YAML
name: web
image: registry.example.com/ml/web:1
serve:
  command: $1
  port: $port
  readiness: /healthz
${2:-}
YAML
}

# Without a cluster, serve is an error, not a process started here.
project "[python3, server.py, \"$port\"]"
expect_status 3 "$ktrain" serve
grep -q "no cluster is configured" "$work/err" || fail "serve without a cluster: $(cat "$work/err")"
[ ! -d "$XDG_STATE_HOME/ktrain/runs/web" ] || fail "serve without a cluster started a local service"

expect_status 0 "$ktrain" serve --local
grep -qx "web: serving on http://127.0.0.1:$port (pid [0-9]*)" "$work/out" || fail "serve --local printed: $(cat "$work/out")"
grep -q "Waiting for web to answer on http://127.0.0.1:$port/healthz" "$work/err" || fail "serve --local said: $(cat "$work/err")"
[ "$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/predict').read().decode().strip())")" = ok ] ||
  fail "the service does not answer"
pid1=$(sed 's/.*(pid \([0-9]*\))/\1/' "$work/out")
echo "ok: serve --local started it and waited until /healthz answered"

expect_status 0 "$ktrain" list --local
grep -q "^web  *serve  *Running  *1 " "$work/out" || fail "list: $(cat "$work/out")"
expect_status 0 "$ktrain" status web -o json
[ "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["kind"], d["state"], len(d["ranks"]))' "$work/out")" = "serve Running 1" ] ||
  fail "status: $(cat "$work/out")"
expect_status 0 "$ktrain" logs web
grep -q '"GET /healthz HTTP/1.1" 200' "$work/out" || fail "logs: no probe line: $(cat "$work/out")"
echo "ok: list, status and logs show the service"

expect_status 0 "$ktrain" serve --local
grep -qx "web: serving on http://127.0.0.1:$port (pid $pid1)" "$work/out" || fail "serving again replaced it: $(cat "$work/out")"
# With image.build never built, a local service runs all the same (KTRAIN_LOCAL=1 as
# --local): it uses no image; a cluster's serve would refuse it.
cp ktrain.yaml web.yaml
sed -i 's|^image: .*|image:\n  build:\n    base: docker.io/library/python:3.12-slim\n    repository: registry.example.com/ml/web|' ktrain.yaml
KTRAIN_LOCAL=1 expect_status 0 "$ktrain" serve
grep -qx "web: serving on http://127.0.0.1:$port (pid $pid1)" "$work/out" || fail "KTRAIN_LOCAL=1 serve of a project never built: $(cat "$work/out" "$work/err")"
mv web.yaml ktrain.yaml
echo "ok: a local service of a project with image.build, never built"
expect_status 2 "$ktrain" scale web --replicas 2 --local
grep -q "a local service is one process" "$work/err" || fail "scale --local: $(cat "$work/err")"
expect_status 0 "$ktrain" version --local
grep -q "^server local: " "$work/out" || fail "version --local: $(cat "$work/out")"
expect_status 0 "$ktrain" delete web
python3 -c "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1', $port)) else 1)" ||
  fail "the service still listens after delete"
echo "ok: serving again leaves it running; scale refused; delete stops it"

# A command that ends before it answers: exit 1 with its last lines.
project '[sh, -c, "echo cannot load the model >&2; exit 4"]'
expect_status 1 "$ktrain" serve --local
grep -q "serving web: serve.command ended (Failed: rank 0 exited 4) before it answered" "$work/err" || fail "ended: $(cat "$work/err")"
grep -q "cannot load the model" "$work/err" || fail "ended: no last lines: $(cat "$work/err")"
# Serving again starts it anew (the one that ended is replaced), and it never answers.
project '[sleep, "60"]'
expect_status 124 "$ktrain" serve --local --timeout 2s
grep -q "timed out after 2s waiting for the rollout (Waiting for web to answer on http://127.0.0.1:$port/healthz)" "$work/err" ||
  fail "timeout: $(cat "$work/err")"
expect_status 0 "$ktrain" delete web
echo "ok: a command that ends is explained; one that never answers times out"

# What only a cluster can serve.
project "[python3, server.py, \"$port\"]" '  target: kserve'
expect_status 2 "$ktrain" serve --local
grep -q "serve.target kserve: its operator serves it on a cluster" "$work/err" || fail "kserve --local: $(cat "$work/err")"
project "[python3, server.py, \"$port\"]"
expect_status 2 "$ktrain" serve --local --dry-run=server
[ ! -d "$XDG_STATE_HOME/ktrain/runs/web" ] || fail "a refused serve left a service"
echo "local serve: all checks passed"
