#!/usr/bin/env bash
# `ktrain logs -f`, `submit --follow` and `status --watch` against the test API
# server: ranks that start at different times, more than 50 log streams cut at
# random bytes (inside lines too), a rank that restarts, a pod deleted while
# followed, a job that fails on one rank, and watches that are cut and expire
# (410 Gone). Every check reads the complete output line by line: nothing lost,
# nothing printed twice, every line under the right rank, in order.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
work="$(mktemp -d /tmp/ktrain-follow.XXXXXX)"

cat >"$work/script.yaml" <<'YAML'
nodes: 4
bookmarkInterval: 0.3
pods:
  # cuts: 4 ranks starting 0.4 s apart, 1500 lines each at 150 lines/s.
  - {match: {job: "cuts-*", index: 0}, scheduleDelay: 0.0, lineCount: 1500, lineRate: 150, linePattern: "[rank {index}] line {i}"}
  - {match: {job: "cuts-*", index: 1}, scheduleDelay: 0.4, lineCount: 1500, lineRate: 150, linePattern: "[rank {index}] line {i}"}
  - {match: {job: "cuts-*", index: 2}, scheduleDelay: 0.8, lineCount: 1500, lineRate: 150, linePattern: "[rank {index}] line {i}"}
  - {match: {job: "cuts-*", index: 3}, scheduleDelay: 1.2, lineCount: 1500, lineRate: 150, linePattern: "[rank {index}] line {i}"}
  # restart: rank 1 fails on its first attempt, succeeds on the second.
  - {match: {job: "restart-*", index: 1, attempt: 1}, lineCount: 30, lineRate: 100, linePattern: "[rank {index}] first {i}", exitCode: 3}
  - {match: {job: "restart-*"}, lineCount: 20, lineRate: 100, linePattern: "[rank {index}] attempt {attempt} line {i}"}
  # fails: rank 2 exits 2 after 40 lines; the others run until they are stopped.
  - {match: {job: "fails-*", index: 2}, lineCount: 40, lineRate: 200, linePattern: "[rank {index}] step {i}", exitCode: 2, startDelay: 0.3}
  - {match: {job: "fails-*"}, lineCount: 1, linePattern: "[rank {index}] waiting {i}", hold: true}
  # deleted: rank 0 writes 5 lines and waits; the test deletes its pod.
  - {match: {job: "deleted-*"}, lineCount: 5, linePattern: "[rank {index}] held {i}", hold: true}
  # interrupted: 200 lines at once, then quiet; the test stops the follower.
  - {match: {job: "interrupted-*"}, lineCount: 200, lineRate: 100000, linePattern: "[rank {index}] burst {i}", hold: true}
  # asked: 2 ranks, 60 lines in 6 s, followed while the pod watch is late.
  - {match: {job: "asked-*"}, lineCount: 60, lineRate: 10, linePattern: "[rank {index}] asked {i}"}
  # watched: slow to schedule and start, so that status --watch sees every phase.
  - {match: {job: "watched-*"}, scheduleDelay: 0.5, startDelay: 0.5, hold: true}
YAML
start_apiserver "$work/script.yaml"
trap 'stop_apiserver; rm -rf "$work"' EXIT

# project NAME NODES RESTARTS: a project file for the run.
project() {
  cat >"$work/$1.yaml" <<YAML
name: $1
image:
  ref: registry.example.com/ktrain/follow:1
train:
  command: [python3, train.py]
  nodes: $2
  gpus: 0
  preflight: "off"
  restarts: $3
YAML
}

# check_ranks FILE RANKS LINES FORMAT: every rank's lines, exactly once, in order.
check_ranks() {
  python3 - "$@" <<'PY'
import sys
path, ranks, count, fmt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
got = {r: [] for r in range(ranks)}
other = []
for line in open(path, encoding="utf-8").read().split("\n")[:-1]:
    if line.startswith("[rank "):
        r = int(line[6:line.index("]")])
        got.setdefault(r, []).append(line)
    else:
        other.append(line)
bad = False
for r in range(ranks):
    want = [fmt.format(rank=r, i=i) for i in range(1, count + 1)]
    if got[r] != want:
        lost = sorted(set(want) - set(got[r]), key=want.index)
        dup = len(got[r]) - len(set(got[r]))
        print(f"rank {r}: {len(got[r])} lines, {len(lost)} lost (first {lost[:3]}), {dup} duplicated", file=sys.stderr)
        bad = True
if other:
    print(f"unexpected lines: {other[:5]}", file=sys.stderr)
    bad = True
sys.exit(1 if bad else 0)
PY
}

# --- 1. More than 50 cuts, ranks starting at different times --------------------
admin POST /_test/faults '{"method": "GET", "path": "/api/v1/namespaces/*/pods/*/log", "query": "follow=true", "dropAfterBytes": [1, 15000], "count": 60}' >/dev/null
project cuts 4 0
run="$("$ktrain" submit -f "$work/cuts.yaml" --run-id a1)"
[ -n "$run" ] || fail "submit printed no job"
"$ktrain" logs -f "$run" >"$work/cuts.out" 2>"$work/cuts.err" || fail "logs -f failed: $(cat "$work/cuts.err")"
cuts="$(admin GET '/_test/requests?path=/api/v1/namespaces/*/pods/*/log' | json 'sum(1 for r in d if "fault" in r)')"
[ "$cuts" -ge 50 ] || fail "only $cuts log streams were cut (want >= 50)"
echo "ok: $cuts log streams cut"
check_ranks "$work/cuts.out" 4 1500 "[rank {rank}] line {i}" || fail "logs -f across $cuts cuts"
echo "ok: 4 ranks x 1500 lines, each exactly once and in order, across $cuts cuts"
admin DELETE /_test/faults >/dev/null

# The same run's logs again, not followed: the same lines.
"$ktrain" logs "$run" >"$work/cuts-again.out"
check_ranks "$work/cuts-again.out" 4 1500 "[rank {rank}] line {i}" || fail "logs after the run"
echo "ok: logs (not followed) of the finished run"

# --- 1b. A 401 on log streams: fresh credentials from an exec plugin, once -------
# The finished run's streams again, two of them answered 401 at first. With a fixed
# token there is nothing to renew: the follow ends with the 401. With an exec plugin,
# ktrain runs it again and opens those streams once more.
log401='{"method": "GET", "path": "/api/v1/namespaces/*/pods/*/log", "query": "follow=true", "status": 401, "count": 2}'
admin POST /_test/faults "$log401" >/dev/null
set +e
"$ktrain" logs -f "$run" >"$work/401.out" 2>"$work/401.err"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "logs -f with a 401 and a fixed token exited 0"
expect_contains "$(cat "$work/401.err")" "Unauthorized" "a 401 with a fixed token: the message"
admin DELETE /_test/faults >/dev/null
token=$(awk '$1 == "token:" {print $2; exit}' "$KUBECONFIG")
cat >"$work/plugin.sh" <<SH
#!/bin/sh
echo run >>"$work/plugin.runs"
printf '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "%s"}}\n' "$token"
SH
chmod +x "$work/plugin.sh"
sed -e '/^users:/,/^- name: cert-user/{s|^    token: .*|    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: '"$work"'/plugin.sh\n      interactiveMode: Never|}' \
  "$KUBECONFIG" >"$work/exec.kubeconfig"
admin POST /_test/faults "$log401" >/dev/null
admin DELETE /_test/requests >/dev/null
KUBECONFIG="$work/exec.kubeconfig" "$ktrain" logs -f "$run" >"$work/401.out" 2>"$work/401.err" ||
  fail "logs -f with a 401 and an exec plugin: $(cat "$work/401.err")"
check_ranks "$work/401.out" 4 1500 "[rank {rank}] line {i}" || fail "logs -f after a 401"
runs=$(wc -l <"$work/plugin.runs")
[ "$runs" -ge 2 ] || fail "the exec plugin ran $runs times (want a second run after the 401)"
got401=$(admin GET '/_test/requests?path=/api/v1/namespaces/*/pods/*/log' | json 'sum(1 for r in d if r["status"] == 401)')
expect_eq "$got401" 2 "two streams answered 401"
echo "ok: 401 on two streams: the plugin ran again ($runs runs), every line once"
admin DELETE /_test/faults >/dev/null

# --- 1c. Streams that end while the pod watch is late ----------------------------
# The pods run when the follow starts (the list says so); the pod watch's answer comes
# 9 s late, after the pods have ended. Each stream ends without the watch saying why,
# so ktrain reads its pod, sees the container terminated, and ends with every line.
project asked 2 0
run="$("$ktrain" submit -f "$work/asked.yaml" --run-id e1)"
for _ in $(seq 1 100); do
  running=$("$ktrain" status "$run" -o json | json 'sum(1 for r in d["ranks"] if r["phase"] == "Running")')
  [ "$running" = 2 ] && break
  sleep 0.1
done
expect_eq "$running" 2 "both ranks of the run running before the follow"
sleep 0.3  # their containers too
admin POST /_test/faults '{"method": "GET", "path": "/api/v1/namespaces/*/pods", "query": "watch=1", "latencyMs": 9000, "count": 1}' >/dev/null
admin DELETE /_test/requests >/dev/null
"$ktrain" logs -f "$run" >"$work/asked.out" 2>"$work/asked.err" ||
  fail "logs -f with the pod watch late: $(cat "$work/asked.err")"
check_ranks "$work/asked.out" 2 60 "[rank {rank}] asked {i}" || fail "logs -f with the pod watch late"
asked=$(admin GET '/_test/requests?path=/api/v1/namespaces/default/pods/asked-*&method=GET' |
  json 'len([r for r in d if not r["path"].endswith("/log")])')
[ "$asked" -ge 2 ] || fail "the pods of ended streams were read $asked times (want each read)"
echo "ok: streams that ended before the late pod watch: pods read ($asked), every line once"
admin DELETE /_test/faults >/dev/null

# --- 2. A rank restarts: both attempts, and the notice --------------------------
project restart 2 2
set +e
"$ktrain" submit -f "$work/restart.yaml" --run-id b1 --follow >"$work/restart.out" 2>"$work/restart.err"
rc=$?
set -e
expect_eq "$rc" 0 "submit --follow of a run whose rank 1 restarted"
python3 - "$work/restart.out" <<'PY' || fail "restart output: $(cat "$work/restart.out")"
import sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
assert lines[0] == "restart-b1", lines[:1]  # the run name, then the logs
lines = lines[1:]
r0 = [l for l in lines if l.startswith("[rank 0]")]
r1 = [l for l in lines if l.startswith("[rank 1]")]
assert r0 == [f"[rank 0] attempt 1 line {i}" for i in range(1, 21)], r0
want = [f"[rank 1] first {i}" for i in range(1, 31)] + [f"[rank 1] attempt 2 line {i}" for i in range(1, 21)]
assert r1 == want, r1
assert len(lines) == len(r0) + len(r1), lines
PY
echo "ok: rank 1's first attempt and its replacement, in order"
expect_contains "$(cat "$work/restart.err")" "node 1 restarted, attempt 2 (pod restart-b1-1-" "restart notice"

# --- 3. A job that fails on one rank ---------------------------------------------
project fails 4 0
set +e
"$ktrain" submit -f "$work/fails.yaml" --run-id c1 --follow --timeout 60s >"$work/fails.out" 2>"$work/fails.err"
rc=$?
set -e
expect_eq "$rc" 1 "submit --follow of a failing job exits 1"
python3 - "$work/fails.out" <<'PY' || fail "fails output: $(cat "$work/fails.out")"
import sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
r2 = [l for l in lines if l.startswith("[rank 2]")]
assert r2 == [f"[rank 2] step {i}" for i in range(1, 41)], r2
for r in (0, 1, 3):
    assert [l for l in lines if l.startswith(f"[rank {r}]")] == [f"[rank {r}] waiting 1"], (r, lines)
PY
echo "ok: every rank's lines of the failed job"
tail_err="$(tail -n 25 "$work/fails.err")"
expect_contains "$tail_err" "exit code 2" "failure summary names the exit code"
expect_contains "$tail_err" "step 40" "failure summary shows the last lines"
expect_contains "$tail_err" "step 21" "failure summary shows 20 lines"
case "$tail_err" in *"step 20"$'\n'*) fail "failure summary shows more than 20 lines" ;; esac
echo "ok: failure summary"

# --- 4. A pod deleted while followed ---------------------------------------------
project deleted 1 0
run="$("$ktrain" submit -f "$work/deleted.yaml" --run-id d1)"
"$ktrain" logs -f "$run" >"$work/deleted.out" 2>"$work/deleted.err" &
follower=$!
for _ in $(seq 1 100); do
  [ "$(wc -l <"$work/deleted.out")" -ge 5 ] && break
  sleep 0.1
done
pod="$(api_curl "/api/v1/namespaces/default/pods?labelSelector=ktrain.dev/run=$run" | json 'd["items"][0]["metadata"]["name"]')"
api_curl -X DELETE "/api/v1/namespaces/default/pods/$pod" >/dev/null
set +e
wait "$follower"
rc=$?
set -e
expect_eq "$rc" 0 "logs -f ends when the job fails after its pod was deleted"
check_ranks "$work/deleted.out" 1 5 "[rank {rank}] held {i}" || fail "lines of the deleted pod"
expect_contains "$(cat "$work/deleted.err")" "pod $pod was deleted; its log ends here" "deleted-pod notice"

# --- 4b. SIGTERM (as Ctrl-C) ends a follow with every line received printed --------
# ktrain exits 143 itself (a process killed by the signal reads -15 here).
project interrupted 2 0
run="$("$ktrain" submit -f "$work/interrupted.yaml" --run-id i1)"
python3 - "$ktrain" "$run" "$work/interrupted.out" <<'PY' || fail "SIGTERM during logs -f"
import signal, subprocess, sys, time
ktrain, run, out = sys.argv[1:4]
p = subprocess.Popen([ktrain, "logs", "-f", run], stdout=open(out, "w"), stderr=subprocess.PIPE)
deadline = time.time() + 20
while sum(1 for _ in open(out)) < 400:
    if time.time() > deadline:
        sys.exit("the follower did not print the 400 lines")
    time.sleep(0.05)
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=10)
if rc != 143:
    sys.exit("logs -f after SIGTERM: %s (expected exit 143), stderr: %s" % (rc, p.stderr.read().decode()))
PY
check_ranks "$work/interrupted.out" 2 200 "[rank {rank}] burst {i}" || fail "lines of the interrupted follow"
echo "ok: SIGTERM ends logs -f with exit 143, every line printed once"

# --- 5. status --watch: every change once, through cut and expired watches -------
# The watches are cut at random points while the pods start; once they run, they
# are cut again and reconnect only after the pods finished and the server forgot
# its history (compact): resuming from the old version gets 410 Gone, so the run
# is listed again.
admin POST /_test/faults '{"method": "GET", "path": "/api*/namespaces/*/*", "query": "watch=1", "dropAfterLines": [1, 3], "count": 6}' >/dev/null
project watched 2 0
run="$("$ktrain" submit -f "$work/watched.yaml" --run-id e1)"
"$ktrain" status "$run" --watch -o json >"$work/watch.out" 2>"$work/watch.err" &
watcher=$!
for _ in $(seq 1 100); do
  grep -q '"phase":"Running","node":"[^"]*","restarts":0,"exitCode":null,"reason":"","message":""},{"index":1,"pod":"[^"]*","phase":"Running"' "$work/watch.out" && break
  sleep 0.1
done
relists() {  # lists of the run's pods or Job
  admin GET '/_test/requests' | json 'sum(1 for r in d if r["verb"] == "list" and "watched-e1" in r["query"] and "events" not in r["path"])'
}
lists_before="$(relists)"
# Cut the watches and hold their reconnections back while the pods finish and the
# server forgets its history: they resume from a version that is gone.
admin PUT /_test/faults '{"method": "GET", "path": "/api*/namespaces/*/*", "query": "watch=1", "latencyMs": 1500, "count": 2}' >/dev/null
admin POST /_test/cut >/dev/null
sleep 0.2
admin POST /_test/release '{"job": "watched-*"}' >/dev/null
sleep 0.5
admin POST /_test/compact >/dev/null
set +e
wait "$watcher"
rc=$?
set -e
expect_eq "$rc" 0 "status --watch exits 0 when the run succeeds"
python3 - "$work/watch.out" <<'PY' || fail "status --watch output: $(cat "$work/watch.out")"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
assert len(docs) >= 3, len(docs)
for a, b in zip(docs, docs[1:]):
    strip = lambda d: {k: v for k, v in d.items() if k != "age"}
    assert strip(a) != strip(b), ("the same status twice", a)
assert docs[0]["state"] in ("Pending", "Running"), docs[0]
assert docs[-1]["state"] == "Succeeded", docs[-1]
assert any(all(r["phase"] == "Running" for r in d["ranks"]) and len(d["ranks"]) == 2 for d in docs)
PY
echo "ok: status --watch printed $(wc -l <"$work/watch.out") distinct states, ending Succeeded"
lists_after="$(relists)"
[ "$lists_after" -gt "$lists_before" ] ||
  fail "no relist after the watch history was compacted ($lists_before lists before, $lists_after after): $(admin GET '/_test/requests' | json '[(r["time"][11:23], r["verb"], r["path"], r["query"][:60], r.get("fault")) for r in d if r["verb"] in ("list", "watch") and "events" not in r["path"]][-12:]')"
echo "ok: the run was listed again after a watch resumed from a forgotten version"
admin DELETE /_test/faults >/dev/null

# --- 6. status --watch of a run that does not exist ------------------------------
set +e
out="$("$ktrain" status nope --watch 2>&1)"
rc=$?
set -e
expect_eq "$rc" 1 "status --watch of an unknown run"
expect_contains "$out" 'run "nope" not found' "unknown run message"
echo "PASS"
