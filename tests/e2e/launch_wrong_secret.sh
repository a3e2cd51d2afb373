#!/usr/bin/env bash
# A node with the wrong secret is refused (76); it does not join the world.
source "$(dirname "$0")/launch_lib.bash"
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT" KTRAIN_NPROC_PER_NODE=1)
start_node node0 "${common[@]}" KTRAIN_NODE_RANK=0 KTRAIN_RDZV_SECRET=right KTRAIN_RDZV_TIMEOUT=4 \
  -- echo node0-ran
start_node intruder "${common[@]}" KTRAIN_NODE_RANK=1 KTRAIN_RDZV_SECRET=wrong \
  KTRAIN_RDZV_TIMEOUT=60 -- echo intruder-ran
expect_status intruder 76
grep -q "secret" "$WORK/intruder.err" || { cat "$WORK/intruder.err"; fail "no word of the secret"; }
expect_status node0 76
expect_termlog node0 "node 1 never arrived"
! grep -q "ran" "$WORK/node0.out" "$WORK/intruder.out" || fail "a worker ran"
pass "wrong secret refused with 76, no worker started"
