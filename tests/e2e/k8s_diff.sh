#!/usr/bin/env bash
# `ktrain diff` and `render --dry-run=server` on the real control plane: each object
# goes through the API server's server-side dry run (defaulting, admission, the merge
# with what is there; nothing kept). Before anything is applied every object is new
# (exit 1); after `render | kubectl apply` nothing differs (exit 0); a changed value is
# one hunk of the one object it is in, and kubectl diff agrees; what kubectl (another
# field manager) added is not a difference; a Job's template, which cannot change, is
# the server's refusal (exit 2); a ResourceQuota that refuses the Job is exit 2
# with the server's words and nothing printed on stdout; with no cluster, exit 3.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
start_cluster --nodes 1 --gpus 0 --images "$work/images.json"
cd "$work"
cat >app.yaml <<'YAML'
name: app
image: registry.example.com/ml/app:1.0.0
train:
  command: [sh, -c, 'sleep 600']
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
  env: {STEPS: "10"}
serve:
  command: [sh, -c, 'sleep 600']
  port: 8080
  replicas: 1
  env: {MODE: a}
YAML
objects=$("$ktrain" render -f app.yaml | grep -c '^kind:')

echo "== before anything: every object is new"
k diff -f app.yaml
expect_eq "$rc" 1 "diff of objects the cluster lacks: exit 1"
expect_eq "$(grep -c '^+++ ktrain .* (new)$' <<<"$out")" "$objects" "diff: each of the $objects objects is new"
expect_contains "$out" "+++ ktrain batch/v1 Job default/app-" "diff: the Job"
expect_contains "$out" "+kind: Deployment" "diff: the Deployment's lines, added"
expect_eq "$(kubectl get jobs,deployments -o name)" "" "diff created nothing"

echo "== render | kubectl apply, then diff: nothing"
# (The default run id comes from the project: a changed value is another run. A run
# kept up to date by re-applying names its id.)
"$ktrain" render -f app.yaml --run-id r | kubectl apply -f - >/dev/null
k diff -f app.yaml --run-id r
expect_eq "$rc" 0 "diff after apply: exit 0"
expect_eq "$out" "" "diff after apply: nothing printed"
expect_contains "$err" "no difference" "diff after apply: says so"
# What another field manager set is not ktrain's to change: no difference.
kubectl label deployment app team=vision >/dev/null
k diff -f app.yaml --run-id r
expect_eq "$rc" 0 "a label kubectl added: no difference"

echo "== a changed value: one hunk of the one object"
k diff -f app.yaml --run-id r --set serve.env.MODE=b
expect_eq "$rc" 1 "diff of a changed value: exit 1"
expect_eq "$(grep -c '^+++ ' <<<"$out")" 1 "diff: one object differs"
expect_contains "$out" "+++ ktrain apps/v1 Deployment default/app" "diff: the Deployment"
expect_eq "$(grep -E '^[-+] ' <<<"$out" | grep -v '^[-+]\{3\}' | tr -s ' ')" "$(printf -- '- value: a\n+ value: b')" \
  "diff: the value, from a to b"
expect_eq "$(grep -c '^@@ ' <<<"$out")" 1 "diff: one hunk"
# kubectl diff sees the same change (it exits 1 too).
set +e
"$ktrain" render -f app.yaml --run-id r --set serve.env.MODE=b | kubectl diff -f - >kdiff.out 2>kdiff.err; krc=$?
set -e
expect_eq "$krc" 1 "kubectl diff agrees there is a difference"
grep -q '^+ *value: b' kdiff.out || fail "kubectl diff: $(cat kdiff.out kdiff.err)"
expect_eq "$(kubectl get deployment app -o jsonpath='{.spec.template.spec.containers[0].env[?(@.name=="MODE")].value}')" a \
  "diff changed nothing"
# A Job's pod template cannot change: the server's refusal, exit 2.
k diff -f app.yaml --run-id r --set train.env.STEPS=20
expect_eq "$rc" 2 "diff of a changed Job template: the server refuses it (exit 2)"
expect_contains "$err" "the API server refuses Job/app-r" "the object refused"
expect_contains "$err" "field is immutable" "the server's words"
k diff -f app.yaml --run-id other
expect_eq "$rc" 1 "another run id: its objects are new"

echo "== render --dry-run=server"
k render -f app.yaml --dry-run=server
expect_eq "$rc" 0 "render --dry-run=server: exit 0"
expect_eq "$out" "$("$ktrain" render -f app.yaml)" "render --dry-run=server prints what render prints"
expect_contains "$err" "the API server accepts all $objects objects" "render --dry-run=server says so"
kubectl create namespace q >/dev/null
kubectl create quota nojobs -n q --hard=count/jobs.batch=0 >/dev/null
k -n q render -f app.yaml --dry-run=server
expect_eq "$rc" 2 "render --dry-run=server refused by a quota: exit 2"
expect_eq "$out" "" "render --dry-run=server refused: nothing printed"
expect_contains "$err" "the API server refuses Job/app-" "the refused object"
expect_contains "$err" "exceeded quota: nojobs" "the server's words"
k -n q diff -f app.yaml
expect_eq "$rc" 2 "diff refused by a quota: exit 2"
expect_eq "$(kubectl get all -n q -o name)" "" "nothing made in q"
k render -f app.yaml --dry-run=client
expect_eq "$rc" 2 "render --dry-run=client: a usage error"

echo "== no cluster"
set +e
env -u KUBECONFIG HOME="$work/nohome" "$ktrain" diff -f app.yaml >out 2>err; rc=$?
set -e
expect_eq "$rc" 3 "diff with no cluster: exit 3"
grep -q "none is configured" err || fail "diff with no cluster: $(cat err)"
echo "PASS"
