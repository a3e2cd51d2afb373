#!/usr/bin/env bash
# A rendezvous timeout names the ranks that never arrived (76), and the nodes that
# did arrive are told and stop with 76 too.
source "$(dirname "$0")/launch_lib.bash"
PORT=$(free_port)
common=(KTRAIN_NNODES=4 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
        KTRAIN_RDZV_SECRET=s KTRAIN_NPROC_PER_NODE=1)
start_node node0 "${common[@]}" KTRAIN_NODE_RANK=0 KTRAIN_RDZV_TIMEOUT=3 -- true
start_node node2 "${common[@]}" KTRAIN_NODE_RANK=2 KTRAIN_RDZV_TIMEOUT=60 -- true
expect_status node0 76
expect_status node2 76
grep -q "nodes 1 and 3 never arrived (2 of 4 joined)" "$WORK/node0.err" ||
  { cat "$WORK/node0.err"; fail "node 0 does not name the missing nodes"; }
expect_termlog node0 "nodes 1 and 3 never arrived"
expect_termlog node2 "node 0 gave up the rendezvous"
pass "timeout names nodes 1 and 3; both launchers exit 76"

# A node that never finds node 0 gives up with 76 too, saying why.
start_node lonely KTRAIN_NNODES=2 KTRAIN_NODE_RANK=1 KTRAIN_MASTER_ADDR=127.0.0.1 \
  KTRAIN_RDZV_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s KTRAIN_RDZV_TIMEOUT=1 -- true
expect_status lonely 76
expect_termlog lonely "Connection refused"
pass "a node without node 0 exits 76 after the timeout"
