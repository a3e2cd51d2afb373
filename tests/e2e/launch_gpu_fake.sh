#!/usr/bin/env bash
# The launcher's GPU orchestration without a GPU, against a scripted helper
# (KTRAIN_GPUCHECK): counting, auto process count and GPU sharing, the quick
# preflight, the full preflight's NCCL id travelling from node 0's helper to
# node 1's through the rendezvous, a failing all-reduce stopping every node, a
# helper that cannot run in the image, and a driver too old for the image's CUDA.
source "$(dirname "$0")/launch_lib.bash"
FAKE=$WORK/fake-gpucheck
cat >"$FAKE" <<'SH'
#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$1" in
  count)
    echo "info driver CUDA 13.0, $FAKE_GPUS GPU(s)"; echo "count $FAKE_GPUS"
    [ -n "${FAKE_OLD_HELPER:-}" ] || echo "driver_cuda ${FAKE_DRIVER_CUDA:-13000}" ;;
  quick) echo "info GPU 0 Fake: alloc/copy/verify/free ok, device-to-device 100.0 GB/s" ;;
  allreduce)
    case " $* " in *" --make-id "*) echo "nccl_id 00112233" ;; esac
    if [ -n "${FAKE_FAIL:-}" ]; then echo "error GPU 1: NCCL all-reduce wrong result at 4096 bytes"; exit 77; fi
    echo "info NCCL communicator ready"; echo "info 268435456  1000.0  268.44  402.65  ok" ;;
esac
SH
chmod +x "$FAKE"
export KTRAIN_GPUCHECK=$FAKE FAKE_LOG=$WORK/helper.log
# The image's CUDA version is unknown unless a case says otherwise: no variables,
# and the libcudart search confined to an empty folder (not this machine's CUDA).
unset CUDA_VERSION KTRAIN_CUDA_VERSION KTRAIN_NODE_NAME
mkdir -p "$WORK/no-cudart"
export KTRAIN_CUDA_LIB_ROOTS=$WORK/no-cudart

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

# The driver's CUDA against the image's, before any worker starts.
gpu1=(KTRAIN_GPUS=1 FAKE_GPUS=1)
start_node old "${gpu1[@]}" FAKE_DRIVER_CUDA=11020 KTRAIN_CUDA_VERSION=12.1 \
  KTRAIN_NODE_NAME=gpu-node-7 -- sh -c "echo ran; touch '$WORK/old.ran'"
expect_status old 79
expect_termlog old "node gpu-node-7: the NVIDIA driver supports CUDA 11.2 but the image needs CUDA 12.1 (KTRAIN_CUDA_VERSION=12.1); use a node pool with a newer driver"
expect_termlog old "(cuda-compat-12-1)"
grep -q "error: node gpu-node-7: the NVIDIA driver supports CUDA 11.2" "$WORK/old.err" ||
  { cat "$WORK/old.err"; fail "the refusal was not logged"; }
[ ! -e "$WORK/old.ran" ] && [ ! -s "$WORK/old.out" ] || fail "a worker ran on a driver too old"
pass "KTRAIN_CUDA_VERSION=12.1 on an 11.2 driver: 79 naming the node, both versions and the source"

start_node new "${gpu1[@]}" FAKE_DRIVER_CUDA=13000 KTRAIN_CUDA_VERSION=12.1 -- echo ran
expect_status new 0
grep -q "ran" "$WORK/new.out" || fail "the worker did not run on a 13.0 driver"
grep -q "the driver supports CUDA 13.0, the image needs CUDA 12.1 (KTRAIN_CUDA_VERSION=12.1)" \
  "$WORK/new.err" || { cat "$WORK/new.err"; fail "the passed check was not logged"; }
pass "KTRAIN_CUDA_VERSION=12.1 on a 13.0 driver runs"

start_node cudaenv "${gpu1[@]}" FAKE_DRIVER_CUDA=12020 CUDA_VERSION=12.4.1 -- echo ran
expect_status cudaenv 79
expect_termlog cudaenv "host $(hostname): the NVIDIA driver supports CUDA 12.2 but the image needs CUDA 12.4 (CUDA_VERSION=12.4.1)"
expect_termlog cudaenv "(cuda-compat-12-4)"
! grep -q ran "$WORK/cudaenv.out" || fail "a worker ran on a driver too old"
pass "CUDA_VERSION=12.4.1 (the image's) on a 12.2 driver: 79, the host name without KTRAIN_NODE_NAME"

mkdir -p "$WORK/root/lib"
touch "$WORK/root/lib/libcudart.so.12" "$WORK/root/lib/libcudart.so.12.3.101" "$WORK/root/lib/libcudart.so"
start_node cudart "${gpu1[@]}" FAKE_DRIVER_CUDA=12020 KTRAIN_CUDA_LIB_ROOTS="$WORK/no-cudart:$WORK/root/lib" \
  KTRAIN_NODE_NAME=gpu-node-8 -- echo ran
expect_status cudart 79
expect_termlog cudart "node gpu-node-8: the NVIDIA driver supports CUDA 12.2 but the image needs CUDA 12.3 ($WORK/root/lib/libcudart.so.12.3.101)"
start_node cudart_ok "${gpu1[@]}" FAKE_DRIVER_CUDA=12030 KTRAIN_CUDA_LIB_ROOTS="$WORK/root/lib" -- echo ran
expect_status cudart_ok 0
pass "the newest libcudart.so.12.3.101 in the image's libraries: 79 on a 12.2 driver, runs on 12.3"

start_node cpu KTRAIN_GPUS=0 FAKE_DRIVER_CUDA=11020 KTRAIN_CUDA_VERSION=12.1 -- echo ran
expect_status cpu 0
grep -q ran "$WORK/cpu.out" || fail "the CPU job did not run"
! grep -q CUDA "$WORK/cpu.err" || { cat "$WORK/cpu.err"; fail "a CPU job checked CUDA"; }
pass "KTRAIN_GPUS=0 with an old driver: nothing checked, the job runs"

start_node unknown "${gpu1[@]}" FAKE_DRIVER_CUDA=11020 CUDA_VERSION=cuda12 -- echo ran
expect_status unknown 0
grep -q "warning: ignoring CUDA_VERSION='cuda12'" "$WORK/unknown.err" ||
  { cat "$WORK/unknown.err"; fail "no warning for a malformed CUDA_VERSION"; }
grep -q "CUDA version check skipped: the driver supports CUDA 11.2; the image's CUDA version is unknown" \
  "$WORK/unknown.err" || { cat "$WORK/unknown.err"; fail "an unknown need was not logged"; }
pass "a malformed CUDA_VERSION is ignored with a warning; an unknown need checks nothing"

start_node oldhelper "${gpu1[@]}" FAKE_OLD_HELPER=1 KTRAIN_CUDA_VERSION=12.1 -- echo ran
expect_status oldhelper 0
grep -q "CUDA version check skipped: the GPU helper did not report the driver's CUDA version" \
  "$WORK/oldhelper.err" || { cat "$WORK/oldhelper.err"; fail "the skipped check was not logged"; }
pass "a helper without driver_cuda: the check is skipped, the job runs"

start_node badver "${gpu1[@]}" KTRAIN_CUDA_VERSION=12.x -- echo ran
expect_status badver 78
expect_termlog badver "KTRAIN_CUDA_VERSION: '12.x' is not a CUDA version"
! grep -q ran "$WORK/badver.out" || fail "a worker ran with a malformed KTRAIN_CUDA_VERSION"
pass "a malformed KTRAIN_CUDA_VERSION: 78 naming the variable and the value"
