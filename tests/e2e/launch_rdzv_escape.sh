#!/usr/bin/env bash
# Text that came from the network is printed with its control characters escaped
# (\x1b, \r, ...): a hello whose node rank holds terminal escapes, a node of
# another run whose name holds them (node 0's log), and a node 0 whose 'abort'
# reason holds them (the node's log and termination log).
source "$(dirname "$0")/launch_lib.bash"
PEER="$(dirname "$0")/../fixtures/rdzv/rdzv_peer.py"
# no_control FILE: FILE holds no control character but newline and tab, and says \x1b.
no_control() {
  if LC_ALL=C grep -n $'[\x01-\x08\x0b-\x1f\x7f]' "$1" | cat -v; then
    fail "$1 holds raw control characters"
  fi
  grep -qF '\x1b' "$1" || { cat "$1"; fail "$1 does not show the escaped text"; }
}

PORT=$(free_port)
start_node node0 KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT" \
  KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s3cret KTRAIN_NODE_RANK=0 \
  KTRAIN_NPROC_PER_NODE=1 KTRAIN_RDZV_TIMEOUT=5 -- echo ran
python3 "$PEER" garbage-hello "$PORT"
python3 "$PEER" foreign-run "$PORT" s3cret
expect_status node0 76
cat "$WORK/node0.err"
grep -q "node_rank" "$WORK/node0.err" || fail "node 0 did not report the bad hello"
grep -q "evil" "$WORK/node0.err" || fail "node 0 did not report the node of another run"
no_control "$WORK/node0.err"
pass "node 0 escapes what peers sent it"

PORT=$(free_port)
python3 "$PEER" fake-node0 "$PORT" s3cret &
fake=$!
LAUNCH_PIDS+=("$fake")
start_node node1 KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT" \
  KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s3cret KTRAIN_NODE_RANK=1 \
  KTRAIN_NPROC_PER_NODE=1 KTRAIN_RDZV_TIMEOUT=30 -- echo ran
expect_status node1 76
wait "$fake" || true
cat "$WORK/node1.err"
expect_termlog node1 "node 0 gave up the rendezvous: stopped"
no_control "$WORK/node1.err"
no_control "$WORK/node1.termlog"
pass "a node escapes what node 0 sent it, in its log and its termination log"
