#!/usr/bin/env bash
# The oldest Kubernetes the project supports, 1.32.13 (../shared/k8s), in one short
# group; the other k8s_* tests run on the newest tested, 1.36.3 (../shared/k8s-next).
# On the real 1.32 control plane with the node agent: submit --follow of a 2-node run
# (logs -f of both ranks through ktrain-launch), status, exec (the API server takes the
# WebSocket to the node, whose agent serves none), delete leaving nothing, and
# `ktrain version` naming the server's version; a project's spec.managedBy (served
# from 1.32) kept by the server and left alone by its Job controller.
set -euo pipefail
export KTRAIN_K8S_VERSION=1.32
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
cat >"$work/ws/work.sh" <<'SH'
echo "rank $KTRAIN_RANK of $KTRAIN_WORLD_SIZE"
exec sleep "${HOLD:-0}"
SH
start_cluster --nodes 2 --gpus 0 --images "$work/images.json"
cd "$work"

k_ok "version" version --server
expect_contains "$out" "server v1.32.13" "ktrain version names the server's version"

cat >old.yaml <<'YAML'
name: old
image: registry.example.com/ml/old:1.0.0
train:
  command: [sh, work.sh]
  framework: none
  nodes: 2
  gpus: 0
  preflight: "off"
YAML
echo "== submit --follow: both ranks' lines"
k_ok "submit --follow" submit -f old.yaml --run-id a --follow
expect_contains "$out" "[rank 0] rank 0 of 2" "rank 0's line"
expect_contains "$out" "[rank 1] rank 1 of 2" "rank 1's line"
k_ok "status" status old-a -o json
expect_eq "$(json 'd["state"], len(d["ranks"])' <<<"$out")" "('Succeeded', 2)" "status: succeeded, 2 ranks"

echo "== rendered for the server's release: a MultiKueue run is left to its controller"
# 1.32 serves Job spec.managedBy (beta, on): the Job controller leaves the Job alone.
cat >mk.yaml <<'YAML'
name: mk
image: registry.example.com/ml/old:1.0.0
train:
  command: [sh, work.sh]
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
scheduling:
  queue: team-a
  managedBy: kueue.x-k8s.io/multikueue
YAML
k_ok "submit a MultiKueue run" submit -f mk.yaml --run-id a
expect_eq "$(kubectl get job mk-a -o jsonpath='{.spec.managedBy} {.spec.podReplacementPolicy}')" \
  "kueue.x-k8s.io/multikueue Failed" "the server kept spec.managedBy"
sleep 3
expect_eq "$(kubectl get pods -l ktrain.dev/run=mk-a -o name)" "" "no pod: the Job controller leaves it to MultiKueue"
k_ok "delete mk-a" delete mk-a

echo "== exec reaches the node"
sed -i 's/^  preflight: "off"$/  preflight: "off"\n  env: {HOLD: "60"}/' old.yaml
k_ok "submit a holding run" submit -f old.yaml --run-id h
wait_state old-h Running 60
k exec old-h -- true
case "$err" in *orbidden*) fail "exec is forbidden: $err" ;; esac
expect_eq "$rc" 1 "exec: refused by the node agent (it serves none), exit 1"
expect_contains "$err" "unable to upgrade connection" "exec went through the API server to the node"

echo "== delete leaves nothing"
k_ok "delete old-a" delete old-a
k_ok "delete old-h" delete old-h
k8s_wait "nothing of the runs to be left" 60 sh -c \
  "[ -z \"\$(kubectl get pods,services,jobs,secrets -l 'ktrain.dev/run in (old-a,old-h)' -o name 2>/dev/null)\" ]"
echo "PASS"
