#!/usr/bin/env bash
# The cluster verbs on a real control plane (kube-apiserver, controller-manager
# and scheduler of Kubernetes 1.36, the node agent running pods as processes),
# with kubectl as the reference: submit (again with the same --run-id changes
# nothing; --dry-run=server), render | kubectl apply -f -, list, status (succeeded, a failed rank, pending
# for GPUs no node has, pending for a quota), the API server's warnings (PodSecurity), events (and status --events), logs (--rank, --tail, --grep, --save,
# --timestamps), submit --wait (0, 1, 124), a finished run's TTL (nothing left
# behind), delete, and the user RBAC grants nothing (exit 3, nothing created).
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s

# Each rank: "step I" (the launcher prefixes "[rank R] ") for I in 1..$STEPS, then per $MODE: exit 0,
# exit 3 (fail), or wait until stopped (hold).
cat >"$work/ws/work.sh" <<'SH'

i=1
while [ "$i" -le "${STEPS:-3}" ]; do echo "step $i"; i=$((i + 1)); done
case "$1" in
  fail) echo "loss is nan at step 7" >&2; exit 3 ;;
  hold) exec sleep 3600 ;;
esac
SH
start_cluster --nodes 2 --gpus 2 --images "$work/images.json" --backoff 1
cd "$work"

# project NAME MODE [GPUS] [NODES]
project() {
  cat >"$work/$1.yaml" <<YAML
name: $1
image: registry.example.com/ml/$1:1.0.0
train:
  command: [sh, work.sh, $2]
  framework: none
  nodes: ${4:-1}
  gpus: ${3:-0}
  preflight: "off"
  env:
    STEPS: "5"
YAML
}
project ok ok
project idem hold
project fail fail
project slow hold
project big ok 4
project quota ok 1

echo "== version: the server's, inside what the suite tests"
k_ok "version --server" version --server
case "${KTRAIN_K8S_BIN:-}" in
  "") expect_contains "$out" "server v1.36.3" "version --server: the newest tested release" ;;
esac
expect_eq "$err" "" "version --server: no warning for a tested release"
k_ok "version --server -o json" version --server -o json
expect_eq "$(json 'd["testedVersions"]["oldest"], d["testedVersions"]["newest"]' <<<"$out")" "('1.32', '1.36')" \
  "version -o json: the releases the suite tests"

echo "== submit"
k_ok "submit" submit -f ok.yaml --run-id a
expect_eq "$out" "ok-a" "submit prints the run name"
expect_eq "$(kubectl get job ok-a -o jsonpath='{.spec.completionMode} {.spec.completions} {.metadata.labels.ktrain\.dev/run}')" \
  "Indexed 1 ok-a" "kubectl sees the Indexed Job"
expect_eq "$(kubectl get job ok-a -o jsonpath='{.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}')" \
  "ktrain Apply" "server-side apply, field manager ktrain"
expect_eq "$(kubectl get service ok-a -o jsonpath='{.spec.clusterIP}')" "None" "the headless Service"
expect_eq "$(kubectl get secret ok-a-rdzv -o jsonpath='{.type}')" "Opaque" "the rendezvous Secret"
wait_state ok-a Succeeded 60
expect_eq "$(kubectl get job ok-a -o jsonpath='{.status.succeeded}')" "1" "kubectl: the Job succeeded"

echo "== grace period and checkpoint volume"
k_ok "submit with gracePeriod" submit -f ok.yaml --run-id g --set train.gracePeriod=45s \
  --set 'train.volumes=[{emptyDir: {}, mount: /ckpt, checkpoint: true}]'
expect_eq "$(kubectl get job ok-g -o jsonpath='{.spec.template.spec.terminationGracePeriodSeconds}')" "45" "kubectl: the pod's grace period"
expect_eq "$(kubectl get job ok-g -o jsonpath='{.spec.template.spec.containers[0].env[?(@.name=="KTRAIN_GRACE_PERIOD")].value} {.spec.template.spec.containers[0].env[?(@.name=="KTRAIN_CHECKPOINT_DIR")].value}')" \
  "40 /ckpt" "kubectl: the launcher's grace, 5 s less, and the checkpoint folder"
wait_state ok-g Succeeded 60
k_ok "delete ok-g" delete ok-g

echo "== submit again with the same run id"
k_ok "submit idem" submit -f idem.yaml --run-id a
wait_state idem-a Running 60
before="$(versions idem-a)"
token_before="$(kubectl get secret idem-a-rdzv -o jsonpath='{.data.token}')"
k_ok "submit idem again" submit -f idem.yaml --run-id a
expect_eq "$(versions idem-a)" "$before" "submit again: same uid and resourceVersion of Job, Service, Secret"
expect_eq "$(kubectl get secret idem-a-rdzv -o jsonpath='{.data.token}')" "$token_before" "submit again: the running pod's token is kept"
expect_eq "$(kubectl get jobs -l ktrain.dev/run=idem-a -o name)" "job.batch/idem-a" "submit again: one Job"

echo "== dry-run=server"
k_ok "dry-run=server" submit -f ok.yaml --run-id s --dry-run=server -o json
expect_eq "$(json 'd["objects"]' <<<"$out")" '["service/ok-s", "secret/ok-s-rdzv", "job.batch/ok-s"]' "dry-run=server: what the server accepted"
expect_eq "$(kubectl get job,service,secret -l ktrain.dev/run=ok-s -o name)" "" "dry-run=server created nothing"

echo "== render | kubectl apply -f -"
"$ktrain" render -f ok.yaml --run-id r | kubectl apply -f - >"$work/applied"
expect_eq "$(cat "$work/applied")" "service/ok-r created
job.batch/ok-r created" "kubectl applies the Service and the Job (no Secret: render prints none)"
wait_state ok-r Succeeded 60
echo "ok: the run that kubectl applied succeeded"
k_ok "delete ok-r" delete ok-r

echo "== render twice, apply twice, a rank restarted between: 2 nodes keyed on the Job's uid"
cat >"$work/pair.yaml" <<YAML
name: pair
image: registry.example.com/ml/pair:1.0.0
train:
  command: [sh, work.sh, hold]
  framework: none
  nodes: 2
  gpus: 0
  restarts: 3
  preflight: "off"
  env:
    STEPS: "2"
YAML
"$ktrain" render -f pair.yaml --run-id g >"$work/render1.yaml"
"$ktrain" render -f pair.yaml --run-id g >"$work/render2.yaml"
cmp -s "$work/render1.yaml" "$work/render2.yaml" || fail "two renders of the same project and run id differ"
grep -qE '^kind: Secret$|^  token: ' "$work/render1.yaml" && fail "the render holds secret material"
echo "ok: the same bytes twice, with no Secret nor token"
kubectl apply -f "$work/render1.yaml" >/dev/null
# pod_of RANK: the running pod of that rank.
pod_of() {
  kubectl get pods -l "ktrain.dev/run=pair-g,batch.kubernetes.io/job-completion-index=$1" \
    --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true
}
# both_ranks_started: both ranks' workers ran past the rendezvous (their step lines).
both_ranks_started() {
  local logs
  logs="$("$ktrain" logs pair-g 2>/dev/null || true)"
  grep -q '^\[rank 0\] step 2' <<<"$logs" && grep -q '^\[rank 1\] step 2' <<<"$logs" &&
    [ -n "$(pod_of 0)" ] && [ -n "$(pod_of 1)" ]
}
k8s_wait "both ranks of pair-g past the rendezvous" 60 both_ranks_started
first_rank1="$(pod_of 1)"
kubectl apply -f "$work/render2.yaml" >"$work/applied2"
expect_eq "$(cat "$work/applied2")" "service/pair-g unchanged
job.batch/pair-g unchanged" "applying the render again changes nothing"
expect_eq "$(kubectl get secret pair-g-rdzv -o name 2>/dev/null || true)" "" "no Secret: the pods key the rendezvous on their Job's uid"
# Rank 1 goes: node 0 hears it and stops, the Job makes both anew, and they meet again
# with the same key.
kubectl delete pod "$first_rank1" --wait=false >/dev/null
rejoined() {
  local p
  p="$(pod_of 1)"
  [ -n "$p" ] && [ "$p" != "$first_rank1" ] && kubectl logs "$p" 2>/dev/null | grep -q 'step 2'
}
# The new rank 1's workers start only past the rendezvous with node 0.
k8s_wait "a new rank 1 of pair-g past the rendezvous" 120 rejoined
second_rank0="$(pod_of 0)"
wait_state pair-g Running 30
echo "ok: after a rank restarted, the nodes met again (rank 0: $second_rank0)"
k_ok "delete pair-g" delete pair-g

echo "== list"
k_ok "list" list
expect_eq "$(awk 'NR>1 {print $1 "=" $2 "=" $3}' <<<"$out" | sort | tr '\n' ' ')" "idem-a=train=Running ok-a=train=Succeeded " "list: the runs, their kind and states"
k_ok "list -o json" list -o json
expect_eq "$(json 'sorted(r["name"] for r in d["runs"])' <<<"$out")" '["idem-a", "ok-a"]' "list -o json"
expect_eq "$(kubectl get jobs -l app.kubernetes.io/managed-by=ktrain -o name | sort | tr '\n' ' ')" \
  "job.batch/idem-a job.batch/ok-a " "kubectl lists the same Jobs"
k_ok "list -l" list -l 'ktrain.dev/run in (ok-a, other)' -o name
expect_eq "$out" "ok-a" "list -l: the server's label selector"
expect_eq "$(kubectl get jobs -l 'ktrain.dev/run in (ok-a, other)' -o name)" "job.batch/ok-a" "kubectl -l: the same"
k_ok "list -l !" list -l '!ktrain.dev/sweep,app.kubernetes.io/name=idem' -o name
expect_eq "$out" "idem-a" "list -l with a missing label and an equality"
k_ok "list --state" list --state running -o name
expect_eq "$out" "idem-a" "list --state running"
k_ok "list --sweep" list --sweep ok-a -o name
expect_eq "$out" "" "list --sweep of no sweep: nothing"
k list -l 'a b'
expect_eq "$rc" "2" "list -l with a bad selector: exit 2, before any request"

echo "== logs"
k_ok "logs" logs ok-a
expect_eq "$out" "$(for i in 1 2 3 4 5; do echo "[rank 0] step $i"; done)" "logs: the rank's lines, in order"
expect_eq "$out" "$(kubectl logs job/ok-a)" "logs: what kubectl logs prints"
k_ok "logs --tail 2" logs ok-a --tail 2
expect_eq "$out" "$(printf '[rank 0] step 4\n[rank 0] step 5')" "logs --tail 2"
k_ok "logs --timestamps" logs ok-a --tail 1 --timestamps
[[ "$out" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\ \[rank\ 0\]\ step\ 5$ ]] || fail "logs --timestamps: $out"
echo "ok: logs --timestamps"
k_ok "logs --grep --exclude" logs ok-a --grep 'step [2-4]' --exclude 'step 3'
expect_eq "$out" "$(printf '[rank 0] step 2\n[rank 0] step 4')" "logs --grep --exclude, from the cluster"
k_ok "logs --save" logs ok-a --save "$work/saved" --grep 'step [45]'
expect_eq "$(cat "$work/saved/rank-0.log")" "$(printf 'step 4\nstep 5')" "logs --save: rank 0's file"
k logs ok-a --node 3
expect_eq "$rc" "2" "logs --node 3 of a 1-node run: exit 2"

echo "== status: a failed rank"
k submit -f fail.yaml --run-id w --wait
expect_eq "$rc" "1" "--wait on a run that fails: exit 1"
[[ "$(head -n 1 <<<"$err")" =~ ^ktrain:\ run\ fail-w\ failed:\ node\ 0\ failed\ first\ \(pod\ fail-w-0-[a-z0-9]{5},\ exit\ code\ 3,\ Error\):\ rank\ 0\ exited\ 3$ ]] ||
  fail "--wait failure line: $err"
echo "ok: --wait names the rank that failed first, its exit code, reason and termination message"
expect_contains "$err" "loss is nan at step 7" "--wait shows that rank's last lines"
k_ok "status fail" status fail-w -o json
expect_eq "$(json '[d["state"], d["firstFailedRank"], d["ranks"][0]["exitCode"], d["ranks"][0]["reason"]]' <<<"$out")" \
  '["Failed", 0, 3, "Error"]' "status -o json: the failed rank"
expect_eq "$(kubectl get pods -l ktrain.dev/run=fail-w -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}')" \
  "3" "kubectl: the same exit code"
expect_contains "$(kubectl get pods -l ktrain.dev/run=fail-w -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}')" \
  "rank 0 exited 3" "the launcher's termination message, from /dev/termination-log"

echo "== status: pending"
k_ok "submit big" submit -f big.yaml --run-id a
k8s_wait "the scheduler to refuse big-a" 60 sh -c \
  "kubectl get pods -l ktrain.dev/run=big-a -o jsonpath='{.items[0].status.conditions[0].reason}' | grep -qx Unschedulable"
sched="$(kubectl get pods -l ktrain.dev/run=big-a -o jsonpath='{.items[0].status.conditions[0].message}')"
k_ok "status big" status big-a
expect_contains "$out" "State:      Pending" "status: pending"
expect_contains "$out" "Why:        rank 0 cannot be scheduled: $sched" "status: why it waits, in the scheduler's words"
expect_contains "$sched" "2 Insufficient nvidia.com/gpu" "the scheduler's reason: GPUs"

# The Cluster Autoscaler answers an unschedulable pod with an event on it; posted here as
# it posts them (core/v1 Event, source cluster-autoscaler), read back by status.
big_pod="$(kubectl get pods -l ktrain.dev/run=big-a -o jsonpath='{.items[0].metadata.name}')"
ca_event() {  # ca_event NAME REASON MESSAGE FIRST
  kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: Event
metadata: {name: $1, namespace: default}
involvedObject: {kind: Pod, name: $big_pod, namespace: default, apiVersion: v1}
reason: $2
message: "$3"
type: Normal
source: {component: cluster-autoscaler}
firstTimestamp: "$4"
lastTimestamp: "$4"
count: 1
YAML
}
ca_event big-a-up TriggeredScaleUp "pod triggered scale-up: [{gpu-pool 1->2 (max: 4)}]" \
  "$(date -u -d '-3 min' +%Y-%m-%dT%H:%M:%SZ)"
k_ok "status big, scaling up" status big-a
expect_contains "$out" "rank 0 waits for a node: the Cluster Autoscaler is adding a node to group gpu-pool (1 -> 2 nodes, at most 4), for 3m" \
  "status: waiting for the Cluster Autoscaler, with the group and how long"
ca_event big-a-no NotTriggerScaleUp "pod didn't trigger scale-up: 1 max node group size reached" \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
k_ok "status big, no scale-up" status big-a -o json
expect_contains "$out" "no node group of the Cluster Autoscaler can fit it: 1 max node group size reached (scheduler: " \
  "status: the autoscaler's newest answer, with its reasons"

kubectl create namespace team >/dev/null
kubectl create quota gpus -n team --hard=requests.nvidia.com/gpu=0 >/dev/null
k_ok "submit quota" -n team submit -f quota.yaml --run-id a
k8s_wait "the quota to refuse quota-a's pod" 60 sh -c \
  "kubectl get events -n team --field-selector reason=FailedCreate -o name | grep -q ."
quota_msg="$(kubectl get events -n team --field-selector reason=FailedCreate -o jsonpath='{.items[0].message}')"
expect_contains "$quota_msg" "exceeded quota: gpus" "the real server refuses the pod for the quota"
k_ok "status quota" -n team status quota-a
expect_contains "$out" "State:      Pending" "status: pending for a quota"
expect_contains "$out" "exceeded quota: gpus" "status: why, with the quota named"

echo "== the API server's warnings: a namespace that warns of PodSecurity restricted"
kubectl create namespace psa >/dev/null
kubectl label namespace psa pod-security.kubernetes.io/warn=restricted >/dev/null
project rooted ok
printf 'security:\n  runAsUser: 0\n  runAsNonRoot: false\n' >>rooted.yaml
k_ok "submit as root where PodSecurity warns" -n psa submit -f rooted.yaml --run-id a
expect_contains "$err" 'ktrain: warning: the API server warns: would violate PodSecurity "restricted:latest": runAsNonRoot != true' \
  "submit: the real server's PodSecurity warning, as kubectl shows it"
expect_eq "$(grep -c 'would violate PodSecurity' <<<"$err")" 1 "submit: the warning once"
project plain ok
k_ok "submit of ktrain's defaults where PodSecurity warns" -n psa submit -f plain.yaml --run-id a
[[ $err != *"API server warns"* ]] || fail "ktrain's default pods are not restricted: $err"
echo "ok: the API server's warnings are shown; ktrain's default pods meet PodSecurity restricted"
k_ok "delete rooted-a" -n psa delete rooted-a
k_ok "delete plain-a" -n psa delete plain-a

echo "== events: the scheduler's, the autoscaler's and the quota's, oldest first, explained"
k_ok "events of the pending run" events big-a
expect_contains "$out" "Warning  FailedScheduling" "events: the real scheduler's FailedScheduling"
expect_contains "$out" "pod/$big_pod" "events: the pod it is about"
expect_contains "$out" "-> no node has the GPUs free that a pod asks for" "events: FailedScheduling explained"
expect_contains "$out" "-> the Cluster Autoscaler is adding a node for the pod" "events: TriggeredScaleUp explained"
k_ok "events -o json" events big-a -o json
expect_eq "$(json '[e["reason"] for e in d["events"] if e["reason"] in ("TriggeredScaleUp", "NotTriggerScaleUp")]' <<<"$out")" \
  '["TriggeredScaleUp", "NotTriggerScaleUp"]' "events: oldest first"
expect_eq "$(json 'sorted(e["time"] for e in d["events"]) == [e["time"] for e in d["events"]]' <<<"$out")" "True" \
  "events: in time order"
expect_eq "$(json '[e["source"] for e in d["events"] if e["reason"] == "FailedScheduling"][:1]' <<<"$out")" \
  '["default-scheduler"]' "events: who said it"
k_ok "status --events" status big-a --events
expect_contains "$out" "Events:" "status --events: the section"
expect_contains "$out" "FailedScheduling" "status --events: the scheduler's event"
k_ok "events of the run a quota refuses" -n team events quota-a
expect_contains "$out" "FailedCreate" "events: the Job controller's FailedCreate"
expect_contains "$out" "-> the namespace's ResourceQuota refuses the pod" "events: the quota explained"
k events nosuch-a
expect_eq "$rc" 1 "events of a run that does not exist: exit 1"

echo "== submit --wait --timeout"
k submit -f slow.yaml --run-id w --wait --timeout 3s
expect_eq "$rc" "124" "--wait --timeout on a run that goes on: exit 124"
expect_contains "$err" "timed out after 3s waiting for run slow-w" "--timeout message"

echo "== list -w"
# One JSON line per change: none yet, then the run as it is created and as it ends.
"$ktrain" list -w -o json -l ktrain.dev/run=ok-w >"$work/watch" 2>&1 &
watch_pid=$!
k8s_wait "list -w's first list" 30 grep -qx '{"runs":\[\]}' "$work/watch"
k_ok "submit ok-w" submit -f ok.yaml --run-id w
k8s_wait "list -w to show ok-w succeeded" 90 grep -q '"name":"ok-w".*"state":"Succeeded"' "$work/watch"
kill "$watch_pid"; wait "$watch_pid" 2>/dev/null || true
grep -q '"name":"ok-w","kind":"train","namespace":"default","state":"\(Pending\|Running\)"' "$work/watch" ||
  fail "list -w: no line with ok-w before it ended: $(cat "$work/watch")"
echo "ok: list -w shows the run come and end"
k_ok "delete ok-w" delete ok-w

echo "== the user RBAC grants nothing"
set +e
KUBECONFIG="$NOBODY_KUBECONFIG" "$ktrain" submit -f ok.yaml --run-id f >"$work/out" 2>"$work/err"
rc=$?
set -e
expect_eq "$rc" "3" "submit as a user without rights: exit 3"
expect_contains "$(cat "$work/err")" "forbidden" "submit as nobody: the server's word"
expect_contains "$(cat "$work/err")" 'User "nobody"' "submit as nobody: names the user"
expect_eq "$(kubectl get job,service,secret -l ktrain.dev/run=ok-f -o name)" "" "nothing created for the forbidden user"
set +e
KUBECONFIG="$NOBODY_KUBECONFIG" kubectl get jobs >/dev/null 2>&1
krc=$?
KUBECONFIG="$NOBODY_KUBECONFIG" "$ktrain" list >/dev/null 2>"$work/err"
rc=$?
set -e
expect_eq "$krc" "1" "kubectl as nobody is refused too"
expect_eq "$rc" "3" "list as nobody: exit 3"

echo "== a finished run's TTL"
# The Service is owned by the Job and the Secret by the Service: when the TTL
# controller deletes the finished Job, the garbage collector takes them too.
cat >"$work/short.yaml" <<'YAML'
name: short
image: registry.example.com/ml/short:1
train:
  command: [sh, work.sh, ok]
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
  ttl: 1s
YAML
k_ok "submit short" submit -f short.yaml --run-id a
uid="$(kubectl get job short-a -o jsonpath='{.metadata.uid}')"
expect_eq "$(kubectl get service short-a -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].uid}')" \
  "Job/short-a/$uid" "the Service is owned by the Job"
suid="$(kubectl get service short-a -o jsonpath='{.metadata.uid}')"
expect_eq "$(kubectl get secret short-a-rdzv -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].uid}')" \
  "Service/short-a/$suid" "the Secret is owned by the Service"
k8s_wait "the TTL controller to delete short-a's Job" 90 sh -c "! kubectl get job short-a >/dev/null 2>&1"
echo "ok: the TTL controller deleted the finished Job"
k8s_wait "the garbage collector to take short-a's Service and Secret" 60 sh -c \
  "[ -z \"\$(kubectl get service,secret -l ktrain.dev/run=short-a -o name)\" ]"
echo "ok: nothing of the run is left after its TTL"

echo "== delete"
echo "== stop and resume"
k_ok "stop" stop idem-a
expect_eq "$out" "stopped idem-a" "stop prints what it stopped"
expect_eq "$(kubectl get job idem-a -o jsonpath='{.spec.suspend} {.metadata.labels.ktrain\.dev/stopped}')" "true true" "kubectl: the Job is suspended, and marked as stopped"
k8s_wait "idem-a's pods to go" 60 sh -c "[ -z \"\$(kubectl get pods -l ktrain.dev/run=idem-a -o name)\" ]"
k8s_wait "the Job's Suspended condition" 30 sh -c \
  "kubectl get job idem-a -o jsonpath='{.status.conditions[?(@.type==\"Suspended\")].status}' | grep -qx True"
k_ok "status stopped" status idem-a
expect_contains "$out" "State:      Stopped" "status: stopped"
expect_contains "$out" "Why:        stopped by 'ktrain stop' at " "status: why, and when"
expect_contains "$out" "'ktrain resume idem-a' starts it again" "status: how to go on"
expect_eq "$(kubectl get job,service,secret -l ktrain.dev/run=idem-a -o name | wc -l)" "3" "stop keeps the Job, the Service and the Secret"
k_ok "list --state stopped" list --state stopped -o name
expect_eq "$out" "idem-a" "list --state stopped"
k_ok "stop again" stop idem-a
expect_eq "$out" "idem-a is stopped already" "stop of a stopped run: nothing to do, exit 0"
k stop ok-a
expect_eq "$rc" "1" "stop of a run that has ended: exit 1"
expect_contains "$err" 'run "ok-a" has ended (Succeeded): nothing to stop' "stop of an ended run says so"
k_ok "resume" resume idem-a
expect_eq "$out" "resumed idem-a" "resume prints what it resumed"
expect_eq "$(kubectl get job idem-a -o jsonpath='{.spec.suspend}/{.metadata.labels.ktrain\.dev/stopped}')" "false/" "kubectl: resumed, the mark gone"
wait_state idem-a Running 60
echo "ok: the resumed run runs again"
k_ok "resume again" resume idem-a
expect_eq "$out" "idem-a is not stopped" "resume of a running run: nothing to do, exit 0"

k_ok "delete" delete idem-a
expect_eq "$out" "deleted idem-a" "delete prints what it deleted"
expect_eq "$(kubectl get job,service,secret -l ktrain.dev/run=idem-a -o name)" "" "delete: Job, Service and Secret gone"
k8s_wait "idem-a's pod to go" 60 sh -c "[ -z \"\$(kubectl get pods -l ktrain.dev/run=idem-a -o name)\" ]"
echo "ok: delete: the pod was stopped and is gone"
k delete idem-a
expect_eq "$rc" "1" "delete of a deleted run: exit 1"
k_ok "delete the rest" delete ok-a fail-w slow-w big-a
k_ok "list after delete" list -o name
expect_eq "$out" "" "no runs left"
echo "PASS"
