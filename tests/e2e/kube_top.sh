#!/usr/bin/env bash
# ktrain top against the test API server, with the GPU operator's DCGM exporter (one
# pod per node, read through the pod proxy; a recorded /metrics of an 8 x H100 node) and
# metrics-server (metrics.k8s.io): a run of 2 nodes x 8 GPUs as a table, -o wide and
# -o json; one line per run without RUN; metrics-server missing (404) or down (503);
# the DCGM exporter missing; both missing (exit 1); neither but the kubelets' summaries
# through the node proxy, and a user without nodes/proxy (exit 1); a run that does not exist (exit 1);
# --local (exit 2); --watch. Output and exit statuses are checked exactly.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac
source_dir="$(cd "$KTRAIN_SOURCE" && pwd)"

work="$(mktemp -d /tmp/ktrain-top.XXXXXX)"
cleanup() { stop_apiserver; rm -rf "$work"; }
# script [METRICS_SERVER_YAML]: the cluster; without an argument, metrics-server is in it.
metrics_server='metricsServer: {podCpu: "7250m", podMemory: "48Gi", nodeCpu: "61500m", nodeMemory: "402Gi"}'
script() {
  cat <<YAML
nodes: 2
pods:
  - match: {job: "gpu-*"}
    hold: true
dcgmExporter:
  namespace: gpu-operator
  service: nvidia-dcgm-exporter
  port: 9400
  file: $source_dir/tests/fixtures/apiserver/dcgm/h100-8gpu.prom
${1-$metrics_server}
YAML
}
script >"$work/script.yaml"
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1 LC_ALL=C
cd "$work"

cat >gpu.yaml <<'YAML'
name: gpu
image: registry.example.com/ml/gpu:1.0.0
train:
  command: [python3, train.py]
  framework: none
  nodes: 2
  gpus: 8
  preflight: "off"
YAML

k_ok "submit" submit -f gpu.yaml --run-id a
expect_eq "$out" "gpu-a" "submit prints the run name"
for i in $(seq 1 200); do
  running="$("$ktrain" status gpu-a -o json | json 'sum(1 for r in d["ranks"] if r["phase"]=="Running")')"
  [ "$running" = 2 ] && break
  sleep 0.05
done
expect_eq "$running" "2" "both ranks run"
pods="$("$ktrain" status gpu-a -o json | json '" ".join(r["pod"]+":"+r["node"] for r in d["ranks"])')"
pod0="$(cut -d' ' -f1 <<<"$pods" | cut -d: -f1)"
node0="$(cut -d' ' -f1 <<<"$pods" | cut -d: -f2)"
pod1="$(cut -d' ' -f2 <<<"$pods" | cut -d: -f1)"
node1="$(cut -d' ' -f2 <<<"$pods" | cut -d: -f2)"
[ "$node0" != "$node1" ] || fail "the ranks share a node: $pods"

echo "== top RUN: a table per rank and per node"
k_ok "top" top gpu-a
expect_eq "$err" "" "top: nothing on stderr"
# Every rank: 8 GPUs of the recorded node, 97% on average, 579.9 of 637.2 GiB
# (used + free + reserved), 7.25 cores and 48 GiB from metrics.k8s.io.
w=$(( ${#pod0} > 3 ? ${#pod0} : 3 ))
expected="Run:        gpu-a
Namespace:  default
GPUs:       16 on 2 node(s), 97% busy, 1159.8/1274.4 GiB memory

$(printf '%-4s  %-*s  %-6s  %-7s  %-4s  %-4s  %-15s  %-4s  %s' RANK "$w" POD NODE PHASE GPUS GPU% "GPU MEMORY" CPU MEMORY)
$(printf '%-4s  %-*s  %-6s  %-7s  %-4s  %-4s  %-15s  %-4s  %s' 0 "$w" "$pod0" "$node0" Running 8 97% "579.9/637.2 GiB" 7.25 "48.0 GiB")
$(printf '%-4s  %-*s  %-6s  %-7s  %-4s  %-4s  %-15s  %-4s  %s' 1 "$w" "$pod1" "$node1" Running 8 97% "579.9/637.2 GiB" 7.25 "48.0 GiB")

NODE    PODS  GPUS  GPU%  GPU MEMORY       CPU    MEMORY
node-1  1     8     97%   579.9/637.2 GiB  61.50  402.0 GiB
node-2  1     8     97%   579.9/637.2 GiB  61.50  402.0 GiB"
expect_eq "$out" "$expected" "top: the run's table"

k_ok "top -o wide" top gpu-a -o wide
expect_eq "$(grep -c 'NVIDIA H100 80GB HBM3' <<<"$out")" "16" "top -o wide: a line per GPU"
expect_contains "$out" "0     $node0  0    NVIDIA H100 80GB HBM3  98%   72.5/79.6 GiB  GPU-3f6c1a2e-8d7b-4c1e-9a55-0b2f6e7d9c11" "top -o wide: rank 0's first GPU"

echo "== top RUN -o json"
k_ok "top -o json" top gpu-a -o json
expect_eq "$(json '[d["run"], d["namespace"], d["kind"], d["sources"]]' <<<"$out")" \
  '["gpu-a", "default", "train", {"gpu": true, "metrics": true, "missing": []}]' "json: run, namespace, kind, sources"
expect_eq "$(json '[list(r.keys()) for r in d["ranks"]][0]' <<<"$out")" \
  '["rank", "pod", "node", "phase", "gpusRequested", "gpuCount", "gpuUtilPercent", "gpuMemoryUsedBytes", "gpuMemoryTotalBytes", "cpuCores", "memoryBytes", "gpus"]' "json: a rank's keys"
expect_eq "$(json '[(r["rank"], r["pod"], r["node"], r["gpusRequested"], r["gpuCount"], r["gpuUtilPercent"], r["gpuMemoryUsedBytes"], r["gpuMemoryTotalBytes"], r["cpuCores"], r["memoryBytes"]) for r in d["ranks"]]' <<<"$out")" \
  "[[0, \"$pod0\", \"$node0\", 8, 8, 97.38, 622639185920, 684166479872, 7.25, 51539607552], [1, \"$pod1\", \"$node1\", 8, 8, 97.38, 622639185920, 684166479872, 7.25, 51539607552]]" "json: the ranks' figures"
expect_eq "$(json 'd["ranks"][1]["gpus"][7]' <<<"$out")" \
  '{"gpu": "7", "memoryTotalBytes": 85520809984, "memoryUsedBytes": 77869350912, "model": "NVIDIA H100 80GB HBM3", "utilPercent": 99.0, "uuid": "GPU-8f4d2b6e-1c7a-4d9f-a5b3-6e8c4f2d9b88"}' "json: a GPU"
expect_eq "$(json '[(n["node"], n["exporter"], n["gpuCount"], n["cpuCores"], n["memoryBytes"]) for n in d["nodes"]]' <<<"$out")" \
  '[["node-1", true, 8, 61.5, 431644213248], ["node-2", true, 8, 61.5, 431644213248]]' "json: the nodes"
expect_eq "$(api_curl "/_test/requests?path=/api/v1/namespaces/gpu-operator/pods/*" | json 'sorted(set(r["path"].split("/")[-3].split(":")[1] + "/" + r["path"].split("/")[-1] for r in d))')" \
  '["9400/metrics"]' "the exporters are read through the pod proxy, port 9400"

echo "== top: one line per run"
k_ok "top" top
expect_eq "$out" "RUN    KIND   PODS  GPUS  GPU%  GPU MEMORY         CPU    MEMORY
gpu-a  train  2     16    97%   1159.8/1274.4 GiB  14.50  96.0 GiB" "top: a line per run"
k_ok "top -o json" top -o json
expect_eq "$(json 'd["runs"]' <<<"$out")" \
  '[{"cpuCores": 14.5, "gpuCount": 16, "gpuMemoryTotalBytes": 1368332959744, "gpuMemoryUsedBytes": 1245278371840, "gpuUtilPercent": 97.38, "kind": "train", "memoryBytes": 103079215104, "namespace": "default", "pods": 2, "run": "gpu-a"}]' "top -o json: the runs"

echo "== a run that does not exist"
k top nope
expect_eq "$rc" "1" "top of no run: exit 1"
expect_eq "$err" 'ktrain: error: run "nope" not found in namespace "default" (see '"'"'ktrain list'"'"', or pass -n NAMESPACE)' "top of no run: the message"

echo "== --local, bad flags"
k top gpu-a --local
expect_eq "$rc" "2" "top --local: exit 2"
expect_contains "$err" "top shows the GPU figures of cluster runs" "top --local: the message"
k top gpu-a --dcgm nowhere
expect_eq "$rc" "2" "top --dcgm without a namespace: exit 2"
expect_contains "$err" "--dcgm nowhere: expected NAMESPACE/SERVICE:PORT" "top --dcgm: the message"

echo "== --watch"
set +e
timeout 2.5 "$ktrain" top gpu-a -o json -w --interval 1 >"$work/watch" 2>"$work/watch.err"
set -e
[ "$(wc -l <"$work/watch")" -ge 2 ] || fail "top -w: expected 2 or more lines, got: $(cat "$work/watch")"
expect_eq "$(head -1 "$work/watch" | json 'len(d["ranks"])')" "2" "top -w -o json: one document a line"

echo "== metrics-server missing (404): the GPU figures, and one line on stderr"
admin POST /_test/script "$(script '')" >/dev/null
k_ok "top without metrics-server" top gpu-a
expect_eq "$err" "ktrain: warning: no CPU and memory figures: the API server does not serve metrics.k8s.io (install metrics-server: kubectl apply -f https://github.com/kubernetes-sigs/metrics-server/releases/latest/download/components.yaml)" "top without metrics-server: one line on stderr"
expect_contains "$out" "Running  8     97%   579.9/637.2 GiB  -    -" "top without metrics-server: GPU figures, no CPU or memory"
k_ok "top -o json without metrics-server" top gpu-a -o json
expect_eq "$(json '[d["sources"]["gpu"], d["sources"]["metrics"], len(d["sources"]["missing"]), d["ranks"][0]["cpuCores"]]' <<<"$out")" '[true, false, 1, null]' "json without metrics-server: sources and null"

echo "== metrics-server down (503)"
admin POST /_test/script "$(script 'metricsServer: {status: 503}')" >/dev/null
k_ok "top with metrics-server down" top gpu-a
expect_contains "$err" "metrics.k8s.io is registered but does not answer (503" "top with metrics-server down: the message"

echo "== the DCGM exporter missing: CPU and memory, and one line on stderr"
admin POST /_test/script "$(script)" >/dev/null
api_curl -X DELETE /api/v1/namespaces/gpu-operator/services/nvidia-dcgm-exporter >/dev/null
k_ok "top without the DCGM exporter" top gpu-a
expect_eq "$err" "ktrain: warning: no GPU figures: no DCGM exporter (Service gpu-operator/nvidia-dcgm-exporter not found). NVIDIA's GPU operator runs it on every GPU node (helm install gpu-operator nvidia/gpu-operator -n gpu-operator --create-namespace); or point --dcgm or KTRAIN_DCGM at another exporter's Service, now gpu-operator/nvidia-dcgm-exporter:9400" "top without the DCGM exporter: one line on stderr"
expect_contains "$out" "Running  -     -     -           7.25  48.0 GiB" "top without the DCGM exporter: CPU and memory"
k top gpu-a --dcgm monitoring/dcgm-exporter:9400
expect_eq "$rc" "0" "top --dcgm elsewhere: exit 0"
expect_contains "$err" "Service monitoring/dcgm-exporter not found" "top --dcgm: names the Service asked for"

echo "== neither: exit 1, both named"
admin POST /_test/script "$(script '')" >/dev/null
k top gpu-a
expect_eq "$rc" "1" "top without either source: exit 1"
expect_eq "$err" "ktrain: error: no figures to show:
  no GPU figures: no DCGM exporter (Service gpu-operator/nvidia-dcgm-exporter not found). NVIDIA's GPU operator runs it on every GPU node (helm install gpu-operator nvidia/gpu-operator -n gpu-operator --create-namespace); or point --dcgm or KTRAIN_DCGM at another exporter's Service, now gpu-operator/nvidia-dcgm-exporter:9400
  no CPU and memory figures: the API server does not serve metrics.k8s.io (install metrics-server: kubectl apply -f https://github.com/kubernetes-sigs/metrics-server/releases/latest/download/components.yaml)" "top without either source: the message"
k top
expect_eq "$rc" "1" "top (every run) without either source: exit 1"

echo "== no metrics-server, no exporter: the kubelets' summaries through the node proxy"
stats='kubeletStats: {podNanoCores: 1500000000, podBytes: 3221225472, nodeNanoCores: 20000000000, nodeBytes: 107374182400}'
admin POST /_test/script "$(script "$stats")" >/dev/null
k_ok "top from the kubelets" top gpu-a
expect_contains "$err" "ktrain: warning: CPU and memory from the kubelets' /stats/summary (metrics-server is not there: the API server does not serve metrics.k8s.io" \
  "top from the kubelets: says where the figures come from"
expect_contains "$out" "Running  -     -     -           1.50  3.0 GiB" "top from the kubelets: each rank's CPU and memory"
k_ok "top -o json from the kubelets" top gpu-a -o json
expect_eq "$(json '[d["sources"]["metrics"], d["ranks"][0]["cpuCores"], d["ranks"][0]["memoryBytes"], d["nodes"][0]["cpuCores"]]' <<<"$out")" \
  '[true, 1.5, 3221225472, 20.0]' "json from the kubelets: ranks and nodes"
echo "== ... and a user who may not read nodes/proxy: exit 1, what to install"
admin POST /_test/script "$(script "$stats
forbid: [{verb: get, resource: nodes/proxy}]")" >/dev/null
k top gpu-a
expect_eq "$rc" "1" "top without nodes/proxy: exit 1"
expect_contains "$err" "install metrics-server" "top without nodes/proxy: what to install"
expect_contains "$err" "reading the kubelets' own figures (/stats/summary) instead needs nodes/proxy, which this user lacks (a cluster admin's right)" \
  "top without nodes/proxy: why the kubelets' figures are not shown"

admin POST /_test/release '{"job":"gpu-a"}' >/dev/null
echo "PASS: kube_top"
