#!/usr/bin/env bash
# Long runs on the local backend, through the real ktrain-launch: a stop makes
# KTRAIN_STOP_FILE before SIGTERM, so the rank saves a checkpoint and exits; resume
# starts it again with KTRAIN_CHECKPOINT_LATEST naming that checkpoint (a half-written
# one left out); the hang watchdog ends a silent rank with 74, status and logs say
# which rank hung, and a rank that only touches KTRAIN_HEARTBEAT_FILE is not hung.
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
echo PASS
