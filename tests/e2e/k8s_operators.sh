#!/usr/bin/env bash
# The verbs on the operators' targets, on the real control plane with the upstream
# CRDs and tests/fixtures/k8s/operators.py playing the operators (pods with their
# labels and env, their Services, the conditions they write): a PyTorchJob followed
# to its end (every node's lines under its rank, the same as kubectl logs), its
# status and list (-w) from the operator's conditions; a TFJob whose worker 1 fails,
# explained by status and by submit --wait's exit 1; a JobSet followed through the
# Job it makes; a TrainJob through its JobSet, and one of a stock image on its own
# TrainingRuntime (the launcher injected); stop and resume in the object's own
# suspend field; delete leaving nothing (the garbage collector takes what the
# operators made).
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
# A stock image: no ktrain-launch in it (its pods get the launcher from an init container).
python3 - "$work/images.json" <<'PY'
import json, sys
images = json.load(open(sys.argv[1]))
images["registry.example.com/stock/*"] = {"user": "1000", "workdir": "/workspace"}
json.dump(images, open(sys.argv[1], "w"))
PY
start_cluster --nodes 2 --gpus 0 --images "$work/images.json" --operators
cd "$work"

project() {  # project TARGET FRAMEWORK COMMAND [EXTRA-TRAIN-LINES]
  cat >ktrain.yaml <<YAML
name: op
image: registry.example.com/ml/op:1.0.0
train:
  target: $1
  framework: $2
  command: $3
  nodes: 2
  gpus: 0
  preflight: "off"
${4:-}
YAML
}
# gone RUN: nothing of the run is left (the garbage collector takes what its owner made).
gone() {
  k8s_wait "nothing of $1 to be left" 60 sh -c \
    "[ -z \"\$(kubectl get pods,services,jobs,secrets -l ktrain.dev/run=$1 -o name 2>/dev/null)\" ] && [ -z \"\$(kubectl get pods,services,jobs -o name 2>/dev/null | grep \"/$1-\")\" ]"
}

echo "== pytorchjob: submit --follow, status, logs, list -w"
"$ktrain" list -w -o json -l ktrain.dev/run=op-pt >"$work/watch" 2>&1 &
watch_pid=$!
k8s_wait "list -w's first list" 30 grep -qx '{"runs":\[\]}' "$work/watch"
project pytorchjob pytorch '[sh, -c, "for i in 1 2 3; do echo node $KTRAIN_NODE_RANK line $i; done; echo master $MASTER_ADDR rank $RANK of $WORLD_SIZE"]'
k submit --run-id pt --follow
expect_eq "$rc" 0 "submit --follow of a PyTorchJob: exit 0 when it succeeds ($err)"
for r in 0 1; do
  for i in 1 2 3; do
    expect_contains "$out" "[rank $r] node $r line $i" "node $r's line $i, under its rank"
  done
done
# ktrain-launch found node 0 at the Master's address, the host the operator names in
# MASTER_ADDR (op-pt-master-0, through its Service), and gave each worker process its
# place among all of them.
master_ip="$(kubectl get pod op-pt-master-0 -o jsonpath='{.status.podIP}')"
expect_contains "$out" "[rank 0] master $master_ip rank 0 of 2" "the Master's process: rank 0 of 2, at the Master"
expect_contains "$out" "[rank 1] master $master_ip rank 1 of 2" "Worker 0's process: rank 1 of 2, at the Master"
expect_contains "$err" "run op-pt succeeded" "submit --follow says the run succeeded"

k_ok "status op-pt" status op-pt
expect_contains "$out" "Succeeded" "status: Succeeded"
expect_contains "$out" "PyTorchJobSucceeded" "status: the operator's condition"
expect_contains "$out" "op-pt-master-0" "status: the Master's pod"
expect_contains "$out" "op-pt-worker-0" "status: Worker 0's pod"
k_ok "status -o json" status op-pt -o json
expect_eq "$(printf '%s' "$out" | json '" ".join(r["pod"] for r in d["ranks"])')" "op-pt-master-0 op-pt-worker-0" \
  "status: node 0 is the Master, node 1 Worker 0"

k_ok "logs op-pt" logs op-pt
for r in 0 1; do
  pod=$([ "$r" = 0 ] && echo op-pt-master-0 || echo op-pt-worker-0)
  # kubectl picks the container from the pods' default-container annotation, as ktrain does.
  expect_eq "$(kubectl logs "$pod" | grep -v '^ktrain-launch' | sed "s/^\[rank $r\] //" | md5sum)" \
    "$(printf '%s\n' "$out" | grep "^\[rank $r\] " | sed "s/^\[rank $r\] //" | md5sum)" \
    "node $r: the lines kubectl logs reads"
done
k_ok "logs --node 1" logs op-pt --node 1
expect_contains "$out" "[rank 1] node 1 line 3" "logs --node 1: Worker 0's lines"
if printf '%s\n' "$out" | grep -q '^\[rank 0\]'; then fail "logs --node 1 printed node 0's lines"; fi

k8s_wait "list -w to show op-pt succeeded" 30 grep -q '"name":"op-pt".*"state":"Succeeded"' "$work/watch"
kill "$watch_pid"; wait "$watch_pid" 2>/dev/null || true
grep -q '"name":"op-pt","kind":"train","namespace":"default","state":"\(Pending\|Running\)"' "$work/watch" ||
  fail "list -w: no line with op-pt before it ended: $(cat "$work/watch")"
echo "ok: list -w shows the PyTorchJob come and end"
k_ok "list" list
expect_contains "$out" "op-pt" "list shows the PyTorchJob"
k_ok "delete op-pt" delete op-pt
gone op-pt
echo "ok: delete leaves nothing of the PyTorchJob"

echo "== tfjob: a failed replica"
project tfjob tensorflow '[sh, -c, "echo node $KTRAIN_NODE_RANK starts; if [ $KTRAIN_NODE_RANK = 1 ]; then echo out of data >&2; exit 3; fi; sleep 1"]'
k submit --run-id tf --wait --timeout 120s
expect_eq "$rc" 1 "submit --wait of a TFJob whose worker 1 fails: exit 1 ($err)"
expect_contains "$err" "run op-tf failed: node 1 failed first (pod op-tf-worker-1, exit code 3" "submit --wait: which node failed, in which pod, how"
expect_contains "$err" "[rank 1] out of data" "submit --wait: the failed node's last lines"
k_ok "status op-tf" status op-tf
expect_contains "$out" "Failed" "status: Failed"
expect_contains "$out" "TFJobFailed" "status: the operator's Failed condition"
expect_contains "$out" "op-tf-worker-1" "status: the failed replica's pod"
expect_contains "$out" "rank 1 failed with exit code 3" "status explains the failed replica"
k_ok "status -o json" status op-tf -o json
expect_eq "$(printf '%s' "$out" | json 'd["firstFailedRank"]')" "1" "status: node 1 failed first"
k_ok "delete op-tf" delete op-tf
gone op-tf

echo "== jobset: submit --follow through the Job it makes; stop and resume"
project jobset none '[sh, -c, "echo jobset node $KTRAIN_NODE_RANK of $KTRAIN_NNODES"]'
k submit --run-id js --follow
expect_eq "$rc" 0 "submit --follow of a JobSet: exit 0 ($err)"
expect_contains "$out" "[rank 0] jobset node 0 of 2" "JobSet node 0's line"
expect_contains "$out" "[rank 1] jobset node 1 of 2" "JobSet node 1's line"
k_ok "status op-js" status op-js
expect_contains "$out" "AllJobsCompleted" "status: the JobSet's Completed condition"
# The Job that the JobSet made carries the run's labels; it is not a run of its own.
k_ok "list" list -o json -l ktrain.dev/run=op-js
expect_eq "$(printf '%s' "$out" | json '" ".join(r["name"] for r in d["runs"])')" "op-js" "list: the JobSet once, not its Job"
k_ok "delete op-js" delete op-js
gone op-js

project jobset none '[sh, -c, "sleep 300"]' '  gracePeriod: 5s'
k_ok "submit a JobSet to stop" submit --run-id stop
wait_state op-stop Running 60
k_ok "stop op-stop" stop op-stop
expect_eq "$(kubectl get jobset/op-stop -o jsonpath='{.spec.suspend} {.metadata.labels.ktrain\.dev/stopped}')" "true true" \
  "stop: the JobSet's spec.suspend, and the label"
wait_state op-stop Stopped 30
k8s_wait "the stopped JobSet's pods to go" 90 sh -c \
  "[ -z \"\$(kubectl get pods -l jobset.sigs.k8s.io/jobset-name=op-stop -o name)\" ]"
k_ok "resume op-stop" resume op-stop
expect_eq "$(kubectl get jobset/op-stop -o jsonpath='{.spec.suspend}')" "false" "resume: spec.suspend false again"
wait_state op-stop Running 60
k_ok "delete op-stop" delete op-stop
gone op-stop

echo "== a sweep of JobSets, one at a time: released as each ends; status SWEEP"
project jobset none '[sh, -c, "echo lr $KTRAIN_PARAM_LR; sleep 1"]' '  sweep: {lr: ["0.1", "0.01", "0.001"], parallel: 1}'
k submit --run-id sw --wait --timeout 120s
expect_eq "$rc" 0 "submit --wait of a sweep of JobSets, one at a time ($err)"
expect_contains "$err" "2 runs of op-sw wait for a place (train.sweep.parallel: 1)" "submit says that two runs wait"
expect_contains "$err" "started op-sw-1" "submit released the second run"
expect_contains "$err" "started op-sw-2" "submit released the third run"
k_ok "status of the sweep" status op-sw -o json
expect_eq "$(printf '%s' "$out" | json '" ".join(r["name"] + "=" + r["state"] for r in d["runs"])')" \
  "op-sw-0=Succeeded op-sw-1=Succeeded op-sw-2=Succeeded" "status SWEEP: every JobSet of the sweep succeeded"
expect_eq "$(printf '%s' "$out" | json '" ".join(r["params"]["lr"] for r in d["runs"])')" "0.1 0.01 0.001" \
  "status SWEEP: each run's combination"
# One at a time: no JobSet started before the one before it had ended.
python3 - <<'PY' || fail "the sweep's runs overlapped"
import json, subprocess
items = json.loads(subprocess.check_output(["kubectl", "get", "jobsets", "-l", "ktrain.dev/sweep=op-sw", "-o", "json"]))["items"]
spans = []
for js in items:
    conds = {c["type"]: c["lastTransitionTime"] for c in js["status"].get("conditions", [])}
    jobs = json.loads(subprocess.check_output(["kubectl", "get", "jobs", "-l", "jobset.sigs.k8s.io/jobset-name=" + js["metadata"]["name"], "-o", "json"]))["items"]
    start = min(j["status"]["startTime"] for j in jobs)
    spans.append((start, conds["Completed"], js["metadata"]["name"]))
spans.sort()
for a, b in zip(spans, spans[1:]):
    assert b[0] >= a[1], "%s started at %s, before %s ended at %s" % (b[2], b[0], a[2], a[1])
PY
echo "ok: the JobSets ran one after another"
k_ok "delete the sweep" delete --all op-sw
for r in op-sw-0 op-sw-1 op-sw-2; do gone "$r"; done

echo "== trainjob: followed through its JobSet"
project trainjob pytorch '[sh, -c, "echo trainer node $KTRAIN_NODE_RANK"]'
sed -i '/^image:/a launcher: {inject: never}' ktrain.yaml
k submit --run-id tj --follow
expect_eq "$rc" 0 "submit --follow of a TrainJob: exit 0 ($err)"
expect_contains "$out" "[rank 0] trainer node 0" "TrainJob node 0's line"
expect_contains "$out" "[rank 1] trainer node 1" "TrainJob node 1's line"
k_ok "delete op-tj" delete op-tj
gone op-tj

echo "== trainjob of a stock image: the run's own TrainingRuntime brings the launcher"
project trainjob pytorch '[sh, -c, "echo stock node $KTRAIN_NODE_RANK"]'
sed -i 's|^image: .*|image: registry.example.com/stock/op:1.0.0|' ktrain.yaml
k submit --run-id tjs --follow
expect_eq "$rc" 0 "submit --follow of a TrainJob of a stock image: exit 0 ($err)"
expect_contains "$out" "[rank 0] stock node 0" "node 0 ran through the injected launcher"
expect_contains "$out" "[rank 1] stock node 1" "node 1 too"
expect_eq "$(kubectl get trainjob op-tjs -o jsonpath='{.spec.runtimeRef.kind}/{.spec.runtimeRef.name}')" \
  "TrainingRuntime/op-tjs" "the TrainJob runs on the run's own runtime"
expect_eq "$(kubectl get trainingruntime op-tjs -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" \
  "TrainJob/op-tjs" "the runtime is owned by the TrainJob"
expect_eq "$(kubectl get pods -l ktrain.dev/run=op-tjs -o jsonpath='{.items[0].spec.initContainers[0].image}')" \
  "$(kubectl get trainingruntime op-tjs -o jsonpath='{.spec.template.spec.replicatedJobs[0].template.spec.template.spec.initContainers[0].image}')" \
  "the pods have the launcher's init container"
k_ok "delete op-tjs" delete op-tjs
gone op-tjs
k8s_wait "the runtime to go" 60 sh -c "! kubectl get trainingruntime op-tjs >/dev/null 2>&1"

echo "== mpijob: the Launcher's log is node 0's"
project mpijob none '[sh, -c, "echo the launcher would run mpirun over $OMPI_MCA_orte_default_hostfile"]'
k submit --run-id mpi --follow
expect_eq "$rc" 0 "submit --follow of an MPIJob: exit 0 ($err)"
expect_contains "$out" "[node 0] the launcher would run mpirun over /etc/mpi/hostfile" "the Launcher's line, as node 0's"
k_ok "status op-mpi" status op-mpi -o json
expect_eq "$(printf '%s' "$out" | json 'd["state"]')" "Succeeded" "status: the MPIJob succeeded with its Launcher"
k8s_wait "the Workers to go when the Launcher has ended (cleanPodPolicy Running)" 60 sh -c \
  "[ -z \"\$(kubectl get pods -l training.kubeflow.org/job-name=op-mpi,training.kubeflow.org/replica-type=worker -o name)\" ]"
k_ok "delete op-mpi" delete op-mpi
gone op-mpi

echo "k8s_operators: all passed"
