#!/usr/bin/env bash
# ktrain dev against the test API server, whose pods run real processes: the dev pod
# made from the project (one node, --gpus, the idle loop as its command, the dev
# label), `list` showing it as dev, found again by a second `ktrain dev`, --shell (the
# exit status, the pod's env), --jupyter with a stand-in `jupyter` on the pod's PATH
# (its URL and token through the forwarded port, found running by a second --jupyter,
# an image without jupyter), --stop (the pod's processes go with it), a pod that does
# not get scheduled (--timeout, exit 124), a run of that name that is not a dev pod,
# forbidden, no cluster, and usage errors. The idle loop itself runs as a real
# process in PID and mount namespaces of its own: it ends after the idle timeout, and
# not while another process runs in its namespaces.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac
launcher="$KTRAIN_BUILD/ktrain-launch"
case "$launcher" in /*) ;; *) launcher="$PWD/$launcher" ;; esac

work="$(mktemp -d /tmp/ktrain-dev.XXXXXX)"
marker="ktrain-dev-test-$$"
cleanup() {
  [ -n "${jp_pid:-}" ] && kill "$jp_pid" 2>/dev/null || true
  stop_apiserver
  pkill -f "$marker" 2>/dev/null || true
  rm -rf "$work"
}
# A stand-in for JupyterLab on the dev pod's PATH: it takes jupyter lab's flags, says
# where it listens as jupyter does, and answers /lab with the right token only.
mkdir -p "$work/bin"
cat >"$work/bin/jupyter" <<PY
#!/usr/bin/env python3
# $marker
import http.server, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[2:] if a.startswith("--") and "=" in a)
port, token = int(args["port"]), args["ServerApp.token"]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/lab?token=" + token
        self.send_response(200 if ok else 403)
        self.end_headers()
        self.wfile.write(b"lab ok\n" if ok else b"bad token\n")
    def log_message(self, *a):
        pass
s = http.server.HTTPServer((args["ip"], port), H)
print("Jupyter Server is running at: http://127.0.0.1:%d/lab?token=%s" % (port, token), flush=True)
s.serve_forever()
PY
chmod +x "$work/bin/jupyter"
cat >"$work/script.yaml" <<YAML
nodes: 2
pods:
  - match: {job: "stuck-*"}
    unschedulable: true
  - match: {job: "*"}
    hold: true
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1 LC_ALL=C
cd "$work"
mkdir -p tmp-web tmp-plain

cat >ktrain.yaml <<YAML
name: web
image: registry.example.com/ml/web:1.0.0
train:
  command: [python3, train.py]
  framework: pytorch
  nodes: 4
  gpus: 8
  shm: 8Gi
  env:
    PATH: "$work/bin:/usr/local/bin:/usr/bin:/bin"
    DATA: /data/set
    # The test API server's pods share this machine's files: each its own /tmp.
    TMPDIR: "$work/tmp-web"
  preflight: quick
YAML

# --- the idle loop, as a real process ------------------------------------------------------
k_ok "dev --dry-run" dev --dry-run=client -o json --idle-timeout 3s
printf '%s' "$out" | json '[o for o in d["items"] if o["kind"]=="Job"][0]["spec"]["template"]["spec"]["containers"][0]["command"]' >idle.json
expect_eq "$(json 'd[0] + " " + d[-2] + " " + d[-1]' <idle.json)" "/bin/sh 3 1" \
  "the idle loop: sh, the idle timeout and how often it looks"
if unshare -fpm --mount-proc true 2>/dev/null; then
  idle() { python3 -c 'import json,os,sys; c=json.load(open("idle.json")); os.execvp("unshare", ["unshare", "-fpm", "--mount-proc"] + c)'; }
  start=$(date +%s%N)
  idle >idle.log
  took=$((($(date +%s%N) - start) / 1000000))
  [ "$took" -ge 2900 ] && [ "$took" -lt 6000 ] || fail "the idle loop with nothing else ran ${took} ms (3 s idle timeout)"
  expect_contains "$(cat idle.log)" "nothing else ran in it for 3s (idle timeout 3s): ending" \
    "the idle loop ends after the idle timeout, and says so"
  start=$(date +%s%N)
  idle >idle.log &
  idle_pid=$!
  for i in $(seq 1 100); do
    pid="$(pgrep -f -n "^/bin/sh -c idle=.* ktrain-dev 3 1$" || true)"
    [ -n "$pid" ] && break
    sleep 0.05
  done
  [ -n "$pid" ] || fail "the idle loop did not start"
  sleep 1
  # A command in its namespaces, as an exec'd shell is in a pod's container.
  nsenter -t "$pid" -m -p sleep 4
  busy_end=$((($(date +%s%N) - start) / 1000000))
  wait "$idle_pid"
  took=$((($(date +%s%N) - start) / 1000000))
  [ "$took" -ge $((busy_end + 2000)) ] ||
    fail "the idle loop ended ${took} ms in, while a command ran until ${busy_end} ms"
  echo "ok: the idle loop waits while another process runs in its namespaces (ended ${took} ms in, the command at ${busy_end} ms)"
  # Processes of other namespaces (the host's) do not keep it: only a mount namespace here.
  start=$(date +%s%N)
  python3 -c 'import json,os; c=json.load(open("idle.json")); os.execvp("unshare", ["unshare", "-m"] + c)' >idle.log
  took=$((($(date +%s%N) - start) / 1000000))
  [ "$took" -lt 6000 ] || fail "the idle loop beside the host's processes ran ${took} ms (3 s idle timeout)"
  echo "ok: the host's processes do not count ($took ms)"
  out="$(timeout 5 python3 -c 'import json,os; c=json.load(open("idle.json")); c[-2]="0"; os.execvp("unshare", ["unshare", "-fpm", "--mount-proc"] + c)' || echo "still running")"
  expect_contains "$out" "runs until deleted" "--idle-timeout 0: says it never ends by itself"
  expect_contains "$out" "still running" "--idle-timeout 0: it does not end"
else
  echo "namespaces cannot be made here: the idle loop's own checks are skipped"
fi

# --- start, list, find again ----------------------------------------------------------------
k dev --gpus 2 --idle-timeout 45m
expect_eq "$rc" "0" "dev: exit 0 once the pod runs ($err)"
expect_eq "$out" "web-dev" "dev prints the run name"
expect_contains "$err" "created the dev pod web-dev in namespace default" "dev says what it made"
expect_contains "$err" "it ends after 45m with nothing running in it" "dev says when it ends"
expect_contains "$err" "ktrain dev --shell" "dev says how to get in"
job="$(api_curl /apis/batch/v1/namespaces/default/jobs/web-dev)"
expect_eq "$(json 'd["spec"]["parallelism"], d["spec"]["completions"]' <<<"$job")" "(1, 1)" \
  "the dev Job has one node"
expect_eq "$(json 'd["metadata"]["labels"]["ktrain.dev/dev"]' <<<"$job")" "true" "the dev label"
c0='d["spec"]["template"]["spec"]["containers"][0]'
expect_eq "$(json "$c0[\"resources\"][\"limits\"][\"nvidia.com/gpu\"]" <<<"$job")" "2" "--gpus 2"
expect_eq "$(json "$c0[\"command\"][-2:]" <<<"$job")" '["2700", "30"]' "--idle-timeout 45m"
expect_eq "$(json "[e.get(\"value\") for e in $c0[\"env\"] if e[\"name\"]==\"KTRAIN_PREFLIGHT\"][0]" <<<"$job")" \
  "off" "no GPU check before a dev pod"
expect_contains "$(json "[m[\"mountPath\"] for m in $c0[\"volumeMounts\"]]" <<<"$job")" "/dev/shm" \
  "the project's shm"
pod="$("$ktrain" status web-dev -o json | json 'd["ranks"][0]["pod"]')"

k_ok "list" list
expect_contains "$(grep web-dev <<<"$out")" "dev    Running" "list shows the dev pod as such"
k_ok "list -o json" list -o json
expect_eq "$(json '[r["kind"] for r in d["runs"] if r["name"]=="web-dev"][0]' <<<"$out")" "dev" \
  "list -o json: kind dev"

k dev
expect_eq "$rc:$out" "0:web-dev" "dev again: the same pod"
expect_contains "$err" "using the dev pod web-dev started" "dev again: finds the running one"
expect_eq "$("$ktrain" status web-dev -o json | json 'd["ranks"][0]["pod"]')" "$pod" \
  "dev again: no new pod"
sed -e 's|web:1.0.0|web:2.0.0|' ktrain.yaml >v2.yaml
k dev -f v2.yaml
expect_contains "$err" "the dev pod runs registry.example.com/ml/web:1.0.0; the project now says registry.example.com/ml/web:2.0.0" \
  "dev with a changed image: says the pod runs the old one"
k_ok "dev -o json" dev -o json
expect_eq "$(json 'd["run"], d["pod"], d["created"]' <<<"$out")" "('web-dev', '$pod', False)" \
  "dev -o json"

# --- --shell ----------------------------------------------------------------------------------
set +e
out="$(printf 'echo "in $KTRAIN_RUN with $DATA"\nexit 3\n' | "$ktrain" dev --shell 2>shell.err)"
rc=$?
set -e
expect_eq "$rc" "3" "dev --shell: the shell's exit status"
expect_eq "$out" "in web-dev with /data/set" "dev --shell: a shell in the pod, with the project's env"
if command -v script >/dev/null 2>&1; then
  out="$(printf 'echo $((6 * 7)); exit\n' | script -qec "$ktrain dev --shell" /dev/null | tr -d '\r')"
  expect_contains "$out" "42" "dev --shell on a terminal"
fi

# ktrain-launch in the dev pod starts a one-node run's workers from the pod's env (no
# GPUs on this machine: the check of the 2 GPUs is left out, 2 workers asked for).
k exec web-dev -- env KTRAIN_GPUS=0 KTRAIN_NPROC_PER_NODE=2 "$launcher" -- \
  sh -c 'echo "$KTRAIN_RUN rank $RANK of $WORLD_SIZE"'
expect_eq "$rc" "0" "ktrain-launch in the dev pod: exit 0 ($err)"
expect_eq "$(sort <<<"$out")" "$(printf '[rank 0] web-dev rank 0 of 2\n[rank 1] web-dev rank 1 of 2')" \
  "ktrain-launch in the dev pod: the workers of a one-node run"

# --- --jupyter --------------------------------------------------------------------------------
"$ktrain" dev --jupyter --port 0 >jp.out 2>jp.err &
jp_pid=$!
for i in $(seq 1 200); do grep -q Forwarding jp.out 2>/dev/null && break; sleep 0.05; done
url="$(sed -n 's/^JupyterLab: //p' jp.out)"
[ -n "$url" ] || fail "dev --jupyter printed no URL: $(cat jp.out jp.err)"
expect_contains "$url" "http://127.0.0.1:" "dev --jupyter: the local URL"
token="${url##*token=}"
expect_eq "${#token}" "48" "dev --jupyter: a token of 48 hex digits"
expect_eq "$(curl -sS -m 10 "$url")" "lab ok" "dev --jupyter: JupyterLab answers through the forwarded port"
expect_eq "$(curl -sS -m 10 "${url%token=*}token=wrong")" "bad token" \
  "dev --jupyter: the token is JupyterLab's"
kill -TERM "$jp_pid"
set +e
wait "$jp_pid"
rc=$?
set -e
jp_pid=""
expect_eq "$rc" "0" "dev --jupyter: SIGTERM (as Ctrl-C) ends the forwarding, exit 0"
pgrep -f "$work/bin/jupyter" >/dev/null || fail "JupyterLab stopped with the forwarding"
echo "ok: JupyterLab goes on in the pod"
"$ktrain" dev --jupyter --port 0 >jp.out 2>jp.err &
jp_pid=$!
for i in $(seq 1 200); do grep -q Forwarding jp.out 2>/dev/null && break; sleep 0.05; done
expect_contains "$(cat jp.err)" "JupyterLab runs already in the pod" "dev --jupyter again: finds it running"
url2="$(sed -n 's/^JupyterLab: //p' jp.out)"
expect_eq "${url2##*token=}" "$token" "dev --jupyter again: its token"
expect_eq "$(curl -sS -m 10 "$url2")" "lab ok" "dev --jupyter again: it answers"
kill -TERM "$jp_pid"
wait "$jp_pid" || true
jp_pid=""

# An image without JupyterLab.
sed -e 's/^name: web/name: plain/' -e "s|$work/bin:||" -e "s|tmp-web|tmp-plain|" ktrain.yaml >plain.yaml
k dev -f plain.yaml --jupyter --gpus 0 --timeout 60s
expect_eq "$rc" "1" "dev --jupyter without jupyter in the image: exit 1"
expect_contains "$err" "the image has no jupyter on its PATH" "dev --jupyter without jupyter: says so"
k_ok "dev --stop plain" dev -f plain.yaml --stop

# --- --stop -----------------------------------------------------------------------------------
k dev --stop
expect_eq "$rc" "0" "dev --stop: exit 0"
expect_contains "$err" "deleted the dev pod web-dev" "dev --stop: says so"
for i in $(seq 1 100); do pgrep -f "$work/bin/jupyter" >/dev/null || break; sleep 0.05; done
pgrep -f "$work/bin/jupyter" >/dev/null && fail "JupyterLab outlived the dev pod"
echo "ok: the pod's processes go with it"
k_ok "list after --stop" list -o name
case "$out" in *web-dev*) fail "list after --stop still shows web-dev: $out" ;; esac
k dev --stop
expect_eq "$rc" "1" "dev --stop with no dev pod: exit 1"
expect_contains "$err" "there is no dev pod web-dev in namespace default" "dev --stop: says there is none"

# A dev pod stopped with ktrain stop is not waited for in vain.
k_ok "dev, to stop it" dev
k_ok "stop the dev pod" stop web-dev
k dev
expect_eq "$rc" "1" "dev of a stopped dev pod: exit 1"
expect_contains "$err" "is stopped (ktrain stop): ktrain resume web-dev starts it again" \
  "dev of a stopped dev pod: says how to go on"
k_ok "dev --stop of a stopped dev pod" dev --stop

# --- bad paths --------------------------------------------------------------------------------
sed -e 's/^name: web/name: stuck/' ktrain.yaml >stuck.yaml
k dev -f stuck.yaml --timeout 1s
expect_eq "$rc" "124" "dev with a pod that is not scheduled: exit 124 after --timeout"
expect_contains "$err" "is not running after 1s" "dev --timeout: says so"
expect_contains "$err" "Unschedulable" "dev --timeout: says why"
k_ok "dev --stop stuck" dev -f stuck.yaml --stop

k_ok "submit --run-id dev" submit --run-id dev
k dev
expect_eq "$rc" "1" "dev where a run of that name is not a dev pod: exit 1"
expect_contains "$err" "that is not a dev pod" "dev beside a training run named web-dev: says so"
k dev --stop
expect_eq "$rc" "1" "dev --stop of a training run: exit 1"
k_ok "delete" delete web-dev

admin POST /_test/forbid '{"verb":"patch","resource":"jobs","user":"*"}' >/dev/null
k dev
expect_eq "$rc" "3" "dev without the right to apply Jobs: exit 3"
expect_contains "$err" "forbidden" "dev forbidden: the server's words"
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' /api/v1/namespaces/default/services/web-dev)" \
  "404" "dev forbidden: what was made before the refusal is removed"
admin DELETE /_test/forbid >/dev/null

k --kubeconfig /nonexistent dev
expect_eq "$rc" "3" "dev with a kubeconfig that is not there: exit 3"
set +e
env -u KUBECONFIG HOME="$work/nohome" "$ktrain" dev >out 2>err
rc=$?
set -e
expect_eq "$rc" "3" "dev with no cluster configured: exit 3"
expect_contains "$(cat err)" "no cluster is configured" "dev with no cluster: says so"
k dev --local
expect_eq "$rc:$(grep -c 'makes a pod on a cluster' err)" "2:1" "dev --local: usage error"
k dev --shell --stop
expect_eq "$rc" "2" "--shell with --stop: usage error"
k dev --idle-timeout soon
expect_eq "$rc" "2" "--idle-timeout soon: usage error"
expect_contains "$err" "--idle-timeout soon: expected a duration" "--idle-timeout soon: says what it takes"
k dev --port 9000
expect_eq "$rc" "2" "--port without --jupyter: usage error"
k dev --gpus -3
expect_eq "$rc" "2" "--gpus -3: usage error"
set +e
KTRAIN_LOCAL=1 "$ktrain" dev >out 2>err
rc=$?
set -e
expect_eq "$rc:$(grep -c 'makes a pod on a cluster' err)" "2:1" "dev with KTRAIN_LOCAL=1: usage error"
k dev --dry-run=maybe
expect_eq "$rc" "2" "--dry-run=maybe: usage error"
k dev --shell --dry-run
expect_eq "$rc" "2" "--shell with --dry-run: usage error"
k dev -o wide
expect_eq "$rc" "2" "-o wide: usage error"
expect_contains "$err" "dev prints name, json or yaml" "-o wide: says what dev prints"
k dev --jupyter --port 70000
expect_eq "$rc" "2" "--port 70000: usage error"
k dev --address 0.0.0.0
expect_eq "$rc" "2" "--address without --jupyter: usage error"
# A bad address is refused before anything is made.
sed -e 's/^name: web/name: addr/' ktrain.yaml >addr.yaml
k dev -f addr.yaml --jupyter --address 300.1.2.3
expect_eq "$rc" "2" "--address 300.1.2.3: usage error"
expect_contains "$err" "--address 300.1.2.3: expected an IPv4 address" "--address 300.1.2.3: says so"
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' /apis/batch/v1/namespaces/default/jobs/addr-dev)" \
  "404" "--address 300.1.2.3: no dev pod was made"
printf 'name: only-serve\nimage: registry.example.com/ml/web:1.0.0\nserve:\n  command: [python3, serve.py]\n  port: 8000\n' >serve.yaml
k dev -f serve.yaml
expect_eq "$rc" "2" "dev of a project without train: usage error"
expect_contains "$err" "ktrain dev makes its pod from the train section" "dev without train: says why"
echo "PASS"
