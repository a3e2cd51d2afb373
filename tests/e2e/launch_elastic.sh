#!/usr/bin/env bash
# Elastic nodes (KTRAIN_ELASTIC=min:max): ktrain-launch hands the node's workers to
# torchrun's elastic agent with the arguments that make it meet the others (c10d at
# KTRAIN_MASTER_ADDR:KTRAIN_RDZV_PORT, --nnodes min:max, --no-python COMMAND), needs
# no rendezvous secret, and keeps the stop file, the heartbeat, signals and the
# termination message around it. torchrun here is a stand-in script that records its
# arguments and starts --nproc-per-node copies of the command with LOCAL_RANK, as the
# real one does (PyTorch is not installed on these machines). Bad settings are 78.
source "$(dirname "$0")/launch_lib.bash"
mkdir -p "$WORK/bin"
cat >"$WORK/bin/torchrun" <<'SH'
#!/bin/sh
printf '%s\n' "$@" >"$WORK/torchrun.args"
nproc=1
for a in "$@"; do
  case "$a" in --nproc-per-node=*) nproc=${a#--nproc-per-node=} ;; esac
done
while [ "$1" != "--no-python" ]; do shift; done
shift
pids=""
trap 'kill -TERM $pids 2>/dev/null; wait; exit 143' TERM
i=0
while [ "$i" -lt "$nproc" ]; do
  LOCAL_RANK=$i RANK=$i "$@" &
  pids="$pids $!"
  i=$((i + 1))
done
status=0
for p in $pids; do wait "$p" || status=1; done
exit $status
SH
chmod +x "$WORK/bin/torchrun"
common=(KTRAIN_ELASTIC=2:4 KTRAIN_FRAMEWORK=pytorch KTRAIN_NNODES=4 KTRAIN_NODE_RANK=1
        KTRAIN_NPROC_PER_NODE=2 KTRAIN_MASTER_ADDR=job-worker-0 KTRAIN_RDZV_PORT=29400
        KTRAIN_RUN=job KTRAIN_GRACE_PERIOD=5 KTRAIN_ELASTIC_RESTARTS=3
        WORK="$WORK" PATH="$WORK/bin:$PATH")

worker='echo "worker $LOCAL_RANK node=$KTRAIN_NODE_RANK stop=${KTRAIN_STOP_FILE:+set} heartbeat=${KTRAIN_HEARTBEAT_FILE:+set}"'
start_node ok "${common[@]}" -- sh -c "$worker"
expect_status ok 0
expected='--nnodes=2:4
--nproc-per-node=2
--rdzv-backend=c10d
--rdzv-endpoint=job-worker-0:29400
--rdzv-id=job
--max-restarts=3
--no-python
sh
-c'
[ "$(head -9 "$WORK/torchrun.args")" = "$expected" ] ||
  fail "torchrun's arguments: $(cat "$WORK/torchrun.args")"
for r in 0 1; do
  grep -q "^\[node 1\] worker $r node=1 stop=set heartbeat=set" "$WORK/ok.out" ||
    fail "worker $r's line: $(cat "$WORK/ok.out")"
done
grep -q "elastic nodes 2..4: torchrun starts 2 workers here and meets the others at job-worker-0:29400" "$WORK/ok.err" ||
  fail "the launcher says how the node starts: $(cat "$WORK/ok.err")"
pass "elastic: torchrun gets --nnodes 2:4, c10d at the first node, --no-python COMMAND; no secret needed"

start_node bad "${common[@]}" -- sh -c 'exit 3'
expect_status bad 1
expect_termlog bad "node 1 exited 1"
pass "elastic: a failed worker fails the node through torchrun's status"

start_node term "${common[@]}" -- sh -c 'echo $$ >"$WORK/w.$LOCAL_RANK"; exec sleep 300'
wait_for_file "$WORK/w.0"
wait_for_file "$WORK/w.1"
kill -TERM "$(cat "$WORK/term.pid")"
expect_status term 143
expect_termlog term "stopped by SIGTERM"
for r in 0 1; do
  ! kill -0 "$(cat "$WORK/w.$r")" 2>/dev/null || fail "worker $r outlived SIGTERM"
done
pass "elastic: SIGTERM reaches the workers through torchrun; the node ends 143"

start_node abs "${common[@]}" PATH=/usr/bin:/bin KTRAIN_TORCHRUN="$WORK/bin/torchrun" -- true
expect_status abs 0
pass "elastic: KTRAIN_TORCHRUN names the agent by its path, off PATH"

start_node nort "${common[@]}" PATH=/usr/bin:/bin -- true
expect_status nort 78
grep -q "cannot find 'torchrun' on PATH: the image needs PyTorch's torchrun" "$WORK/nort.err" ||
  fail "no torchrun: $(cat "$WORK/nort.err")"
start_node nopt "${common[@]}" KTRAIN_FRAMEWORK=jax -- true
expect_status nopt 78
grep -q "elastic nodes are torchrun's, for framework pytorch; the framework is jax" "$WORK/nopt.err" ||
  fail "elastic jax: $(cat "$WORK/nopt.err")"
start_node badrange "${common[@]}" KTRAIN_ELASTIC=4:2 -- true
expect_status badrange 78
grep -q "KTRAIN_ELASTIC: the fewest nodes (4) are more than the most (2)" "$WORK/badrange.err" ||
  fail "elastic 4:2: $(cat "$WORK/badrange.err")"
start_node norange "${common[@]}" KTRAIN_ELASTIC=8 -- true
expect_status norange 78
grep -q "KTRAIN_ELASTIC: '8' is not min:max (like 2:8)" "$WORK/norange.err" ||
  fail "elastic 8: $(cat "$WORK/norange.err")"
pass "elastic: no torchrun, another framework, a bad range, no range: 78 with what is wrong"
