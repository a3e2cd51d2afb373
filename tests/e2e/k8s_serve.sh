#!/usr/bin/env bash
# serve and scale on the real control plane: the Deployment's pods run a small
# HTTP server that the node agent probes (readiness on /healthz), the real
# HorizontalPodAutoscaler controller holds the minimum, scale --replicas and
# --min/--max change what kubectl reads back, and the replicas answer.
#
# The Deployment is created with the autoscaler's minimum and serve waits for
# it; serving again leaves the replicas to the autoscaler.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s

# Pods share the host's network: each server listens on its own pod address
# (the pod's hostname resolves to it in its /etc/hosts), as in a pod network.
cat >"$work/ws/serve.py" <<'PY'
import http.server, os, socket
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("ok %s\n" % socket.gethostname()).encode()
        self.send_response(200 if self.path in ("/healthz", "/") else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
addr = socket.gethostbyname(socket.gethostname())
print("serving on %s:%s" % (addr, os.environ.get("PORT", "8080")), flush=True)
http.server.HTTPServer((addr, int(os.environ.get("PORT", "8080"))), H).serve_forever()
PY
start_cluster --nodes 2 --gpus 1 --images "$work/images.json"
cd "$work"
cat >"$work/web.yaml" <<'YAML'
name: web
image: registry.example.com/ml/web:1
serve:
  command: [python3, serve.py]
  port: 8080
  cpu: "1"
  memory: 1Gi
  autoscale: {min: 2, max: 4, cpu: 70}
  readiness: {path: /healthz, periodSeconds: 1}
YAML

# ready: the Deployment's ready replicas, as kubectl reads them.
ready() { kubectl get deployment web -o jsonpath='{.status.readyReplicas}'; }

echo "== serve"
k_ok "serve" serve -f web.yaml
expect_contains "$out" "web: rolled out" "serve waits for the rollout"
expect_eq "$(kubectl get deployment,service,hpa,pdb -l ktrain.dev/run=web -o name | sort | tr '\n' ' ')" \
  "deployment.apps/web horizontalpodautoscaler.autoscaling/web poddisruptionbudget.policy/web service/web " \
  "serve: Deployment, Service, HPA and PodDisruptionBudget"
uid="$(kubectl get deployment web -o jsonpath='{.metadata.uid}')"
for o in service/web hpa/web pdb/web; do
  expect_eq "$(kubectl get "$o" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].uid}')" \
    "Deployment/web $uid" "$o is owned by the Deployment"
done
expect_eq "$(kubectl get pdb web -o jsonpath='{.spec.maxUnavailable} {.status.expectedPods}')" "1 2" \
  "the disruption controller counts 2 pods under the budget"
expect_eq "$(kubectl get deployment web -o jsonpath='{.spec.template.spec.containers[0].startupProbe.httpGet.path} {.spec.template.spec.containers[0].startupProbe.failureThreshold}')" \
  "/healthz 180" "a startup probe by default (a model may load for minutes)"
expect_eq "$(kubectl get deployment web -o jsonpath='{.spec.template.spec.topologySpreadConstraints[0].topologyKey}')" \
  "kubernetes.io/hostname" "replicas spread across nodes"
expect_eq "$(kubectl get pods -l ktrain.dev/run=web -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)" \
  "2" "the scheduler put the 2 replicas on 2 nodes"
expect_eq "$out" "web: rolled out, 2 replicas available" "serve of autoscale min 2 returns with 2 available"
expect_eq "$(ready)" "2" "kubectl: 2 ready replicas when serve returns"
# (The API server refuses to proxy to loopback addresses, which pods have
# here: the test asks the pod at its address, as a node of a pod network can.)
for pod in $(kubectl get pods -l ktrain.dev/run=web -o jsonpath='{range .items[*]}{.metadata.name},{.status.podIP}{" "}{end}'); do
  expect_eq "$(curl -sS "http://${pod#*,}:8080/healthz")" "ok ${pod%,*}" "replica ${pod%,*} answers at its pod address"
done

echo "== list and status show the service"
k_ok "list" list
expect_eq "$(grep '^web ' <<<"$out" | tr -s ' ')" "web serve Running 2 0 $(grep '^web ' <<<"$out" | tr -s ' ' | cut -d' ' -f6)" "list: the service, its kind, state and replicas"
k_ok "list -o json" list -o json
expect_eq "$(json '[(r["kind"], r["state"], r["nodes"]) for r in d["runs"] if r["name"] == "web"]' <<<"$out")" \
  '[["serve", "Running", 2]]' "list -o json: kind serve"
k_ok "status web" status web
expect_contains "$out" "Service:    web" "status of a service"
expect_contains "$out" "Replicas:   2 x 0 GPUs" "status: its replicas"
expect_contains "$out" "Available=True" "status: the Deployment's conditions"
expect_eq "$(grep -c "^[01] .*Running" <<<"$out")" "2" "status: a row per replica, both running"

echo "== scale"
k_ok "scale --replicas 3" scale web --replicas 3
expect_eq "$out" "deployment.apps/web scaled" "scale --replicas"
expect_contains "$err" "the HorizontalPodAutoscaler \"web\" controls deployment \"web\" (min 2, max 4)" "scale warns about the HPA"
k8s_wait "3 ready replicas" 60 sh -c '[ "$(kubectl get deployment web -o jsonpath="{.status.readyReplicas}")" = 3 ]'
echo "ok: scale: kubectl reads 3 ready replicas"
k_ok "serve again" serve -f web.yaml --no-wait
expect_eq "$(kubectl get deployment web -o jsonpath='{.spec.replicas}')" "3" "serving again leaves the replicas to the autoscaler"
k_ok "scale --min --max" scale web --min 3 --max 4
expect_eq "$out" "horizontalpodautoscaler.autoscaling/web patched (min 3, max 4)" "scale --min --max"
expect_eq "$(kubectl get hpa web -o jsonpath='{.spec.minReplicas} {.spec.maxReplicas}')" "3 4" "kubectl reads the HPA's new range"
k scale web --min 9
expect_eq "$rc" "2" "scale --min above the maximum: exit 2"
k scale nosuch --replicas 1
expect_eq "$rc" "1" "scale of an unknown deployment: exit 1"
expect_contains "$err" "\"nosuch\" not found in namespace \"default\": no Deployment, InferenceService or LeaderWorkerSet of that name" "scale of an unknown deployment: message"
echo "== fewer than 2 replicas: no budget; the Deployment's deletion takes everything"
k_ok "serve with min 1" serve -f web.yaml --no-wait --set serve.autoscale.min=1
expect_eq "$(kubectl get pdb -l ktrain.dev/run=web -o name)" "" "serving with a minimum of 1 removes the budget (it would block drains)"
kubectl delete deployment web >/dev/null
k8s_wait "the garbage collector to remove the Service and the HPA" 60 sh -c \
  '[ -z "$(kubectl get service,hpa,pdb -l ktrain.dev/run=web -o name)" ]'
echo "ok: deleting the Deployment removed its Service and autoscaler (ownerReferences)"
echo "PASS"
