#!/usr/bin/env bash
# The launcher's GPU orchestration without a GPU, against a scripted helper
# (KTRAIN_GPUCHECK): counting, auto process count and GPU sharing, the quick
# preflight, the full preflight's NCCL id travelling from node 0's helper to
# node 1's through the rendezvous, a failing all-reduce stopping every node, and
# a helper that cannot run in the image.
source "$(dirname "$0")/launch_lib.bash"
FAKE=$WORK/fake-gpucheck
cat >"$FAKE" <<'SH'
#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$1" in
  count) echo "info driver CUDA 13.0, $FAKE_GPUS GPU(s)"; echo "count $FAKE_GPUS" ;;
  quick) echo "info GPU 0 Fake: alloc/copy/verify/free ok, device-to-device 100.0 GB/s" ;;
  allreduce)
    case " $* " in *" --make-id "*) echo "nccl_id 00112233" ;; esac
    if [ -n "${FAKE_FAIL:-}" ]; then echo "error GPU 1: NCCL all-reduce wrong result at 4096 bytes"; exit 77; fi
    echo "info NCCL communicator ready"; echo "info 268435456  1000.0  268.44  402.65  ok" ;;
esac
SH
chmod +x "$FAKE"
export KTRAIN_GPUCHECK=$FAKE FAKE_LOG=$WORK/helper.log

start_node auto KTRAIN_GPUS=4 FAKE_GPUS=4 KTRAIN_PREFLIGHT=quick KTRAIN_FRAMEWORK=jax \
  -- sh -c 'echo "gpu=$CUDA_VISIBLE_DEVICES ids=$KTRAIN_GPU_IDS n=$JAX_NUM_PROCESSES"'
expect_status auto 0
for i in 0 1 2 3; do
  grep -q "^\[rank $i\] gpu=$i ids=$i n=4$" "$WORK/auto.out" || { cat "$WORK/auto.out"; fail "rank $i GPU"; }
done
grep -q "preflight: GPU 0 Fake" "$WORK/auto.err" || fail "quick preflight lines not logged"
grep -q "^quick --gpus 4$" "$FAKE_LOG" || fail "the quick check was not asked for 4 GPUs"
pass "auto: 4 GPUs -> 4 workers with one GPU each; quick preflight logged"

start_node tf KTRAIN_GPUS=4 FAKE_GPUS=4 KTRAIN_FRAMEWORK=tensorflow -- sh -c 'echo "gpu=$CUDA_VISIBLE_DEVICES"'
expect_status tf 0
[ "$(cat "$WORK/tf.out")" = "[rank 0] gpu=0,1,2,3" ] || { cat "$WORK/tf.out"; fail "tensorflow: one process with 4 GPUs"; }
pass "tensorflow: one process per node drives the node's 4 GPUs"

start_node few KTRAIN_GPUS=8 FAKE_GPUS=4 -- echo ran
expect_status few 77
expect_termlog few "KTRAIN_GPUS=8 but only 4 GPUs are visible on this node"
pass "fewer GPUs than asked: 77"

# Full preflight over 2 nodes: node 0's helper makes the id, node 1's gets it.
: >"$FAKE_LOG"
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT=$PORT
        KTRAIN_MASTER_PORT=$(free_port) KTRAIN_RDZV_SECRET=s KTRAIN_GPUS=2 FAKE_GPUS=2
        KTRAIN_PREFLIGHT=full KTRAIN_RDZV_TIMEOUT=60 KTRAIN_MIN_BUSBW=100)
start_node f0 "${common[@]}" KTRAIN_NODE_RANK=0 -- sh -c 'echo "rank $KTRAIN_RANK"'
start_node f1 "${common[@]}" KTRAIN_NODE_RANK=1 -- sh -c 'echo "rank $KTRAIN_RANK"'
expect_status f0 0
expect_status f1 0
grep -q -- "^allreduce --nranks 4 --first-rank 0 --gpus 2 --min-busbw 100.0* --make-id$" "$FAKE_LOG" ||
  { cat "$FAKE_LOG"; fail "node 0's helper was not asked to make the id"; }
grep -q -- "^allreduce --nranks 4 --first-rank 2 --gpus 2 --min-busbw 100.0* --id 00112233$" "$FAKE_LOG" ||
  { cat "$FAKE_LOG"; fail "node 1's helper did not get node 0's NCCL id"; }
grep -q "^\[rank 3\] rank 3$" "$WORK/f1.out" || fail "node 1's workers did not run"
pass "full preflight: the NCCL id went from node 0's helper to node 1's; workers ran after it"

# A wrong all-reduce result on node 1: it exits 77, node 0 75, nobody trains.
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT=$PORT
        KTRAIN_MASTER_PORT=$(free_port) KTRAIN_RDZV_SECRET=s KTRAIN_GPUS=2 FAKE_GPUS=2
        KTRAIN_PREFLIGHT=full KTRAIN_RDZV_TIMEOUT=60)
start_node g0 "${common[@]}" KTRAIN_NODE_RANK=0 -- sh -c 'sleep 30'
start_node g1 "${common[@]}" KTRAIN_NODE_RANK=1 FAKE_FAIL=1 -- echo trained
expect_status g1 77
expect_status g0 75
expect_termlog g1 "node 1: GPU 1: NCCL all-reduce wrong result at 4096 bytes"
expect_termlog g0 "stopped because of a peer: node 1: GPU 1: NCCL all-reduce wrong result"
! grep -q trained "$WORK/g1.out" || fail "node 1 trained after a failed preflight"
pass "a wrong all-reduce on node 1: node 1 exits 77, node 0 exits 75"

# A helper that cannot run in this image (exit 127, silent): unavailable, and
# without any NVIDIA device the plain error.
printf '#!/bin/sh\nexit 127\n' >"$WORK/broken"
chmod +x "$WORK/broken"
if [ ! -e /dev/nvidiactl ] && [ ! -e /dev/nvidia0 ]; then
  start_node broken KTRAIN_GPUCHECK="$WORK/broken" KTRAIN_GPUS=1 -- echo ran
  expect_status broken 77
  grep -q "GPU checks unavailable: the GPU helper .* cannot run in this image" "$WORK/broken.err" ||
    { cat "$WORK/broken.err"; fail "no word of the unusable helper"; }
  expect_termlog broken "no NVIDIA GPU or driver was found"
  pass "an unusable helper is reported as unavailable; no GPU: 77"
fi
