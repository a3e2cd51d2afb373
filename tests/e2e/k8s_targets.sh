#!/usr/bin/env bash
# train.target on the real control plane: submit refuses a target whose CRD the
# cluster lacks (exit 2, naming the CRD, nothing sent); with the upstream CRDs of
# ../shared/schemas/crds applied, each operator's object is created as rendered (the
# API server's structural schemas and CEL rules check it), with its rendezvous Secret
# owned by it, and kubectl reads the same objects; list shows the run, in the state the
# operator's conditions say; --dry-run=server creates nothing;
# a second submit of the same run changes nothing; delete leaves nothing (the
# garbage collector takes the Secret with its owner). No operator runs here: what
# the operators do with the objects is not tested.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
crds="$(cd "$KTRAIN_SOURCE/.." && pwd)/shared/schemas/crds"
if [ ! -d "$crds" ]; then
  [ "${CI:-}" = true ] && fail "no CRDs at $crds"
  echo "SKIP no CRDs at $crds"; exit 77
fi
start_cluster --nodes 1 --gpus 8 --images "$work/images.json"
cd "$work"

project() {  # project TARGET FRAMEWORK [IMAGE_LINES]
  cat >ktrain.yaml <<YAML
name: tgt
image: registry.example.com/ml/tgt:1.0.0
${3:-}
train:
  target: $1
  framework: $2
  command: [python, train.py]
  nodes: 3
  gpus: 2
  shm: 1Gi
  volumes: [{emptyDir: {}, mount: /scratch}]
YAML
}

# Without the CRD: exit 2 before anything is sent.
project pytorchjob pytorch
set +e
out="$("$ktrain" submit --run-id nocrd 2>&1)"; rc=$?
set -e
[ "$rc" = 2 ] || fail "submit without the CRD: exit $rc, not 2: $out"
expect_contains "$out" "train.target pytorchjob:" "no CRD: train.target pytorchjob"
expect_contains "$out" "does not serve PyTorchJob (kubeflow.org/v1)" "no CRD: does not serve PyTorchJob (kub"
expect_contains "$out" "pytorchjobs.kubeflow.org is not installed" "no CRD: pytorchjobs.kubeflow.org is no"
expect_contains "$out" "Kubeflow Training Operator" "no CRD: Kubeflow Training Operator"
[ -z "$(kubectl get secrets,services -l ktrain.dev/run=tgt-nocrd -o name)" ] || fail "submit without the CRD sent objects"

cat >serve.yaml <<'YAML'
name: api
image: registry.example.com/ml/api:1.0.0
serve:
  target: kserve
  command: [python3, serve.py]
  port: 8080
  replicas: 2
  readiness: /healthz
YAML
set +e
out="$("$ktrain" serve -f serve.yaml 2>&1)"; rc=$?
set -e
[ "$rc" = 2 ] || fail "serve without the CRD: exit $rc, not 2: $out"
expect_contains "$out" "serve.target kserve:" "no CRD: serve names the target"
expect_contains "$out" "inferenceservices.serving.kserve.io is not installed" "no CRD: serve names the CRD"
[ -z "$(kubectl get services,poddisruptionbudgets -l ktrain.dev/run=api -o name)" ] || fail "serve without the CRD sent objects"

# The upstream CRDs, as a cluster admin installs them with the operators.
kubectl apply --server-side -f "$crds/kubeflow.org" -f "$crds/trainer.kubeflow.org" \
  -f "$crds/jobset.x-k8s.io" -f "$crds/leaderworkerset.x-k8s.io" -f "$crds/serving.kserve.io" >/dev/null
k8s_wait "the CRDs to be established" 60 k8s_crds_established
# Discovery catches up with new CRDs within a few seconds.
k8s_wait "discovery of kubeflow.org/v1" 30 sh -c "kubectl get --raw /apis/kubeflow.org/v1 | grep -q pytorchjobs"

check_target() {  # check_target TARGET KIND FRAMEWORK RENDEZVOUS [IMAGE_LINES]
  local target=$1 kind=$2 run="tgt-$1" lower
  lower="$(echo "$kind" | tr 'A-Z' 'a-z')"
  project "$target" "$3" "${5:-}"
  # A server dry run: checked by the API server, nothing kept.
  "$ktrain" submit --run-id "$target" --dry-run=server >/dev/null || fail "$target: --dry-run=server failed"
  [ -z "$(kubectl get "$lower" -l "ktrain.dev/run=$run" -o name)" ] || fail "$target: the dry run created objects"
  out="$("$ktrain" submit --run-id "$target" -o json 2>&1)" || fail "$target: submit failed: $out"
  # kubectl reads the same object, as rendered.
  kubectl get "$lower/$run" >/dev/null || fail "$target: kubectl does not find $lower/$run"
  expect_eq "$(kubectl get "$lower/$run" -o jsonpath='{.metadata.labels.ktrain\.dev/run}')" "$run" "$target: run label"
  "$ktrain" render --run-id "$target" -o json | python3 -c '
import json, sys, subprocess
kind, run = sys.argv[1], sys.argv[2]
docs = json.load(sys.stdin)
docs = docs.get("items", docs) if isinstance(docs, dict) else docs
want = [d for d in docs if d["kind"] == kind][0]
got = json.loads(subprocess.check_output(["kubectl", "get", kind.lower() + "/" + run, "-o", "json"]))
def sub(a, b, path):  # every field rendered is on the server as rendered (defaults may add)
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        for k, v in a.items():
            if k == "creationTimestamp": continue
            assert k in b, "%s.%s is missing on the server" % (path, k)
            sub(v, b[k], path + "." + k)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)): sub(x, y, "%s[%d]" % (path, i))
    else:
        assert a == b or str(a) == str(b), "%s: %r rendered, %r on the server" % (path, a, b)
sub(want["spec"], got["spec"], "spec")
' "$kind" "$run" || fail "$target: the server's object differs from the render"
  if [ "$4" = yes ]; then
    owner="$(kubectl get "secret/$run-rdzv" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')"
    expect_eq "$owner" "$kind/$run" "$target: the Secret's owner"
  else
    ! kubectl get "secret/$run-rdzv" >/dev/null 2>&1 || fail "$target: a Secret for a run without rendezvous"
  fi
  # list shows it, from the operator's object (no operator runs it here: Pending), and
  # the state the operator writes.
  "$ktrain" list -o json | python3 -c '
import json, sys
runs = [r for r in json.load(sys.stdin)["runs"] if r["name"] == sys.argv[1]]
assert len(runs) == 1, runs
assert runs[0]["state"] == "Pending", runs[0]
assert runs[0]["nodes"] == 3 or sys.argv[2] == "MPIJob", runs[0]
' "$run" "$kind" || fail "$target: list does not show the run as Pending"
  case "$kind" in
    PyTorchJob|TFJob|MPIJob) done_type=Succeeded ;;
    TrainJob) done_type=Complete ;;
    JobSet) done_type=Completed ;;
  esac
  kubectl patch "$lower/$run" --subresource=status --type=merge -p \
    '{"status":{"conditions":[{"type":"'"$done_type"'","status":"True","reason":"Done","message":"done","lastTransitionTime":"'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'"}]}}' >/dev/null ||
    fail "$target: kubectl patch of the status failed"
  expect_contains "$("$ktrain" list)" "Succeeded" "$target: list reads the operator's $done_type condition"
  # Again, the same run: nothing changes.
  before="$(kubectl get "$lower/$run" -o jsonpath='{.metadata.resourceVersion}')"
  "$ktrain" submit --run-id "$target" >/dev/null || fail "$target: submit again failed"
  expect_eq "$(kubectl get "$lower/$run" -o jsonpath='{.metadata.resourceVersion}')" "$before" "$target: a second submit leaves the object as it was"
  # delete: the object, and its Secret by garbage collection.
  "$ktrain" delete "$run" >/dev/null || fail "$target: delete failed"
  k8s_wait "$lower/$run to go" 30 sh -c "! kubectl get $lower/$run >/dev/null 2>&1"
  k8s_wait "secret/$run-rdzv to go" 60 sh -c "! kubectl get secret/$run-rdzv >/dev/null 2>&1"
  echo "ok   $target: submit, dry run, again, delete ($kind)"
}

# --wait of a PyTorchJob that no operator acts on: it waits, and says why on timeout.
project pytorchjob pytorch
set +e
out="$("$ktrain" submit --run-id wait --wait --timeout 3s 2>&1)"; rc=$?
set -e
expect_eq "$rc" 124 "submit --wait of a PyTorchJob without an operator times out"
expect_contains "$out" "waiting for run tgt-wait (Pending)" "the timeout names the run and its state"
out="$("$ktrain" status tgt-wait 2>&1)" || fail "status of the PyTorchJob failed: $out"
expect_contains "$out" "no operator has acted on the PyTorchJob yet" "status says that no operator acted on it"
"$ktrain" delete tgt-wait >/dev/null || fail "delete tgt-wait failed"

check_target pytorchjob PyTorchJob pytorch yes
# Elastic nodes (train.nodes: min..max): a PyTorchJob with the operator's elasticPolicy,
# Workers only, each launcher handing its workers to torchrun (c10d at the first Worker).
project pytorchjob pytorch
sed -i 's/^  nodes: 3$/  nodes: 2..4/' ktrain.yaml
"$ktrain" submit --run-id elastic --dry-run=server >/dev/null || fail "elastic: --dry-run=server failed"
"$ktrain" submit --run-id elastic >/dev/null || fail "elastic: submit failed"
expect_eq "$(kubectl get pytorchjob/tgt-elastic -o jsonpath='{.spec.elasticPolicy.minReplicas} {.spec.elasticPolicy.maxReplicas} {.spec.elasticPolicy.rdzvBackend} {.spec.elasticPolicy.maxRestarts} {.spec.pytorchReplicaSpecs.Worker.replicas}')" \
  "2 4 c10d 0 4" "elastic: the server's elasticPolicy and Workers"
[ -z "$(kubectl get pytorchjob/tgt-elastic -o jsonpath='{.spec.pytorchReplicaSpecs.Master}')" ] ||
  fail "elastic: the PyTorchJob has a Master"
kubectl get pytorchjob/tgt-elastic -o json | python3 -c '
import json, sys
c = json.load(sys.stdin)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
assert env["KTRAIN_ELASTIC"] == "2:4", env
assert env["KTRAIN_MASTER_ADDR"] == "tgt-elastic-worker-0", env
assert env["KTRAIN_RDZV_SECRET"]["secretKeyRef"].get("optional") is True, env
' || fail "elastic: the Workers' launcher environment"
"$ktrain" delete tgt-elastic >/dev/null || fail "elastic: delete failed"
sed -i 's/^  target: .*/  target: job/' ktrain.yaml
set +e
out="$("$ktrain" submit --run-id elasticjob 2>&1)"; rc=$?
set -e
expect_eq "$rc" 2 "elastic nodes on a plain Job: exit status"
expect_contains "$out" "ktrain.yaml:8:10: train.nodes: train.target job:" "elastic nodes on a plain Job: the line of train.nodes"
expect_contains "$out" "need train.target: pytorchjob" "elastic nodes on a plain Job: what to do"
[ -z "$(kubectl get jobs,secrets,services -l ktrain.dev/run=tgt-elasticjob -o name)" ] || fail "elastic nodes on a plain Job: objects sent"
echo "ok   pytorchjob: elastic nodes 2..4 (elasticPolicy, Workers only); a plain Job refuses them"

check_target tfjob TFJob tensorflow yes
check_target mpijob MPIJob none no
check_target jobset JobSet pytorch yes
check_target trainjob TrainJob pytorch yes "launcher: {inject: never}"

# serve.target kserve and lws: applied, owned, waited for as each target says it is
# ready (nothing plays KServe or LeaderWorkerSet here: the status is written as their
# controllers write it), deleted to nothing.
check_serve() {  # check_serve TARGET KIND CONDITION-STATUS-JSON STATUS-SHOWS
  local target=$1 kind=$2 lower
  lower="$(echo "$kind" | tr 'A-Z' 'a-z')"
  sed -i "s/^  target: .*/  target: $target/" serve.yaml
  "$ktrain" serve -f serve.yaml --no-wait >/dev/null || fail "$target: serve --no-wait failed"
  kubectl get "$lower/api" >/dev/null || fail "$target: kubectl does not find $lower/api"
  owner="$(kubectl get poddisruptionbudget/api -o jsonpath='{.metadata.ownerReferences[0].kind}')"
  expect_eq "$owner" "$kind" "$target: the disruption budget's owner"
  set +e
  out="$("$ktrain" serve -f serve.yaml --timeout 3s 2>&1)"; rc=$?
  set -e
  expect_eq "$rc" 124 "$target: serve times out while it is not ready"
  expect_contains "$out" "Waiting for $lower \"api\"" "$target: serve says what it waits for"
  (sleep 2; kubectl patch "$lower/api" --subresource=status --type=merge -p "$3" >/dev/null) &
  local patcher=$!
  out="$("$ktrain" serve -f serve.yaml --timeout 60s 2>&1)" || fail "$target: serve did not see it ready: $out"
  wait "$patcher" || fail "$target: kubectl patch of the status failed"
  expect_contains "$out" "api: $lower \"api\"" "$target: serve says it is ready"
  out="$("$ktrain" status api 2>&1)" || fail "$target: status failed: $out"
  expect_contains "$out" "$4" "$target: status shows the condition"
  scale_$target
  "$ktrain" delete api >/dev/null || fail "$target: delete failed"
  k8s_wait "$lower/api to go" 30 sh -c "! kubectl get $lower/api >/dev/null 2>&1"
  k8s_wait "the budget to go" 60 sh -c "! kubectl get poddisruptionbudget/api >/dev/null 2>&1"
  echo "ok   $target: serve, wait for ready, delete ($kind)"
}
# scale: KServe's own minReplicas/maxReplicas; a LeaderWorkerSet's groups through its
# scale subresource.
scale_kserve() {
  local field='{.spec.predictor.minReplicas} {.spec.predictor.maxReplicas}'
  out="$("$ktrain" scale api --replicas 3 2>&1)" || fail "kserve: scale --replicas failed: $out"
  expect_eq "$out" "inferenceservice.serving.kserve.io/api scaled (min 3, max 3)" "kserve: scale --replicas"
  expect_eq "$(kubectl get inferenceservice/api -o jsonpath="$field")" "3 3" "kserve: kubectl reads min 3, max 3"
  "$ktrain" scale api --max 5 >/dev/null || fail "kserve: scale --max failed"
  expect_eq "$(kubectl get inferenceservice/api -o jsonpath="$field")" "3 5" "kserve: scale --max keeps the minimum"
  set +e
  out="$("$ktrain" scale api --replicas 0 2>&1)"; rc=$?
  set -e
  expect_eq "$rc" 2 "kserve: scale --replicas 0 is refused"
  expect_contains "$out" "'ktrain delete api' removes it" "kserve: scale --replicas 0 says what to do"
  expect_eq "$(kubectl get inferenceservice/api -o jsonpath="$field")" "3 5" "kserve: a refused scale changes nothing"
}
scale_lws() {
  out="$("$ktrain" scale api --replicas 3 2>&1)" || fail "lws: scale --replicas failed: $out"
  expect_eq "$out" "leaderworkerset.leaderworkerset.x-k8s.io/api scaled" "lws: scale --replicas"
  expect_eq "$(kubectl get leaderworkerset/api -o jsonpath='{.spec.replicas}')" "3" "lws: kubectl reads 3 groups"
  set +e
  out="$("$ktrain" scale api --min 2 2>&1)"; rc=$?
  set -e
  expect_eq "$rc" 1 "lws: scale --min without an autoscaler fails"
  expect_contains "$out" "none controls leaderworkerset \"api\"" "lws: scale --min says why"
}
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
check_serve kserve InferenceService \
  '{"status":{"url":"http://api.default.example.com","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"'"$now"'"}]}}' \
  'Ready=True'
check_serve lws LeaderWorkerSet \
  '{"status":{"readyReplicas":2,"replicas":2,"conditions":[{"type":"Available","status":"True","reason":"AllGroupsReady","message":"All replicas are ready","lastTransitionTime":"'"$now"'"}]}}' \
  'Available=True: AllGroupsReady (All replicas are ready)'

# A user whose Role predates the targets (the kinds ktrain rendered before them) still
# deletes a plain run: the operators' kinds they may not list are none of theirs.
project job pytorch
# More GPUs than the node has: the pods stay Pending, so that no launcher takes the
# rendezvous ports that k8s_follow and local_backend use at the same time.
sed -i 's/^  gpus: 2$/  gpus: 16/' ktrain.yaml
"$ktrain" submit --run-id plain >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: before-targets}
rules:
- {apiGroups: [""], resources: [services, pods, events], verbs: [get, list, watch, create, patch, delete]}
- {apiGroups: [""], resources: [secrets], verbs: [create, delete]}
- {apiGroups: [batch], resources: [jobs], verbs: [get, list, watch, create, patch, delete]}
- {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, patch, delete]}
- {apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [get, list, watch, create, patch, delete]}
- {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get, list, watch, create, patch, delete]}
- {apiGroups: [scheduling.volcano.sh], resources: [podgroups], verbs: [get, list, watch, create, patch, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-before-targets}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: before-targets}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
YAML
KUBECONFIG="$ALICE_KUBECONFIG" "$ktrain" delete tgt-plain >/dev/null || fail "delete by a user without rights on the operators' kinds failed"
k8s_wait "job/tgt-plain to go" 30 sh -c "! kubectl get job/tgt-plain >/dev/null 2>&1"
echo "ok   a Role without the operators' kinds deletes a plain run"
echo "k8s_targets: all passed"
