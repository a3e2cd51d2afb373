#!/usr/bin/env bash
# train.cuda on the real control plane: the rendered node affinity, read by the real
# kube-scheduler, keeps a run off nodes whose driver (by GPU feature discovery's
# labels) is too old; `ktrain status` says so in words, from the nodes' labels; a
# node with a newer driver, or one GFD did not label, takes the pod; on the latter
# ktrain-launch refuses a driver that is too old before any worker starts (exit 79),
# and submit --follow and status say so in its words. kubectl reads the same pods.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s

# An image whose nodes' driver is older than it needs, as the GPU helper reports it
# (the agent's nodes have no GPU devices: a scripted helper stands in for the driver).
cat >"$work/fake-gpucheck" <<'SH'
#!/usr/bin/sh
case "$1" in
  count) echo "info driver CUDA 11.2, 1 GPU(s)"; echo "count 1"; echo "driver_cuda 11020" ;;
esac
SH
chmod +x "$work/fake-gpucheck"
cat >"$work/images.json" <<JSON
{
  "registry.example.com/ml/olddriver:*": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher",
              "/opt/fake/ktrain-gpucheck": "$work/fake-gpucheck", "/workspace": "$work/ws"}},
  "registry.example.com/ml/*": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$work/ws"}},
  $launcher_image
}
JSON
start_cluster --nodes 2 --gpus 8 --images "$work/images.json"
cd "$work"
# gfd NODE MAJOR MINOR: the labels GFD writes for the CUDA version a node's driver runs
# (current names and those of GFD before v0.15).
gfd() {
  kubectl label node "$1" --overwrite >/dev/null \
    "nvidia.com/cuda.runtime-version.major=$2" "nvidia.com/cuda.runtime-version.minor=$3" \
    "nvidia.com/cuda.runtime.major=$2" "nvidia.com/cuda.runtime.minor=$3"
}
gfd node-0 11 2
gfd node-1 11 4
# placed RUN: the node the scheduler bound the run's pod to (the agent's nodes have no
# GPU devices, so the launcher then stops with exit 77: scheduling is what is tested).
placed() {
  k8s_wait "the scheduler to place $1" 60 sh -c \
    "kubectl get pods -l ktrain.dev/run=$1 -o jsonpath='{.items[0].spec.nodeName}' | grep -q ."
  kubectl get pods -l "ktrain.dev/run=$1" -o jsonpath='{.items[0].spec.nodeName}'
}

cat >ktrain.yaml <<'YAML'
name: cuda
image: registry.example.com/ml/cuda:1
train:
  command: [sh, -c, 'echo ran']
  nodes: 1
  gpus: 1
  cuda: "12.1"
  preflight: "off"
YAML

echo "== render: the affinity and the launcher's variables"
"$ktrain" render --run-id r1 >render.yaml
expect_contains "$(cat render.yaml)" "key: nvidia.com/cuda.runtime-version.major" "affinity rendered"
expect_contains "$(cat render.yaml)" "ktrain.dev/cuda: \"12.1\"" "the pod's annotation"
echo "ok: render"

echo "== no node's driver runs CUDA 12.1: pending, and said in words"
run="$("$ktrain" submit --run-id a1)"
k8s_wait "the scheduler to refuse $run" 60 sh -c \
  "kubectl get pods -l ktrain.dev/run=$run -o jsonpath='{.items[0].status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -qx Unschedulable"
expect_contains "$(kubectl get pods -l "ktrain.dev/run=$run" -o jsonpath='{.items[0].status.conditions[?(@.type=="PodScheduled")].message}')" \
  "didn't match Pod's node affinity/selector" "the scheduler's reason"
out="$("$ktrain" status "$run")"
expect_contains "$out" "rank 0 cannot be scheduled: no node has a driver for CUDA 12.1: nodes have 11.2, 11.4" \
  "status explains the pending pod from the nodes' labels"
json_out="$("$ktrain" status "$run" -o json)"
expect_contains "$json_out" "no node has a driver for CUDA 12.1" "status -o json"
# A user who may not list nodes gets the scheduler's words instead.
kubectl create role runs --verb=get,list,watch --resource=jobs,pods,events,services >/dev/null
kubectl create rolebinding alice-runs --role=runs --user=alice >/dev/null
out="$(KUBECONFIG="$ALICE_KUBECONFIG" "$ktrain" status "$run" 2>&1)"
expect_contains "$out" "rank 0 cannot be scheduled: 0/2 nodes are available" "without nodes: the scheduler's message"
echo "ok: pending, explained"

echo "== a node whose driver runs it takes the pod"
gfd node-1 12 4
expect_eq "$(placed "$run")" node-1 "the pod went to the node with CUDA 12.4"
wait_state "$run" Failed 60
expect_contains "$("$ktrain" status "$run")" "no NVIDIA GPU or driver was found on this node" \
  "the launcher ran there (and found no GPU device on the agent's node)"
expect_eq "$(kubectl get pods -l "ktrain.dev/run=$run" -o jsonpath='{.items[0].spec.containers[0].env[?(@.name=="KTRAIN_CUDA_VERSION")].value}')" \
  12.1 "the launcher is told the image's CUDA version"
echo "ok: scheduled where the driver runs it"

echo "== 13.0 runs 12.1; 12.0 does not; a node GFD did not label is allowed"
gfd node-1 12 0
run="$("$ktrain" submit --run-id a2)"
k8s_wait "the scheduler to refuse $run" 60 sh -c \
  "'$ktrain' status $run | grep -q 'no node has a driver for CUDA 12.1: nodes have 11.2, 12.0'"
gfd node-0 13 0
expect_eq "$(placed "$run")" node-0 "a 13.0 driver runs 12.1; 12.0 does not"
gfd node-0 11 2
kubectl label node node-1 >/dev/null nvidia.com/cuda.runtime-version.major- nvidia.com/cuda.runtime-version.minor- \
  nvidia.com/cuda.runtime.major- nvidia.com/cuda.runtime.minor-
run="$("$ktrain" submit --run-id a3)"
expect_eq "$(placed "$run")" node-1 "an unlabelled node (the launcher checks its driver)"
echo "ok: driver versions compared as CUDA does"

echo "== on a node GFD did not label, ktrain-launch refuses an old driver: exit 79, in status"
kubectl label node node-0 >/dev/null nvidia.com/cuda.runtime-version.major- nvidia.com/cuda.runtime-version.minor- \
  nvidia.com/cuda.runtime.major- nvidia.com/cuda.runtime.minor-
sed -i 's|registry.example.com/ml/cuda:1|registry.example.com/ml/olddriver:1|' ktrain.yaml
printf '  env: {KTRAIN_GPUCHECK: /opt/fake/ktrain-gpucheck}\n' >>ktrain.yaml
rc=0
"$ktrain" submit --run-id a4 --follow >follow.out 2>follow.err || rc=$?
expect_eq "$rc" 1 "submit --follow of a run that fails"
node="$(kubectl get pods -l ktrain.dev/run=cuda-a4 -o jsonpath='{.items[0].spec.nodeName}')"
words="node $node: the NVIDIA driver supports CUDA 11.2 but the image needs CUDA 12.1 (KTRAIN_CUDA_VERSION=12.1)"
expect_contains "$(cat follow.out follow.err)" "$words" "the follow shows the launcher's refusal"
out="$("$ktrain" status cuda-a4)"
expect_contains "$out" "rank 0 failed with exit code 79: the node's NVIDIA driver is too old for the image: $words" \
  "status says why, in the launcher's words"
expect_eq "$(kubectl get pods -l ktrain.dev/run=cuda-a4 -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}')" \
  79 "the container's exit code, read by kubectl"
expect_contains "$(kubectl get pods -l ktrain.dev/run=cuda-a4 -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}')" \
  "$words" "the termination message, read by kubectl"
! grep -q '^\[rank 0\] ran' follow.out || fail "a worker ran on a node whose driver is too old"
echo "ok: refused before any worker, exit 79, said by status"
echo "PASS"
