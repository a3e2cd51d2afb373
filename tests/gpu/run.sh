#!/usr/bin/env bash
# GPU checks of ktrain-launch, for a machine with NVIDIA GPUs (not part of CI).
# Self-contained: builds ktrain-launch and ktrain-gpucheck from runtime/ with g++
# alone (no other library of the project needed) into its own folder, then runs
#   1. the GPU count and the quick preflight: device-to-device bandwidth per GPU
#      against the GPU's peak (memory clock x bus width),
#   2. the full preflight on 1 node x all GPUs (NCCL all-reduce, checked, with
#      algbw/busbw), workers started after it,
#   3. the full preflight on 2 nodes on this machine (the GPUs split between
#      them; needs 2 GPUs or more, NCCL allows one rank per GPU).
# Exit status: 0 when every check that could run passed, 77 when there is no
# GPU (after printing the launcher's plain error), 1 on a failed check.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${KTRAIN_GPU_BUILD:-$SRC/build-gpu}
JOBS=$(nproc 2>/dev/null || echo 4)
mkdir -p "$OUT"
say() { printf '\n== %s\n' "$*"; }
die() { echo "FAIL: $*"; exit 1; }

say "building into $OUT"
find_header() {  # NAME: the folder holding the header, or nothing
  local name=$1 d
  for d in ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include /usr/include \
           /usr/local/lib/python3*/dist-packages/nvidia/*/include \
           /usr/local/lib/python3*/site-packages/nvidia/*/include \
           /usr/lib/python3/dist-packages/nvidia/*/include \
           ${CONDA_PREFIX:+$CONDA_PREFIX/include} /opt/conda/include; do
    [ -f "$d/$name" ] && { echo "$d"; return; }
  done
}
CUDA_INC=$(find_header cuda.h)
NCCL_INC=$(find_header nccl.h)
[ -n "$CUDA_INC" ] || die "cuda.h not found (set CUDA_HOME)"
[ -n "$NCCL_INC" ] || die "nccl.h not found (install NCCL headers, e.g. libnccl-dev or pip nvidia-nccl-cu12)"
echo "cuda.h in $CUDA_INC, nccl.h in $NCCL_INC"
CXX=${CXX:-g++}
FLAGS=(-std=c++20 -O2 -Wall -Wextra -I"$SRC" -DKTRAIN_VERSION=\"gpu-test\")
LIB_SOURCES=()
for f in "$SRC"/runtime/*.cc; do [ "$(basename "$f")" = main.cc ] || LIB_SOURCES+=("$f"); done
# Compile each unit once, in parallel.
objs=()
for f in "${LIB_SOURCES[@]}" "$SRC"/runtime/main.cc "$SRC"/runtime/gpucheck/*.cc; do
  o="$OUT/$(basename "$(dirname "$f")")_$(basename "${f%.cc}").o"
  objs+=("$o")
  ( "$CXX" "${FLAGS[@]}" -isystem "$CUDA_INC" -isystem "$NCCL_INC" -c "$f" -o "$o" ) &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.1; done
done
wait
for o in "${objs[@]}"; do [ -f "$o" ] || die "compiling $(basename "$o") failed"; done
lib_objs=()
for f in "${LIB_SOURCES[@]}"; do lib_objs+=("$OUT/runtime_$(basename "${f%.cc}").o"); done
if ! "$CXX" -static -pthread -o "$OUT/ktrain-launch" "$OUT/runtime_main.o" "${lib_objs[@]}" 2>/dev/null; then
  echo "(no static C library here: the launcher is linked dynamically for this test)"
  "$CXX" -pthread -o "$OUT/ktrain-launch" "$OUT/runtime_main.o" "${lib_objs[@]}" || die "linking ktrain-launch"
fi
"$CXX" -pthread -o "$OUT/ktrain-gpucheck" "$OUT"/gpucheck_*.o "${lib_objs[@]}" -ldl || die "linking ktrain-gpucheck"
L=$OUT/ktrain-launch
G=$OUT/ktrain-gpucheck
echo "built $L and $G"

say "1. GPU count"
count_out=$("$G" count)
echo "$count_out"
N=$(echo "$count_out" | sed -n 's/^count //p')
if [ -z "$N" ] || [ "$N" = 0 ]; then
  echo "no GPU here; what the launcher says when GPUs are asked for:"
  KTRAIN_GPUS=1 KTRAIN_TERMINATION_LOG=/dev/null "$L" -- true
  echo "(exit status $?)"
  exit 77
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv

say "1. quick preflight on $N GPU(s): device-to-device copy bandwidth vs peak"
quick=$("$G" quick --gpus "$N") || { echo "$quick"; die "quick preflight"; }
echo "$quick" | sed -n 's/^info //p'
printf '%-6s %14s %14s %8s\n' GPU "d2d GB/s" "peak GB/s" "of peak"
for i in $(seq 0 $((N - 1))); do
  d=$(echo "$quick" | sed -n "s/^d2d_gbps.$i //p")
  p=$(echo "$quick" | sed -n "s/^peak_gbps.$i //p")
  awk -v i="$i" -v d="$d" -v p="$p" 'BEGIN { printf "%-6s %14.1f %14.1f %7.0f%%\n", i, d, p, (p > 0 ? 100 * d / p : 0) }'
done
echo "(d2d counts read + write traffic, as CUDA's bandwidthTest does)"
KTRAIN_GPUS=$N KTRAIN_PREFLIGHT=quick KTRAIN_TERMINATION_LOG=/dev/null "$L" -- true ||
  die "the launcher's quick preflight failed"
echo "ok: ktrain-launch --preflight quick with KTRAIN_GPUS=$N"

say "2. full preflight, 1 node x $N GPU(s), then $N worker(s)"
KTRAIN_GPUS=$N KTRAIN_PREFLIGHT=full KTRAIN_FRAMEWORK=pytorch KTRAIN_TERMINATION_LOG="$OUT/term1" \
  "$L" -- sh -c 'echo "worker rank $RANK local $LOCAL_RANK gpu $KTRAIN_GPU_IDS"' 2>&1 ||
  die "full preflight on 1 node: $(cat "$OUT/term1" 2>/dev/null)"
echo "ok: full preflight on 1 node"

say "3. full preflight, 2 nodes on this machine"
if [ "$N" -lt 2 ]; then
  echo "skipped: $N GPU; NCCL allows one rank per GPU, so two nodes need at least 2 GPUs"
else
  half=$((N / 2))
  first=$(seq -s, 0 $((half - 1)))
  second=$(seq -s, "$half" $((2 * half - 1)))
  port=$((20000 + RANDOM % 20000))
  common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT=$port
          KTRAIN_MASTER_PORT=$((port + 1)) KTRAIN_RDZV_SECRET=gpu-test KTRAIN_GPUS=$half
          KTRAIN_PREFLIGHT=full KTRAIN_RDZV_TIMEOUT=300)
  env "${common[@]}" KTRAIN_NODE_RANK=0 CUDA_VISIBLE_DEVICES=$first \
    KTRAIN_TERMINATION_LOG="$OUT/term2.0" "$L" -- sh -c 'echo "node 0 worker rank $KTRAIN_RANK"' \
    >"$OUT/node0.log" 2>&1 &
  p0=$!
  env "${common[@]}" KTRAIN_NODE_RANK=1 CUDA_VISIBLE_DEVICES=$second \
    KTRAIN_TERMINATION_LOG="$OUT/term2.1" "$L" -- sh -c 'echo "node 1 worker rank $KTRAIN_RANK"' \
    >"$OUT/node1.log" 2>&1 &
  p1=$!
  rc0=0; rc1=0
  wait $p0 || rc0=$?
  wait $p1 || rc1=$?
  echo "--- node 0 (GPUs $first):"; cat "$OUT/node0.log"
  echo "--- node 1 (GPUs $second):"; cat "$OUT/node1.log"
  [ $rc0 = 0 ] && [ $rc1 = 0 ] ||
    die "2-node full preflight: node 0 exited $rc0, node 1 exited $rc1: $(cat "$OUT"/term2.* 2>/dev/null)"
  echo "ok: full preflight over 2 nodes x $half GPU(s)"
fi
say "all GPU checks passed"
