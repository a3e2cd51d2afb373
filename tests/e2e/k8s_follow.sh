#!/usr/bin/env bash
# Following a multi-node run on the real control plane: examples/hello-ddp
# (2 nodes x 2 processes, a ring all-reduce over TCP between pods that find
# each other through the headless Service's DNS names) with submit --follow,
# then `logs -f` of a 2-node run that writes 3000 lines per rank, read line by
# line: nothing lost, nothing twice, every line under its rank, the same lines
# as kubectl logs; `logs -f` ending once every index of the Job has succeeded, without
# waiting for the Job controller to say so; and `status --watch` through to Succeeded.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s

# hello-ddp's image: python:3.12-slim (root, which the default security
# context refuses; the image ktrain build makes runs as its user) with the
# example's files in /workspace and ktrain-launch baked in.
cat >"$work/images.json" <<JSON
{
  "registry.example.com/ktrain/hello-ddp:*": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$(cd "$KTRAIN_SOURCE/examples/hello-ddp" && pwd)"}},
  "registry.example.com/ml/*": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$work/ws"}},
  $launcher_image
}
JSON
cat >"$work/ws/lines.sh" <<'SH'
i=1
while [ "$i" -le 3000 ]; do
  echo "line $i"
  if [ $((i % 500)) = 0 ]; then sleep 0.2; fi
  i=$((i + 1))
done
SH
start_cluster --nodes 2 --gpus 0 --images "$work/images.json"
cd "$work"

echo "== hello-ddp: submit --follow"
k submit -f "$KTRAIN_SOURCE/examples/hello-ddp/ktrain.yaml" --run-id a --follow
expect_eq "$rc" "0" "submit --follow of hello-ddp: exit 0 when the run succeeds"
for r in 0 1 2 3; do
  expect_contains "$out" "[rank $r] all-reduce OK: 32 elements summed over 4 workers (checksum 5280)" "rank $r's result, under its rank"
done
# Two pods, each at its own address (the scheduler may put both on one of the two nodes:
# nothing asks it to spread them).
expect_eq "$(kubectl get pods -l ktrain.dev/run=hello-ddp-a -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' | sort -u | wc -l)" \
  "2" "the two ranks ran in two pods, at two addresses"
expect_eq "$(kubectl get job hello-ddp-a -o jsonpath='{.status.succeeded}')" "2" "kubectl: both indexes succeeded"

echo "== logs -f of 2 nodes x 3000 lines"
cat >"$work/lines.yaml" <<'YAML'
name: lines
image: registry.example.com/ml/lines:1
train:
  command: [sh, lines.sh]
  framework: none
  nodes: 2
  gpus: 0
  preflight: "off"
YAML
k_ok "submit lines" submit -f lines.yaml --run-id a
k logs lines-a -f
expect_eq "$rc" "0" "logs -f ends with the run, exit 0"
printf '%s\n' "$out" >"$work/followed"
python3 - "$work/followed" <<'PY'
import sys
got = {0: [], 1: []}
for line in open(sys.argv[1]).read().split("\n")[:-1]:
    if not line.startswith("[rank "):
        continue
    r = int(line[6:line.index("]")])
    got[r].append(line[line.index("]") + 2:])
want = ["line %d" % i for i in range(1, 3001)]
for r, lines in got.items():
    if lines != want:
        missing = len(set(want) - set(lines))
        sys.exit("rank %d: %d lines, %d missing (%s), %d repeated" % (r, len(lines), missing, ", ".join(sorted(set(want) - set(lines))[:5]), len(lines) - len(set(lines))))
PY
echo "ok: logs -f: 3000 lines of each rank, each once, in order"
wait_state lines-a Succeeded 60
for r in 0 1; do
  pod="$(kubectl get pods -l ktrain.dev/run=lines-a,batch.kubernetes.io/job-completion-index=$r -o name)"
  expect_eq "$(kubectl logs "$pod" | grep -v '^ktrain-launch' | sed "s/^\[rank $r\] //" | md5sum)" \
    "$(grep "^\[rank $r\] " "$work/followed" | sed "s/^\[rank $r\] //" | md5sum)" "rank $r: the lines kubectl logs reads"
done

echo "== logs -f ends once every index has succeeded, before the Job controller says so"
# A Job managed by another controller: the Job controller leaves it alone, and the test
# plays that controller, one pod per index, but never writes the Job's Complete
# condition. logs -f follows while an index has not succeeded, and ends once each has.
cat >"$work/managed.yaml" <<'YAML'
name: managed
image: registry.example.com/ml/lines:1
train:
  command: [sh, -c, "echo unused"]
  framework: none
  nodes: 2
  gpus: 0
  preflight: "off"
scheduling:
  managedBy: example.com/elsewhere
YAML
k_ok "submit managed" submit -f managed.yaml --run-id a
job_uid="$(kubectl get job managed-a -o jsonpath='{.metadata.uid}')"
index_pod() {  # index_pod I: the Job's pod of index I, as its controller would make it
  kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: managed-a-$1
  labels: {ktrain.dev/run: managed-a, batch.kubernetes.io/job-completion-index: "$1"}
  annotations: {batch.kubernetes.io/job-completion-index: "$1"}
  ownerReferences:
  - {apiVersion: batch/v1, kind: Job, name: managed-a, uid: $job_uid, controller: true}
spec:
  restartPolicy: Never
  containers:
  - {name: train, image: "registry.example.com/ml/lines:1", command: [sh, -c, "echo index $1 done"]}
YAML
}
index_pod 0
timeout 120 "$ktrain" logs -f managed-a >"$work/managed.out" 2>"$work/managed.err" &
follower=$!
k8s_wait "index 0 to succeed" 60 sh -c "[ \"\$(kubectl get pod managed-a-0 -o jsonpath='{.status.phase}')\" = Succeeded ]"
k8s_wait "index 0's line" 30 grep -q "index 0 done" "$work/managed.out"
sleep 2
kill -0 "$follower" 2>/dev/null || fail "logs -f ended with index 1 not yet run: $(cat "$work/managed.out" "$work/managed.err")"
echo "ok: logs -f goes on while an index has not succeeded"
index_pod 1
rc=0
wait "$follower" || rc=$?
expect_eq "$rc" 0 "logs -f ends, exit 0, once each index has succeeded ($(cat "$work/managed.err"))"
expect_contains "$(cat "$work/managed.out")" "[node 1] index 1 done" "index 1's line, under its node"
expect_eq "$(kubectl get job managed-a -o jsonpath='{.status.conditions}')" "" \
  "the Job itself says nothing of its end (its controller is elsewhere)"

echo "== status --watch"
k_ok "submit lines b" submit -f lines.yaml --run-id b
k status lines-b --watch
expect_eq "$rc" "0" "status --watch ends when the run succeeds: exit 0"
expect_contains "$out" "Succeeded" "status --watch shows the end state"
echo "PASS"
