#!/usr/bin/env bash
# The local backend, verb by verb: submit --wait/--follow (success, failure, timeout),
# list, status (table and json), logs (--rank, --node, --tail, --timestamps), delete
# of a running run, delete --all of a sweep, and the usage errors.
set -euo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
export HOME="$work/home"   # no ~/.kube/config
unset KUBECONFIG KUBERNETES_SERVICE_HOST KTRAIN_LOCAL
mkdir -p "$HOME"
trap 'for r in $("$ktrain" list -o name 2>/dev/null); do "$ktrain" delete "$r" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
expect_status() {  # expect_status WANT CMD...: runs CMD, checks its exit status
  local want=$1; shift
  set +e; "$@" >"$work/out" 2>"$work/err"; local got=$?; set -e
  [ "$got" = "$want" ] || { cat "$work/out" "$work/err"; fail "$* exited $got, expected $want"; }
}

mkdir "$work/proj" && cd "$work/proj"
cat >work.py <<'PY'
import os, sys, time
rank = int(os.environ["RANK"])
mode = os.environ.get("MODE", "ok")
for i in range(3):
    print(f"line {i} of rank {rank} world {os.environ['WORLD_SIZE']}", flush=True)
if mode == "fail" and rank == 3:
    print("rank 3 gives up", flush=True)
    sys.exit(3)
if mode == "sleep":
    time.sleep(600)
if mode == "burst":  # 300 lines at once when the file $GO appears, then quiet
    while not os.path.exists(os.environ["GO"]):
        time.sleep(0.01)
    for i in range(300):
        print(f"burst {i} of rank {rank}", flush=True)
    time.sleep(600)
if mode == "tick":
    for i in range(40):
        print(f"tick {i} of rank {rank}", flush=True)
        time.sleep(0.02)
PY
cat >ktrain.yaml <<'YAML'
name: job
image: registry.example.com/job:1.0
train:
  command: [python3, work.py]
  nodes: 2
  processesPerNode: 2
YAML

# No cluster and no --local: exit 3, a message that names --local, nothing
# started here (--dry-run=server too), for every cluster verb.
for args in "submit --wait" "submit --dry-run=server" "list" "status job-x" "logs job-x" "delete job-x"; do
  # shellcheck disable=SC2086
  expect_status 3 "$ktrain" $args
  grep -q 'no cluster is configured .*pass --local (or set KTRAIN_LOCAL=1) to use this machine' "$work/err" ||
    fail "$args without a cluster: $(cat "$work/err")"
done
[ -z "$(ls -A "$XDG_STATE_HOME/ktrain/runs" 2>/dev/null)" ] ||
  fail "a cluster verb without a cluster left local state: $(ls -R "$XDG_STATE_HOME")"
echo "ok: no cluster configured: exit 3 naming --local, nothing started"
# From here on the local backend is asked for explicitly.
export KTRAIN_LOCAL=1

# Success: --wait exits 0; the run name is the only thing on stdout.
expect_status 0 "$ktrain" submit --wait --run-id ok1
[ "$(cat "$work/out")" = "job-ok1" ] || fail "submit printed: $(cat "$work/out")"
grep -q "run job-ok1 succeeded" "$work/err" || fail "no success line: $(cat "$work/err")"

# A project with image.build that was never built runs here all the same: a local run
# uses no image (a cluster submit would refuse it: its pods would pull :latest).
cat >built.yaml <<'YAML'
name: built
image:
  build:
    base: docker.io/library/python:3.12-slim
    repository: registry.example.com/team/built
train:
  command: [python3, work.py]
  nodes: 1
  processesPerNode: 1
YAML
expect_status 0 "$ktrain" submit -f built.yaml --wait --run-id b1
expect_status 0 "$ktrain" delete built-b1
echo "ok: a project with image.build, never built, runs locally"

# logs: every rank's lines, each prefixed with its rank, none lost or doubled.
expect_status 0 "$ktrain" logs job-ok1
for r in 0 1 2 3; do
  for i in 0 1 2; do
    n=$(grep -cx "\[rank $r\] line $i of rank $r world 4" "$work/out" || true)
    [ "$n" = 1 ] || fail "rank $r line $i printed $n times: $(cat "$work/out")"
  done
done
expect_status 0 "$ktrain" logs job-ok1 --rank 2
[ "$(grep -c '^\[rank 2\] line' "$work/out")" = 3 ] || fail "--rank 2: $(cat "$work/out")"
! grep -q '^\[rank [013]\]' "$work/out" || fail "--rank 2 printed other ranks: $(cat "$work/out")"
expect_status 0 "$ktrain" logs job-ok1 --node 1 --tail 1
[ "$(wc -l <"$work/out")" = 1 ] || fail "--tail 1 printed: $(cat "$work/out")"
expect_status 0 "$ktrain" logs job-ok1 --rank 0 --timestamps
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z \[rank 0\] line 0' "$work/out" || fail "--timestamps: $(cat "$work/out")"

# status: table and json.
expect_status 0 "$ktrain" status job-ok1
grep -q '^State: *Succeeded' "$work/out" || fail "status: $(cat "$work/out")"
grep -Eq '^1 +node-1 +Succeeded' "$work/out" || fail "status rows: $(cat "$work/out")"
expect_status 0 "$ktrain" status job-ok1 -o json
python3 -c '
import json,sys
s=json.load(open(sys.argv[1]))
assert s["name"]=="job-ok1" and s["state"]=="Succeeded" and s["nodes"]==2, s
assert [r["exitCode"] for r in s["ranks"]]==[0,0], s
' "$work/out" || fail "status -o json: $(cat "$work/out")"

# Failure: --follow prints the logs, exits 1, and names the rank that failed first
# with the last lines of its log.
expect_status 1 "$ktrain" submit --follow --run-id bad1 --set train.env.MODE=fail
grep -q "^\[rank 3\] rank 3 gives up" "$work/out" || fail "follow output: $(cat "$work/out")"
grep -q "run job-bad1 failed: node 1 failed first" "$work/err" || fail "failure summary: $(cat "$work/err")"
grep -q "rank 3 exited 3" "$work/err" || fail "failure cause: $(cat "$work/err")"
grep -q "^  \[rank 3\] rank 3 gives up" "$work/err" || fail "failure log tail: $(cat "$work/err")"
expect_status 0 "$ktrain" status job-bad1 -o json
python3 -c '
import json,sys
s=json.load(open(sys.argv[1]))
assert s["state"]=="Failed" and s["firstFailedRank"]==1, s
' "$work/out" || fail "failed status json: $(cat "$work/out")"

# Timeout: 124, and the run goes on until deleted.
expect_status 124 "$ktrain" submit --wait --timeout 2s --run-id slow1 --set train.env.MODE=sleep
grep -q "timed out after" "$work/err" || fail "timeout message: $(cat "$work/err")"
expect_status 0 "$ktrain" list
grep -Eq '^job-slow1 +train +Running +2 +0 ' "$work/out" || fail "list: $(cat "$work/out")"
grep -Eq '^job-ok1 +train +Succeeded' "$work/out" || fail "list: $(cat "$work/out")"
expect_status 0 "$ktrain" delete job-slow1
[ "$(cat "$work/out")" = "deleted job-slow1" ] || fail "delete printed: $(cat "$work/out")"
left=$(cd / && for p in /proc/[0-9]*; do
  [ "${p#/proc/}" != $$ ] && [ "$(readlink "$p/cwd" 2>/dev/null)" = "$work/proj" ] && echo "${p#/proc/}"
done || true)
[ -z "$left" ] || fail "processes of the deleted run are still alive: $left"
expect_status 1 "$ktrain" status job-slow1
grep -q 'run "job-slow1" not found' "$work/err" || fail "status of a deleted run: $(cat "$work/err")"

# A sweep: delete --all removes every run of it, and nothing else.
cat >sweep.yaml <<'YAML'
name: sw
image: registry.example.com/job:1.0
train:
  command: [python3, -c, "print('point {x}')"]
  sweep:
    x: [1, 2, 3]
YAML
expect_status 0 "$ktrain" submit -f sweep.yaml --wait --run-id a
[ "$(cat "$work/out" | tr '\n' ' ')" = "sw-a-0 sw-a-1 sw-a-2 " ] || fail "sweep submit printed: $(cat "$work/out")"

# list filters: --sweep, -l (the labels a cluster run's Job has, and the project's),
# --state; and list -w.
names() { tr '\n' ' ' <"$work/out"; }
expect_status 0 "$ktrain" list --sweep sw-a -o name
[ "$(names | tr ' ' '\n' | sort | tr '\n' ' ')" = "sw-a-0 sw-a-1 sw-a-2 " ] || fail "list --sweep: $(names)"
expect_status 0 "$ktrain" list -l 'ktrain.dev/sweep=sw-a,ktrain.dev/run notin (sw-a-1)' -o name
[ "$(names | tr ' ' '\n' | sort | tr '\n' ' ')" = "sw-a-0 sw-a-2 " ] || fail "list -l: $(names)"
expect_status 0 "$ktrain" submit -f sweep.yaml --wait --run-id b --set labels.team=vision --set 'train.sweep.x=[1]'
expect_status 0 "$ktrain" list -l team=vision -o name
[ "$(names)" = "sw-b-0 " ] || fail "list -l team=vision: $(names)"
expect_status 0 "$ktrain" list -l '!team' --sweep sw-b -o name
[ "$(names)" = "" ] || fail "list -l '!team' --sweep sw-b: $(names)"
expect_status 0 "$ktrain" list --state failed -o name
[ "$(names)" = "job-bad1 " ] || fail "list --state failed: $(names)"
expect_status 0 "$ktrain" list --state Succeeded,failed -o name
grep -qx job-bad1 "$work/out" && grep -qx sw-a-0 "$work/out" || fail "list --state succeeded,failed: $(names)"
expect_status 0 "$ktrain" list --state running
grep -q "No runs found" "$work/err" || fail "list --state running with none: $(cat "$work/out" "$work/err")"
expect_status 2 "$ktrain" list --state done
grep -q -- "--state done: expected pending, running, succeeded, failed or stopped" "$work/err" || fail "list --state done: $(cat "$work/err")"
expect_status 2 "$ktrain" list -l 'team in vision'
grep -q -- "-l team in vision: at 9: expected \`(\` after in/notin" "$work/err" || fail "list -l bad: $(cat "$work/err")"
# -w: a line per change (-o json); a run that starts shows up, and goes when deleted.
"$ktrain" list -w -o json --state running >"$work/watch" 2>&1 &
watch_pid=$!
waitfor() {  # waitfor WHAT CMD...: up to 20 s
  local what=$1; shift
  for _ in $(seq 100); do "$@" && return 0; sleep 0.2; done
  fail "timed out waiting for $what: $(cat "$work/watch")"
}
waitfor "the first list" grep -q '^{"runs":\[\]}$' "$work/watch"
expect_status 0 "$ktrain" submit --run-id w1 --set train.env.MODE=sleep
waitfor "job-w1 in the list" grep -q '"name":"job-w1"' "$work/watch"
expect_status 0 "$ktrain" delete job-w1
waitfor "job-w1 to go" sh -c "tail -n 1 '$work/watch' | grep -qx '{\"runs\":\[\]}'"
kill "$watch_pid"; wait "$watch_pid" 2>/dev/null || true
[ "$(wc -l <"$work/watch")" -ge 3 ] || fail "list -w: $(cat "$work/watch")"
echo "ok: list --sweep, -l, --state, -w"

# stop keeps the run (status, logs) and ends its processes; resume starts them again.
state_of() { "$ktrain" status "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
expect_status 0 "$ktrain" submit --run-id st --set train.env.MODE=sleep
# Every rank has printed before the stop (ranks start at their own pace).
waitfor "job-st to print" sh -c "[ \"\$('$ktrain' logs job-st | grep -c 'line 2 of rank')\" = 4 ]"
expect_status 0 "$ktrain" stop job-st
[ "$(cat "$work/out")" = "stopped job-st" ] || fail "stop printed: $(cat "$work/out")"
[ "$(state_of job-st)" = Stopped ] || fail "status after stop: $(state_of job-st)"
pids=$(python3 -c 'import json,sys; print(" ".join(str(n["pid"]) for n in json.load(open(sys.argv[1]))["nodeStatus"]))' "$XDG_STATE_HOME/ktrain/runs/job-st/run.json")
for p in $pids; do ! kill -0 "$p" 2>/dev/null || fail "stop left node process $p running"; done
expect_status 0 "$ktrain" status job-st
grep -q "^Why:        stopped by 'ktrain stop'" "$work/out" || fail "status of a stopped run: $(cat "$work/out")"
grep -Eq '^0 +node-0 +Stopped ' "$work/out" || fail "status rows of a stopped run: $(cat "$work/out")"
expect_status 0 "$ktrain" list --state stopped -o name
[ "$(names)" = "job-st " ] || fail "list --state stopped: $(names)"
expect_status 0 "$ktrain" stop job-st
[ "$(cat "$work/out")" = "job-st is stopped already" ] || fail "stop again printed: $(cat "$work/out")"
expect_status 0 "$ktrain" logs job-st --rank 0
[ "$(grep -c 'line 0 of rank 0' "$work/out")" = 1 ] || fail "logs of the stopped run: $(cat "$work/out")"
expect_status 0 "$ktrain" resume job-st
[ "$(cat "$work/out")" = "resumed job-st" ] || fail "resume printed: $(cat "$work/out")"
waitfor "job-st to run again" sh -c "[ \"\$('$ktrain' logs job-st --rank 0 | grep -c 'line 2 of rank 0')\" = 2 ]"
[ "$(state_of job-st)" = Running ] || fail "status after resume: $(state_of job-st)"
expect_status 0 "$ktrain" resume job-st
[ "$(cat "$work/out")" = "job-st is not stopped" ] || fail "resume of a running run: $(cat "$work/out")"
expect_status 1 "$ktrain" stop job-ok1
grep -q 'run "job-ok1" has ended (Succeeded): nothing to stop' "$work/err" || fail "stop of an ended run: $(cat "$work/err")"
expect_status 1 "$ktrain" resume job-bad1
grep -q "has ended (Failed): nothing to resume; 'ktrain submit' starts a new run" "$work/err" || fail "resume of an ended run: $(cat "$work/err")"
expect_status 1 "$ktrain" stop nosuch
expect_status 0 "$ktrain" delete job-st
echo "ok: stop, resume"

# Ctrl-C during logs -f and submit --follow: what the nodes wrote before it is
# printed, each line once (lines are held a quarter of a second to put the nodes in
# order), and ktrain exits 130 by itself rather than being killed by the signal.
# ctrl_c_after_burst RUN OUT ERR -- CMD...: runs CMD; once RUN's nodes log, lets its
# ranks write their burst (MODE=burst, GO=$work/go-RUN); the moment every burst is in
# the nodes' logs, sends SIGINT and expects exit 130.
ctrl_c_after_burst() {
  local run=$1 out=$2 err=$3
  shift 4
  python3 - "$XDG_STATE_HOME/ktrain/runs/$run" "$work/go-$run" "$out" "$err" "$@" <<'PY'
import glob, signal, subprocess, sys, time
run_dir, go, out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
p = subprocess.Popen(cmd, stdout=open(out, "w"), stderr=open(err, "w"))
deadline = time.time() + 20
def wait_for(what, done, pause):
    while not done():
        if time.time() > deadline:
            sys.exit(what)
        time.sleep(pause)
def catches_sigint():  # ktrain has its SIGINT handler (however slowly it started)
    try:
        with open("/proc/%d/status" % p.pid) as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)) != 0
    except OSError:
        pass
    return False
wait_for("the run did not start", lambda: glob.glob(run_dir + "/node-*.log"), 0.05)
wait_for("ktrain never took SIGINT", catches_sigint, 0.01)
time.sleep(0.5)  # attached to the logs
open(go, "w").close()
wait_for("the ranks did not write their burst",
         lambda: sum(open(f, errors="replace").read().count(" burst 299 of rank")
                     for f in glob.glob(run_dir + "/node-*.log")) == 4, 0.005)
p.send_signal(signal.SIGINT)
rc = p.wait(timeout=10)
if rc != 130:
    sys.exit("%s after SIGINT: %s (expected exit 130), stderr: %s" % (" ".join(cmd[1:3]), rc, open(err).read()))
PY
}
check_burst() {  # check_burst FILE: every rank's 300 burst lines, each once
  local r i n
  for r in 0 1 2 3; do
    for i in 0 150 299; do
      n=$(grep -cx "\[rank $r\] burst $i of rank $r" "$1" || true)
      [ "$n" = 1 ] || fail "after Ctrl-C, rank $r burst line $i printed $n times: $(tail -n 5 "$1")"
    done
    n=$(grep -c "^\[rank $r\] burst " "$1" || true)
    [ "$n" = 300 ] || fail "after Ctrl-C, rank $r printed $n of its 300 burst lines"
  done
}
burst=(--set train.env.MODE=burst)
expect_status 0 "$ktrain" submit --run-id int "${burst[@]}" --set "train.env.GO=$work/go-job-int"
ctrl_c_after_burst job-int "$work/int.out" "$work/int.err" -- "$ktrain" logs -f job-int ||
  fail "Ctrl-C during logs -f"
check_burst "$work/int.out"
expect_status 0 "$ktrain" delete job-int
echo "ok: Ctrl-C during logs -f prints what was written, exits 130"
# submit --follow: the same, and the run goes on.
ctrl_c_after_burst job-int2 "$work/int2.out" "$work/int2.err" -- \
  "$ktrain" submit --follow --run-id int2 "${burst[@]}" --set "train.env.GO=$work/go-job-int2" ||
  fail "Ctrl-C during submit --follow"
check_burst "$work/int2.out"
grep -q "^ktrain: stopped following; run job-int2 goes on ('ktrain delete job-int2' ends it)$" "$work/int2.err" ||
  fail "submit --follow after Ctrl-C said: $(cat "$work/int2.err")"
[ "$(state_of job-int2)" = Running ] || fail "the run after Ctrl-C of its submit --follow: $(state_of job-int2)"
expect_status 0 "$ktrain" delete job-int2
echo "ok: Ctrl-C during submit --follow prints what was written, exits 130, the run goes on"

# Checkpoints: the volume marked checkpoint is KTRAIN_CHECKPOINT_DIR (here a folder per
# project in the state folder); stop sends SIGTERM and gives train.gracePeriod to save;
# resume starts from what was saved.
mkdir "$work/ck" && cd "$work/ck"
cat >ck.py <<'PY'
import os, signal, sys, time
d = os.environ["KTRAIN_CHECKPOINT_DIR"]
rank = os.environ["RANK"]
path = os.path.join(d, "rank" + rank)
step = int(open(path).read()) if os.path.exists(path) else 0
print(f"rank {rank} starts at step {step} in {d}", flush=True)
def save(*_):
    time.sleep(float(os.environ.get("SAVE_SECONDS", "1")))  # a slow save
    with open(path + ".tmp", "w") as f:
        f.write(str(step))
    os.replace(path + ".tmp", path)
    print(f"rank {rank} saved step {step}", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
while True:
    step += 1
    time.sleep(0.01)
PY
cat >ktrain.yaml <<'YAML'
name: ck
image: registry.example.com/job:1.0
train:
  command: [python3, ck.py]
  gracePeriod: 8s
  env: {SAVE_SECONDS: "3"}
  volumes:
    - {claim: ckpt, mount: /ckpt, checkpoint: true}
YAML
expect_status 0 "$ktrain" submit --run-id a
waitfor "ck-a to start" sh -c "'$ktrain' logs ck-a | grep -q 'starts at step 0 in $XDG_STATE_HOME/ktrain/checkpoints/ck'"
sleep 0.5
expect_status 0 "$ktrain" stop ck-a
expect_status 0 "$ktrain" logs ck-a
grep -Eq '^\[rank 0\] rank 0 saved step [1-9][0-9]*$' "$work/out" || fail "no checkpoint saved within the grace period: $(cat "$work/out")"
saved=$(cat "$XDG_STATE_HOME/ktrain/checkpoints/ck/rank0")
[ "$saved" -gt 0 ] || fail "checkpoint: $saved"
expect_status 0 "$ktrain" resume ck-a
waitfor "ck-a to resume" sh -c "'$ktrain' logs ck-a | grep -q 'starts at step $saved in'"
expect_status 0 "$ktrain" delete ck-a  # SIGTERM too: it saves again
saved=$(cat "$XDG_STATE_HOME/ktrain/checkpoints/ck/rank0")
# A grace period too short for the save: killed, the checkpoint is not written.
expect_status 0 "$ktrain" submit --run-id b --set train.gracePeriod=2s
waitfor "ck-b to start" sh -c "'$ktrain' logs ck-b | grep -q 'starts at step'"
expect_status 0 "$ktrain" stop ck-b
expect_status 0 "$ktrain" logs ck-b
! grep -q 'saved step' "$work/out" || fail "a save longer than the grace period completed: $(cat "$work/out")"
grep -q "ktrain-launch: " "$work/out" || fail "no launcher lines: $(cat "$work/out")"
[ "$(cat "$XDG_STATE_HOME/ktrain/checkpoints/ck/rank0")" = "$saved" ] || fail "the killed save changed the checkpoint"
expect_status 0 "$ktrain" delete ck-b
cd "$work/proj"
echo "ok: checkpoints: KTRAIN_CHECKPOINT_DIR, saved within train.gracePeriod on stop, resumed from"

# sweep.parallel: at most N runs at once, the others wait and are started as runs end;
# status SWEEP sums the sweep up; list keeps a sweep's runs together.
mkdir "$work/par" && cd "$work/par"
cat >par.py <<'PY'
import os, sys, time
x = int(sys.argv[1])
with open(os.environ["SPANS"], "a") as f:
    f.write(f"{x} start {time.time()}\n")
time.sleep(1)
with open(os.environ["SPANS"], "a") as f:
    f.write(f"{x} end {time.time()}\n")
sys.exit(3 if x == 2 else 0)
PY
cat >ktrain.yaml <<YAML
name: par
image: registry.example.com/job:1.0
train:
  command: [python3, par.py, "{x}"]
  env: {SPANS: "$work/par/spans"}
  sweep:
    x: [0, 1, 2, 3, 4]
    parallel: 2
YAML
expect_status 1 "$ktrain" submit --run-id a --wait
cp "$work/err" "$work/submit-err"
grep -q "3 runs of par-a wait for a place (train.sweep.parallel: 2)" "$work/err" || fail "submit: no word of the waiting runs: $(cat "$work/err")"
grep -q "ktrain: started par-a-4 (0 still wait; at most 2 at once)" "$work/err" || fail "submit: the last run not started: $(cat "$work/err")"
python3 - "$work/par/spans" <<'PY' || fail "sweep.parallel: $(cat "$work/par/spans")"
import sys
ev = []
for line in open(sys.argv[1]):
    x, what, t = line.split()
    ev.append((float(t), 1 if what == "start" else -1, x))
assert sorted(x for _, d, x in ev if d == 1) == ["0", "1", "2", "3", "4"], ev
now = peak = 0
for _, d, _ in sorted(ev):
    now += d
    peak = max(peak, now)
assert peak <= 2, f"{peak} runs at once"
PY
expect_status 0 "$ktrain" status par-a
grep -q "^Runs:       5 (4 Succeeded, 1 Failed)$" "$work/out" || fail "status SWEEP: $(cat "$work/out") -- submit said: $(cat "$work/submit-err")"
grep -Eq "^par-a-2  2  Failed     [0-9]+s +3$" "$work/out" || fail "status SWEEP row: $(cat "$work/out")"
expect_status 0 "$ktrain" status par-a -o json
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sweep"] == "par-a" and d["counts"] == {"Succeeded": 4, "Failed": 1}, d
r = d["runs"][2]
assert r["name"] == "par-a-2" and r["params"] == {"x": "2"} and r["exitCode"] == 3, r
assert all(x["durationSeconds"] >= 1 for x in d["runs"]), d
' "$work/out" || fail "status SWEEP -o json: $(cat "$work/out")"
expect_status 0 "$ktrain" list -o name
[ "$(grep '^par-a-' "$work/out" | tr '\n' ' ')" = "par-a-0 par-a-1 par-a-2 par-a-3 par-a-4 " ] || fail "list: the sweep's runs not together in order: $(names)"
# Interrupted, the rest wait (Waiting in list), and resume --all starts them.
"$ktrain" submit --run-id b --set train.sweep.parallel=1 >"$work/submit-b.out" 2>&1 &
submit_pid=$!
# Interrupted once every run is recorded (it prints their names then) and one runs.
waitfor "par-b-4 to be recorded" grep -qx par-b-4 "$work/submit-b.out"
waitfor "par-b-0 to start" sh -c "'$ktrain' list --state running -o name | grep -qx par-b-0"
kill "$submit_pid"; wait "$submit_pid" 2>/dev/null || true
expect_status 0 "$ktrain" list --sweep par-b
grep -Eq '^par-b-4 +train +Waiting ' "$work/out" || fail "list: a waiting run: $(cat "$work/out")"
expect_status 0 "$ktrain" status par-b-3
grep -q "waits for a place in its sweep" "$work/out" || fail "status of a waiting run: $(cat "$work/out")"
expect_status 0 "$ktrain" resume --all par-b
waitfor "every run of par-b to end" sh -c "[ \"\$('$ktrain' list --sweep par-b --state succeeded,failed -o name | wc -l)\" = 5 ]"
expect_status 0 "$ktrain" delete --all par-a par-b
cd "$work/proj"
echo "ok: sweep.parallel, status SWEEP, list groups a sweep"

# The lines of different nodes in time order: --timestamps sorts the whole log, and
# following orders them within a window (the local follow reads node by node).
expect_status 0 "$ktrain" submit --run-id tk --set train.env.MODE=tick --wait
expect_status 0 "$ktrain" logs job-tk --timestamps
awk '{print $1}' "$work/out" | LC_ALL=C sort -c || fail "logs --timestamps: not in time order: $(head -n 20 "$work/out")"
[ "$(grep -c ' tick ' "$work/out")" = 160 ] || fail "logs --timestamps: $(grep -c ' tick ' "$work/out") tick lines"
# Interleaved: the ticks of the two nodes alternate (node 0 runs ranks 0-1, node 1 ranks 2-3).
[ "$(grep ' tick ' "$work/out" | head -n 40 | grep -c '\[rank [23]\]')" -ge 10 ] || fail "logs --timestamps: nodes not interleaved"
expect_status 0 "$ktrain" submit --run-id tf --set train.env.MODE=tick
expect_status 0 "$ktrain" logs -f --timestamps job-tf
awk '{print $1}' "$work/out" | LC_ALL=C sort -c || fail "logs -f --timestamps: not in time order: $(head -n 40 "$work/out")"
[ "$(grep -c ' tick ' "$work/out")" = 160 ] || fail "logs -f: $(grep -c ' tick ' "$work/out") tick lines"
expect_status 0 "$ktrain" delete job-tk job-tf
echo "ok: logs in time order across nodes (--timestamps, -f)"
expect_status 0 "$ktrain" delete --all sw-b
expect_status 0 "$ktrain" delete --all sw-a
[ "$(cat "$work/out" | tr '\n' ' ')" = "deleted sw-a-0 deleted sw-a-1 deleted sw-a-2 " ] || fail "delete --all printed: $(cat "$work/out")"
expect_status 0 "$ktrain" list -o name
! grep -q '^sw-' "$work/out" || fail "delete --all left runs: $(cat "$work/out")"
grep -qx 'job-ok1' "$work/out" || fail "delete --all removed another run: $(cat "$work/out")"
expect_status 1 "$ktrain" delete --all sw-a
grep -q 'no run of a sweep named "sw-a"' "$work/err" || fail "delete --all of no sweep: $(cat "$work/err")"
expect_status 1 "$ktrain" delete --all job-ok1
expect_status 0 "$ktrain" status job-ok1

# Usage errors: exit 2, nothing on stdout.
expect_status 2 "$ktrain" submit --run-id 'Bad_ID'
[ ! -s "$work/out" ] || fail "usage error printed on stdout"
expect_status 2 "$ktrain" submit --timeout 5m
expect_status 2 "$ktrain" logs job-ok1 --rank 9
grep -q "has ranks 0..3" "$work/err" || fail "--rank 9: $(cat "$work/err")"
expect_status 2 "$ktrain" submit --wait --set train.nodes=0
[ -z "$(ls "$XDG_STATE_HOME/ktrain/runs" | grep -v -e ok1 -e bad1)" ] || fail "an invalid submit left a run behind"
echo "local backend: all checks passed"
