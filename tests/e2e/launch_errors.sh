#!/usr/bin/env bash
# Configuration errors exit 78 with a message naming the variable; asking for GPUs
# on a machine without them exits 77 saying so plainly; both write the cause to
# the termination log. KTRAIN_GPUS=0 skips the GPU checks.
source "$(dirname "$0")/launch_lib.bash"
start_node nocmd -- 
expect_status nocmd 78
expect_termlog nocmd "no command to run"
start_node badnodes KTRAIN_NNODES=zero -- true
expect_status badnodes 78
expect_termlog badnodes "KTRAIN_NNODES: 'zero' is not a whole number"
start_node nosecret KTRAIN_NNODES=2 KTRAIN_NODE_RANK=1 KTRAIN_MASTER_ADDR=x -- true
expect_status nosecret 78
expect_termlog nosecret "KTRAIN_RDZV_SECRET is not set"
pass "configuration errors exit 78 naming the variable"

if [ -e /dev/nvidiactl ] || [ -e /dev/nvidia0 ]; then
  echo "skip: this machine has an NVIDIA device; the no-GPU path cannot be shown"
else
  start_node gpu KTRAIN_GPUS=2 KTRAIN_PREFLIGHT=quick -- echo ran
  expect_status gpu 77
  grep -qi "no NVIDIA" "$WORK/gpu.err" || { cat "$WORK/gpu.err"; fail "no plain GPU message"; }
  expect_termlog gpu "KTRAIN_GPUS=2 but no NVIDIA"
  ! grep -q ran "$WORK/gpu.out" || fail "the worker ran without its GPUs"
  pass "KTRAIN_GPUS=2 without a GPU: exit 77, $(cat "$WORK/gpu.termlog")"
fi
start_node cpu KTRAIN_GPUS=0 KTRAIN_PREFLIGHT=full -- echo ran
expect_status cpu 0
grep -q "^\[rank 0\] ran$" "$WORK/cpu.out" || fail "KTRAIN_GPUS=0 did not run the worker"
grep -q "skipped: no GPUs requested" "$WORK/cpu.err" || fail "no word of the skipped preflight"
pass "KTRAIN_GPUS=0 skips the GPU checks"

# The worker's own exit status passes through; a missing command is 127.
start_node three KTRAIN_NPROC_PER_NODE=2 -- sh -c 'exit $((KTRAIN_RANK + 3))'
wait_node three
[ "$RC" = 3 ] || [ "$RC" = 4 ] || fail "expected a worker's status (3 or 4), got $RC"
start_node missing -- /nonexistent/train.py
expect_status missing 127
expect_termlog missing "rank 0 exited 127"
pass "worker statuses pass through"

# --latest-checkpoint, which `ktrain status` runs in a live pod: the newest complete
# checkpoint as "<written> <path>", nothing when there is none, 78 without a folder; it
# never writes the termination message (the pod's own, read when the container ends).
ckpt=$WORK/ckpt
mkdir -p "$ckpt/step-10" "$ckpt/step-20.tmp" "$ckpt/.partial-30"
touch -d @1700000000 "$ckpt/step-10"
touch -d @1700000500 "$ckpt/step-20.tmp" "$ckpt/.partial-30"
out=$(env KTRAIN_CHECKPOINT_DIR="$ckpt" KTRAIN_TERMINATION_LOG="$WORK/probe.termlog" "$LAUNCH" --latest-checkpoint)
[ "$out" = "1700000000 $ckpt/step-10" ] || fail "--latest-checkpoint printed '$out'"
# A FIFO named latest is not read (it would wait for a writer): the newest entry wins.
mkfifo "$ckpt/latest"
touch -d @1700000000 "$ckpt/latest"
out=$(env KTRAIN_CHECKPOINT_DIR="$ckpt" timeout 10 "$LAUNCH" --latest-checkpoint) || fail "--latest-checkpoint with a FIFO named latest: exit $?"
[ "$out" = "1700000000 $ckpt/step-10" ] || fail "--latest-checkpoint with a FIFO named latest printed '$out'"
rm "$ckpt/latest"
mkdir -p "$WORK/none"
out=$(env KTRAIN_CHECKPOINT_DIR="$WORK/none" "$LAUNCH" --latest-checkpoint)
[ -z "$out" ] || fail "--latest-checkpoint of an empty folder printed '$out'"
rc=0
env -u KTRAIN_CHECKPOINT_DIR KTRAIN_TERMINATION_LOG="$WORK/probe.termlog" "$LAUNCH" --latest-checkpoint \
  >"$WORK/probe.out" 2>"$WORK/probe.err" || rc=$?
[ "$rc" = 78 ] || fail "--latest-checkpoint without KTRAIN_CHECKPOINT_DIR exited $rc, want 78"
grep -q "KTRAIN_CHECKPOINT_DIR is not set" "$WORK/probe.err" || fail "no word of the missing folder: $(cat "$WORK/probe.err")"
[ ! -e "$WORK/probe.termlog" ] || fail "--latest-checkpoint wrote the termination log"
pass "--latest-checkpoint: the newest complete checkpoint, nothing, or 78; no termination log"
