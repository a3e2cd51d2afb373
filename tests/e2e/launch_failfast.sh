#!/usr/bin/env bash
# kill -9 of one worker stops every node: the failing node exits 137 (128+SIGKILL),
# the others 75; each writes its one-line cause to the termination log. A SIGTERM
# to one launcher stops the others with 75 as well.
source "$(dirname "$0")/launch_lib.bash"
PORT=$(free_port)
common=(KTRAIN_NNODES=3 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
        KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s KTRAIN_NPROC_PER_NODE=2
        KTRAIN_GRACE_PERIOD=5 KTRAIN_RDZV_TIMEOUT=120 WORK="$WORK")
worker='echo $$ > "$WORK/tmp.$KTRAIN_RANK"; mv "$WORK/tmp.$KTRAIN_RANK" "$WORK/pid.$KTRAIN_RANK"; exec sleep 300'
for n in 2 0 1; do start_node "node$n" "${common[@]}" KTRAIN_NODE_RANK=$n -- sh -c "$worker"; done
for r in 0 1 2 3 4 5; do wait_for_file "$WORK/pid.$r"; done
kill -9 "$(cat "$WORK/pid.3")"
expect_status node1 137
expect_status node0 75
expect_status node2 75
expect_termlog node1 "rank 3 killed by SIGKILL"
expect_termlog node0 "stopped because of a peer: rank 3 killed by SIGKILL"
expect_termlog node2 "stopped because of a peer: rank 3 killed by SIGKILL"
for r in 0 1 2 4 5; do
  ! kill -0 "$(cat "$WORK/pid.$r")" 2>/dev/null || fail "rank $r is still running"
done
pass "kill -9 of rank 3: node 1 exits 137, nodes 0 and 2 exit 75, no worker left"

# SIGTERM to node 1's launcher: it exits 143; node 0 hears of it and exits 75.
rm -f "$WORK"/pid.*
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
        KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s KTRAIN_NPROC_PER_NODE=1
        KTRAIN_GRACE_PERIOD=5 KTRAIN_RDZV_TIMEOUT=120 WORK="$WORK")
start_node t0 "${common[@]}" KTRAIN_NODE_RANK=0 -- sh -c "$worker"
start_node t1 "${common[@]}" KTRAIN_NODE_RANK=1 -- sh -c "$worker"
wait_for_file "$WORK/pid.0"
wait_for_file "$WORK/pid.1"
kill -TERM "$(cat "$WORK/t1.pid")"
expect_status t1 143
expect_status t0 75
expect_termlog t1 "node 1 stopped by SIGTERM"
expect_termlog t0 "stopped because of a peer: node 1 stopped by SIGTERM"
pass "SIGTERM to node 1: it exits 143, node 0 exits 75"
