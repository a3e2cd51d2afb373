#!/usr/bin/env bash
# Long runs on the local backend, through the real ktrain-launch: a stop makes
# KTRAIN_STOP_FILE before SIGTERM, so the rank saves a checkpoint and exits; resume
# starts it again with KTRAIN_CHECKPOINT_LATEST naming that checkpoint (a half-written
# one left out); the hang watchdog ends a silent rank with 74, status and logs say
# which rank hung, and a rank that only touches KTRAIN_HEARTBEAT_FILE is not hung;
# train.notify and --on-finish run a command and POST to a webhook when a run ends.
set -euo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
export HOME="$work/home"
unset KUBECONFIG KUBERNETES_SERVICE_HOST KTRAIN_LOCAL
mkdir -p "$HOME"
trap 'for r in $("$ktrain" list --local -o name 2>/dev/null); do "$ktrain" delete --local "$r" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
# wait_for SECONDS WHAT CMD...: until CMD succeeds
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || fail "no $what within ${limit}s"
    sleep 0.1
  done
}

mkdir "$work/proj" && cd "$work/proj"
# Counts steps from the checkpoint it resumes; on the stop file, saves step-N (written
# as .tmp, then renamed) and exits 0. SIGTERM only marks the stop: the file says it.
cat >work.sh <<'SH'
trap 'echo "got SIGTERM"' TERM
echo "resume from ${KTRAIN_CHECKPOINT_LATEST:-nothing}"
n=0
[ -z "${KTRAIN_CHECKPOINT_LATEST:-}" ] || n=$(cat "$KTRAIN_CHECKPOINT_LATEST")
while :; do
  n=$((n + 1))
  if [ -e "$KTRAIN_STOP_FILE" ]; then
    echo "stop file: $(cat "$KTRAIN_STOP_FILE")"
    echo "$n" >"$KTRAIN_CHECKPOINT_DIR/step-$n.tmp"
    mv "$KTRAIN_CHECKPOINT_DIR/step-$n.tmp" "$KTRAIN_CHECKPOINT_DIR/step-$n"
    echo "saved step-$n"
    exit 0
  fi
  [ "$n" != 5 ] || echo "at step 5"
  sleep 0.05
done
SH
cat >ck.yaml <<'YAML'
name: ck
image: registry.example.com/ck:1
train:
  command: [sh, work.sh]
  framework: none
  gracePeriod: 20s
  volumes: [{emptyDir: {}, mount: /ckpt, checkpoint: true}]
YAML
ckpt="$XDG_STATE_HOME/ktrain/checkpoints/ck"

echo "== stop: the stop file, then SIGTERM; the rank saves and exits"
"$ktrain" submit --local -f ck.yaml --run-id a >/dev/null
wait_for 30 "step 5" sh -c "'$ktrain' logs --local ck-a | grep -q 'at step 5'"
"$ktrain" stop --local ck-a >/dev/null
wait_for 30 "saved checkpoint" sh -c "'$ktrain' logs --local ck-a | grep -q 'saved step-'"
logs=$("$ktrain" logs --local ck-a)
grep -q "\[rank 0\] resume from nothing" <<<"$logs" || fail "first run: $logs"
grep -q "no checkpoint in $ckpt yet" <<<"$logs" || fail "the launcher says there is no checkpoint: $logs"
grep -q "\[rank 0\] stop file: stopping (SIGTERM): SIGKILL in 15s" <<<"$logs" || fail "the stop file: $logs"
grep -q "\[rank 0\] got SIGTERM" <<<"$logs" || fail "SIGTERM after the stop file: $logs"
saved=$(ls "$ckpt")
[[ $saved =~ ^step-[0-9]+$ ]] || fail "checkpoint folder: $saved"
status=$("$ktrain" status --local ck-a)
grep -qE "^Checkpoint: $ckpt/$saved \(written [0-9]+s ago\)$" <<<"$status" || fail "status: the checkpoint: $status"
[ "$("$ktrain" status --local ck-a -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["checkpoint"]["path"])')" = "$ckpt/$saved" ] ||
  fail "status -o json: the checkpoint"
ok "stop: the stop file, SIGTERM, $saved saved"

echo "== resume: KTRAIN_CHECKPOINT_LATEST is the newest finished checkpoint"
# A half-written checkpoint, newer: left out.
echo 999 >"$ckpt/step-999.tmp"
"$ktrain" resume --local ck-a >/dev/null
wait_for 30 "the resumed run's first line" sh -c "'$ktrain' logs --local ck-a | grep -q 'resume from $ckpt'"
logs=$("$ktrain" logs --local ck-a)
grep -q "\[rank 0\] resume from $ckpt/$saved\$" <<<"$logs" || fail "resumed from: $logs"
grep -q "the newest checkpoint is $ckpt/$saved (written [0-9]*s ago): KTRAIN_CHECKPOINT_LATEST" <<<"$logs" ||
  fail "the launcher says which checkpoint: $logs"
"$ktrain" delete --local ck-a >/dev/null
ok "resume: from $saved, not the .tmp one"

echo "== watchdog: a silent rank is hung (74); one that touches its heartbeat is not"
# train.watchdog.timeout is at least 1m; the launcher's variable sets seconds for a test.
cat >wd.yaml <<'YAML'
name: wd
image: registry.example.com/wd:1
train:
  command: [sh, -c, 'echo "rank $KTRAIN_RANK starts"; case $MODE in hang) exec sleep 60 ;; beat) for i in $(seq 60); do touch "$KTRAIN_HEARTBEAT_FILE"; sleep 0.1; done ;; esac']
  framework: none
  processesPerNode: 2
  watchdog: {timeout: 1m}
  env: {KTRAIN_WATCHDOG_TIMEOUT: "3", MODE: hang}
YAML
set +e
"$ktrain" submit --local -f wd.yaml --run-id a --wait >out 2>err
rc=$?
set -e
[ "$rc" = 1 ] || fail "a hung run: exit $rc, expected 1: $(cat out err)"
grep -qE "rank [01] hung: no output and no heartbeat for 3(\.[0-9])?s \(watchdog timeout 3s\)" err ||
  fail "submit --wait says which rank hung: $(cat err)"
status=$("$ktrain" status --local wd-a)
grep -q "^Why: .*rank [01] hung: no output and no heartbeat for" <<<"$status" || fail "status: $status"
grep -qE "^0 .* 74 " <<<"$status" || fail "status: exit 74: $status"
logs=$("$ktrain" logs --local wd-a)
grep -qE "watchdog: rank [01] has had no output and no heartbeat for 3(\.[0-9])?s; what it is doing:" <<<"$logs" ||
  fail "logs: the watchdog's dump: $logs"
grep -q "rank [01]: process [0-9]* state S" <<<"$logs" || fail "logs: the process's state: $logs"
ok "hung: exit 74, status and logs say which rank"
"$ktrain" submit --local -f wd.yaml --run-id b --set train.env.MODE=beat --wait >out 2>err ||
  fail "a rank that touches its heartbeat for 6s, silent: $(cat out err)"
ok "heartbeat: 6s with no output, watchdog 3s, succeeded"
echo "== notify: a command and a webhook when a waited-for run ends"
# A webhook that keeps what it is sent (one POST a file), on a free port.
cat >hook.py <<'PY'
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        n = len(os.listdir(sys.argv[1]))
        with open(os.path.join(sys.argv[1], "post%d" % n), "wb") as f:
            f.write(self.headers.get("Content-Type", "").encode() + b"\n" + body)
        self.send_response(int(sys.argv[2]))
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
mkdir posts
python3 hook.py posts 200 >port &
hook=$!
trap 'kill $hook 2>/dev/null; for r in $("$ktrain" list --local -o name 2>/dev/null); do "$ktrain" delete --local "$r" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
wait_for 10 "the webhook's port" test -s port
cat >nt.yaml <<YAML
name: nt
image: registry.example.com/nt:1
train:
  command: [sh, -c, 'echo hi; exit \$CODE']
  framework: none
  env: {CODE: "0"}
  notify:
    command: 'echo "\$KTRAIN_RUN \$KTRAIN_STATE \$KTRAIN_EXIT_CODE" >>"$work/proj/ended"; echo said'
    url: http://127.0.0.1:$(cat port)/hook
YAML
"$ktrain" submit --local -f nt.yaml --run-id a --wait -o json >out 2>err || fail "nt-a: $(cat out err)"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' out || fail "stdout is the JSON alone: $(cat out)"
grep -q '^said$' err || fail "the command's output goes to stderr: $(cat err)"
set +e
"$ktrain" submit --local -f nt.yaml --run-id b --wait --set train.env.CODE=3 >out 2>err
rc=$?
set -e
[ "$rc" = 1 ] || fail "a failed run: exit $rc: $(cat out err)"
[ "$(cat ended)" = "$(printf 'nt-a Succeeded 0\nnt-b Failed 3')" ] || fail "the command saw: $(cat ended)"
python3 - posts <<'PY' || fail "the webhook got: $(cat posts/*)"
import json, os, sys
posts = [open(os.path.join(sys.argv[1], "post%d" % i)).read().split("\n", 1) for i in range(2)]
assert all(p[0] == "application/json" for p in posts), posts
a, b = (json.loads(p[1]) for p in posts)
assert (a["run"], a["state"], a["exitCode"]) == ("nt-a", "Succeeded", 0), a
assert a["text"] == "ktrain: run nt-a succeeded", a
assert (b["run"], b["state"], b["exitCode"]) == ("nt-b", "Failed", 3), b
assert b["text"].startswith("ktrain: run nt-b Failed, exit code 3: "), b
PY
ok "train.notify: the command and the webhook, for a success and a failure"
# --on-finish instead of the project's command; one that fails is a warning, and the
# run's outcome decides the exit status. A webhook that answers 500 too.
kill $hook; wait $hook 2>/dev/null || true
python3 hook.py posts 500 >port2 &
hook=$!
wait_for 10 "the webhook's port" test -s port2
"$ktrain" submit --local -f nt.yaml --run-id c --wait --on-finish 'exit 4' \
  --set "train.notify.url=http://127.0.0.1:$(cat port2)/hook" >out 2>err || fail "nt-c: $(cat out err)"
grep -q "warning: the command for the run's end (exit 4) exited 4" err || fail "--on-finish failed: $(cat err)"
grep -q "warning: the webhook of train.notify.url answered 500" err || fail "the webhook's 500: $(cat err)"
[ "$(wc -l <ended)" = 2 ] || fail "--on-finish replaces the project's command: $(cat ended)"
ok "--on-finish: a failing command and a failing webhook are warnings; exit 0 with the run"
# status --watch --on-finish.
"$ktrain" submit --local -f nt.yaml --run-id d --set train.command='[sh, -c, "sleep 1; exit 5"]' >/dev/null
set +e
"$ktrain" status --local nt-d --watch -o json --on-finish 'echo "watched $KTRAIN_RUN $KTRAIN_EXIT_CODE" >watched' >out 2>err
rc=$?
set -e
[ "$rc" = 1 ] || fail "status --watch of a failed run: exit $rc: $(cat err)"
[ "$(cat watched)" = "watched nt-d 5" ] || fail "status --watch --on-finish: $(cat watched 2>&1) $(cat err)"
ok "status --watch --on-finish"
set +e
"$ktrain" submit --local -f nt.yaml --run-id e --on-finish true >out 2>err; rc1=$?
"$ktrain" status --local nt-a --on-finish true >out 2>err; rc2=$?
set -e
[ "$rc1$rc2" = 22 ] || fail "--on-finish without --wait / --watch: exits $rc1 $rc2"
ok "--on-finish without a wait: usage errors"
echo PASS
