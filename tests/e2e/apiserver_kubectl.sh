#!/usr/bin/env bash
# The test API server against the real kubectl (both kubeconfig users): get,
# apply (client- and server-side), logs (-f, --timestamps), scale, rollout
# status, delete, and `get -o json` compared with what was sent.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
require_kubectl

work="$(mktemp -d /tmp/ktrain-kubectl.XXXXXX)"
cleanup() { stop_apiserver; rm -rf "$work"; }
cat >"$work/script.yaml" <<'YAML'
pods:
  - match: {job: train, index: 0}
    lines: ["hello from rank 0", "loss=0.5"]
    lineCount: 3
  - match: {job: train, index: 1}
    lineCount: 400
    lineRate: 2000
  - match: {job: slow}
    lineCount: 50
    lineRate: 25
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT

# Both users of the kubeconfig authenticate.
expect_eq "$(kubectl version -o json | json 'd["serverVersion"]["gitVersion"]')" "v1.32.0" "server version"
expect_eq "$(kubectl --context token get ns default -o jsonpath='{.status.phase}')" "Active" "token user"
expect_eq "$(kubectl --context cert get ns default -o jsonpath='{.status.phase}')" "Active" "client-cert user"
expect_contains "$(kubectl api-resources)" "podgroups" "discovery lists podgroups"
expect_contains "$(kubectl api-resources)" "horizontalpodautoscalers" "discovery lists hpa"

cat >"$work/job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  labels: {ktrain.dev/run: train}
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  backoffLimit: 0
  template:
    metadata:
      labels: {ktrain.dev/run: train}
    spec:
      restartPolicy: Never
      subdomain: train
      containers:
        - name: main
          image: registry.example/train:1
          args: ["--epochs", "3"]
          env: [{name: A, value: "1"}]
YAML

# Client-side apply creates; get -o json holds everything that was sent.
expect_eq "$(kubectl apply -f "$work/job.yaml")" "job.batch/train created" "apply creates"
kubectl get job train -o json >"$work/job.json"
python3 - "$work/job.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
sent = {
  "apiVersion": "batch/v1", "kind": "Job",
  "metadata": {"name": "train", "namespace": "default", "labels": {"ktrain.dev/run": "train"}},
  "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0,
           "template": {"metadata": {"labels": {"ktrain.dev/run": "train"}},
                        "spec": {"restartPolicy": "Never", "subdomain": "train",
                                 "containers": [{"name": "main", "image": "registry.example/train:1",
                                                 "args": ["--epochs", "3"], "env": [{"name": "A", "value": "1"}]}]}}}}
def sub(a, b, path="$"):
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        for k, v in a.items():
            assert k in b, f"{path}.{k} missing"
            sub(v, b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)): sub(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
sub(sent, got)
m = got["metadata"]
assert m["uid"] and m["resourceVersion"].isdigit() and m["creationTimestamp"].endswith("Z"), m
assert m["generation"] == 1
assert "kubectl.kubernetes.io/last-applied-configuration" in m["annotations"]
uid = m["uid"]
assert got["spec"]["selector"]["matchLabels"] == {"batch.kubernetes.io/controller-uid": uid}
labels = got["spec"]["template"]["metadata"]["labels"]
assert labels["batch.kubernetes.io/job-name"] == "train" and labels["job-name"] == "train"
assert labels["controller-uid"] == uid
print("ok: get -o json matches what apply sent")
PY

kubectl wait --for=condition=complete job/train --timeout=20s >/dev/null
echo "ok: job completes"
kubectl get job train -o json | python3 -c '
import json, sys
j = json.load(sys.stdin)
s = j["status"]
assert s["succeeded"] == 2 and s["completedIndexes"] == "0-1", s
assert s["startTime"] and s["completionTime"], s
types = [c["type"] for c in s["conditions"]]
assert "Complete" in types, types
print("ok: job status counts and conditions")'

# Indexed pods with the real labels, annotation, hostname and owner.
kubectl get pods -l job-name=train -o json | python3 -c '
import json, re, sys
items = json.load(sys.stdin)["items"]
assert len(items) == 2, len(items)
for p in items:
    m = p["metadata"]; idx = m["labels"]["batch.kubernetes.io/job-completion-index"]
    assert re.fullmatch(r"train-%s-[a-z0-9]{5}" % idx, m["name"]), m["name"]
    assert m["annotations"]["batch.kubernetes.io/job-completion-index"] == idx
    assert m["labels"]["ktrain.dev/run"] == "train"
    assert m["ownerReferences"][0]["kind"] == "Job" and m["ownerReferences"][0]["controller"]
    assert p["spec"]["hostname"] == "train-" + idx and p["spec"]["subdomain"] == "train"
    assert p["status"]["phase"] == "Succeeded"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
print("ok: indexed pods")'

pod0="$(kubectl get pods -l batch.kubernetes.io/job-completion-index=0,job-name=train -o jsonpath='{.items[0].metadata.name}')"
pod1="$(kubectl get pods -l batch.kubernetes.io/job-completion-index=1,job-name=train -o jsonpath='{.items[0].metadata.name}')"
expected="$(printf 'hello from rank 0\nloss=0.5\n%s line 1\n%s line 2\n%s line 3' "$pod0" "$pod0" "$pod0")"
expect_eq "$(kubectl logs "$pod0")" "$expected" "kubectl logs"
ts="$(kubectl logs "$pod0" --timestamps | sed -n 1p)"
if ! [[ "$ts" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z\ hello\ from\ rank\ 0$ ]]; then
  fail "timestamps: $ts"
fi
echo "ok: kubectl logs --timestamps"
expect_eq "$(kubectl logs "$pod1" --tail=2)" "$(printf '%s line 399\n%s line 400' "$pod1" "$pod1")" "kubectl logs --tail"
expect_eq "$(kubectl logs "$pod0" --limit-bytes=5)" "hello" "kubectl logs --limit-bytes"

# Following a running pod: every line, then the stream ends with the container.
cat >"$work/slow.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: slow}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:1.36}]
YAML
kubectl apply -f "$work/slow.yaml" >/dev/null
slow=""
for _ in $(seq 1 100); do
  slow="$(kubectl get pods -l job-name=slow --field-selector=status.phase=Running -o jsonpath='{.items[*].metadata.name}')"
  [ -n "$slow" ] && break
  sleep 0.05
done
[ -n "$slow" ] || fail "the slow pod never ran"
kubectl logs -f "$slow" >"$work/slow.log"
expect_eq "$(wc -l <"$work/slow.log" | tr -d ' ')" "50" "kubectl logs -f gets every line"
expect_eq "$(tail -1 "$work/slow.log")" "$slow line 50" "kubectl logs -f last line"
kubectl logs -f -l job-name=slow --prefix --timestamps --tail=-1 >"$work/prefix.log"
expect_eq "$(wc -l <"$work/prefix.log" | tr -d ' ')" "50" "kubectl logs -f -l --prefix"
expect_contains "$(head -1 "$work/prefix.log")" "[pod/$slow/main]" "prefix names the pod"

# Re-applying is a no-op; server-side apply keeps the object and its version.
rv="$(kubectl get job train -o jsonpath='{.metadata.resourceVersion}')"
expect_eq "$(kubectl apply -f "$work/job.yaml")" "job.batch/train unchanged" "apply again"
expect_eq "$(kubectl apply --server-side -f "$work/job.yaml")" "job.batch/train serverside-applied" "server-side apply"
expect_eq "$(kubectl get job train -o jsonpath='{.metadata.resourceVersion}')" "$rv" "no-op apply keeps resourceVersion"
expect_eq "$(kubectl get jobs -o name | sort | tr '\n' ' ')" "job.batch/slow job.batch/train " "no duplicate"

# Server-side apply creates, with managedFields for the manager.
sed 's/name: train$/name: ssa/' "$work/job.yaml" >"$work/ssa.yaml"
expect_eq "$(kubectl apply --server-side --field-manager=ktrain -f "$work/ssa.yaml")" "job.batch/ssa serverside-applied" "server-side apply creates"
expect_eq "$(kubectl get job ssa -o json --show-managed-fields | json '[e["manager"]+":"+e["operation"] for e in d["metadata"]["managedFields"]][0]')" "ktrain:Apply" "managedFields"

# A Deployment: rollout status, scale, status fields.
cat >"$work/deploy.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 4
YAML
kubectl apply -f "$work/deploy.yaml" >/dev/null
expect_contains "$(kubectl rollout status deployment/web --timeout=20s)" 'deployment "web" successfully rolled out' "rollout status"
expect_eq "$(kubectl scale deployment web --replicas=3)" "deployment.apps/web scaled" "kubectl scale"
kubectl rollout status deployment/web --timeout=20s >/dev/null
kubectl get deploy web -o json | python3 -c '
import json, sys
d = json.load(sys.stdin); s = d["status"]
assert d["spec"]["replicas"] == 3, d["spec"]
assert s["replicas"] == 3 and s["readyReplicas"] == 3 and s["availableReplicas"] == 3 and s["updatedReplicas"] == 3, s
assert s["observedGeneration"] == d["metadata"]["generation"] == 2, (s, d["metadata"])
assert {c["type"]: c["status"] for c in s["conditions"]} == {"Available": "True", "Progressing": "True"}
print("ok: deployment status after scale")'
expect_eq "$(kubectl get pods -l app=web -o name | wc -l | tr -d ' ')" "3" "three replicas"
expect_contains "$(kubectl get pods -l app=web -o jsonpath='{.items[0].metadata.labels.pod-template-hash}')" "" "pod-template-hash"
expect_eq "$(kubectl get --raw /apis/apps/v1/namespaces/default/deployments/web/scale | json 'd["spec"]["replicas"]')" "3" "scale subresource"
expect_eq "$(kubectl get hpa web -o jsonpath='{.spec.maxReplicas}')" "4" "hpa stored"
expect_contains "$(kubectl get svc web -o jsonpath='{.spec.clusterIP}')" "10.96." "service clusterIP"

# Human-readable tables.
expect_contains "$(kubectl get pods -l app=web)" "Running" "kubectl get pods table"
expect_contains "$(kubectl get jobs)" "Complete" "kubectl get jobs table"

# ConfigMap, compared. (`kubectl create` sends protobuf, which this server
# does not decode: generate with --dry-run and apply instead.)
kubectl create configmap cfg --from-literal=a=b --dry-run=client -o yaml | kubectl apply -f - >/dev/null
expect_eq "$(kubectl get cm cfg -o json | json 'd["data"]')" '{"a": "b"}' "configmap data"

# Delete: a Job takes its pods with it; a namespace takes everything in it.
expect_eq "$(kubectl delete job train)" 'job.batch "train" deleted' "kubectl delete job"
expect_eq "$(kubectl get pods -l job-name=train -o name | wc -l | tr -d ' ')" "0" "job pods deleted"
kubectl create namespace scratch --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n scratch create configmap x --from-literal=k=v --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl delete namespace scratch >/dev/null
expect_contains "$(kubectl get cm -n scratch x 2>&1 || true)" 'NotFound' "namespace delete removes its objects"
kubectl delete deployment web >/dev/null
expect_eq "$(kubectl get pods -l app=web -o name | wc -l | tr -d ' ')" "0" "deployment pods deleted"

# Answers with the metadata only (Accept: ...;as=PartialObjectMetadata), as the real
# server gives them for get, create and patch; an error stays a Status.
partial="Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
cms=/api/v1/namespaces/default/configmaps
out="$(api_curl -H "$partial" -H 'Content-Type: application/json' -X POST \
  --data-binary '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"meta","labels":{"a":"b"}},"data":{"k":"v"}}' "$cms")"
expect_eq "$(json 'd["kind"]+" "+d["apiVersion"]+" "+d["metadata"]["name"]+" "+d["metadata"]["labels"]["a"]+" "+str("data" in d)' <<<"$out")" \
  "PartialObjectMetadata meta.k8s.io/v1 meta b False" "create answers with the metadata only"
out="$(api_curl -H "$partial" -H 'Content-Type: application/apply-patch+yaml' -X PATCH \
  --data-binary '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"meta"},"data":{"k":"w"}}' "$cms/meta?fieldManager=t")"
expect_eq "$(json 'd["kind"]+" "+str("data" in d)+" "+str(bool(d["metadata"]["uid"]))' <<<"$out")" "PartialObjectMetadata False True" \
  "apply answers with the metadata only"
expect_eq "$(api_curl -H "$partial" "$cms/meta" | json 'd["kind"]')" "PartialObjectMetadata" "get answers with the metadata only"
expect_eq "$(api_curl "$cms/meta" | json 'd["kind"]+" "+d["data"]["k"]')" "ConfigMap w" "without it, the whole object (the apply applied)"
expect_eq "$(api_curl -H "$partial" "$cms/missing" | json 'd["kind"]+" "+d["reason"]')" "Status NotFound" "an error is still a Status"
echo "PASS"
