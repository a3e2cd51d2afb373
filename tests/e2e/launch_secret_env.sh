#!/usr/bin/env bash
# The rendezvous secret stays with the launcher: a worker finds it neither in its
# own environment nor in the launcher's (/proc/<launcher>/environ), on one node or
# on several.
source "$(dirname "$0")/launch_lib.bash"
SECRET="rdzv-secret-$RANDOM$RANDOM$RANDOM"
show='tr "\0" "\n" </proc/$PPID/environ | sed "s/^/launcher: /"; env | sed "s/^/worker: /"'
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
        KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET="$SECRET" KTRAIN_NPROC_PER_NODE=2
        KTRAIN_RDZV_TIMEOUT=60 KTRAIN_TEST_MARK=visible)
start_node node0 "${common[@]}" KTRAIN_NODE_RANK=0 -- sh -c "$show"
start_node node1 "${common[@]}" KTRAIN_NODE_RANK=1 -- sh -c "$show"
start_node single KTRAIN_RDZV_SECRET="$SECRET" KTRAIN_TEST_MARK=visible -- sh -c "$show"
expect_status node0 0
expect_status node1 0
expect_status single 0
for f in node0 node1 single; do
  grep -q "^\[rank [0-9]\] launcher: KTRAIN_TEST_MARK=visible$" "$WORK/$f.out" ||
    { cat "$WORK/$f.out" >&2; fail "$f: the worker could not read the launcher's environment"; }
  grep -q "^\[rank [0-9]\] worker: KTRAIN_TEST_MARK=visible$" "$WORK/$f.out" ||
    fail "$f: the worker lost the variables it should inherit"
done
grep -q "^\[rank 3\] worker: KTRAIN_RANK=3$" "$WORK/node1.out" || fail "no rank 3 on node 1"
if grep -n -e "$SECRET" -e KTRAIN_RDZV_SECRET "$WORK"/node0.out "$WORK"/node1.out "$WORK"/single.out; then
  fail "the rendezvous secret reached a worker"
fi
pass "workers see neither KTRAIN_RDZV_SECRET nor its value, in their environment or the launcher's"
