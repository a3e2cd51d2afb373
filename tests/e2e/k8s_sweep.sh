#!/usr/bin/env bash
# A 200-run sweep on the real control plane: submit sends 600 objects (a Secret,
# a headless Service and a Job per run), each Service and Secret owned by its
# Job; `delete --all` leaves nothing (no Job, Service, Secret or pod of the
# sweep). The Jobs are suspended (a patch) so that no pod runs: the test is of
# the objects, not of 200 processes on this machine. Then examples/sweep as it
# is: its image (train.py, no ktrain-launch) gets the launcher injected, and
# its four runs complete.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
python3 - "$work/images.json" "$(cd "$KTRAIN_SOURCE/examples/sweep" && pwd)" <<'PY'
import json, sys
images = json.load(open(sys.argv[1]))
# First: the agent takes the first pattern that matches, and ml/* would.
images = {"registry.example.com/ml/sweep-demo:*": {"user": "", "workdir": "/workspace", "files": {"/workspace": sys.argv[2]}}, **images}
json.dump(images, open(sys.argv[1], "w"))
PY
start_cluster --nodes 1 --gpus 0 --images "$work/images.json"
cd "$work"

lrs=$(python3 -c 'print(", ".join("\"%d\"" % i for i in range(20)))')
cat >"$work/grid.yaml" <<YAML
name: grid
image: registry.example.com/ml/grid:1
train:
  command: [sh, -c, "echo lr={lr} batch={batch}"]
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
  sweep:
    lr: [$lrs]
    batch: ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
patches:
  Job: {spec: {suspend: true}}
YAML
count() {  # count KIND: objects of the sweep
  kubectl get "$1" -l ktrain.dev/sweep=grid-s -o name | wc -l
}

echo "== submit a sweep of 200 runs"
start=$(date +%s.%N)
k_ok "submit the sweep" submit -f grid.yaml --run-id s
echo "submit of 200 runs (600 objects and 400 owner patches): $(python3 -c "import sys; print('%.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")"
expect_eq "$(wc -l <<<"$out")" "200" "submit prints the 200 run names"
expect_eq "$(grep -c '^ktrain submit: [0-9]* of 600 objects sent' <<<"$err")" "4" "submit, piped: a progress line at each quarter"
expect_contains "$err" "ktrain submit: 600 of 600 objects sent" "submit: the last progress line says all were sent"
expect_eq "$(count jobs) $(count services) $(count secrets)" "200 200 200" "a Job, a Service and a Secret per run"
expect_eq "$(kubectl get jobs -l ktrain.dev/sweep=grid-s -o jsonpath='{range .items[*]}{.spec.suspend}{"\n"}{end}' | sort -u)" "true" "every Job suspended by the patch"
# Every Service is owned by the Job of its run (same name, same uid), every Secret by
# the run's Service.
python3 - <<PY || fail "ownerReferences"
import json, subprocess
def items(kind):
    return json.loads(subprocess.check_output(["kubectl", "get", kind, "-l", "ktrain.dev/sweep=grid-s", "-o", "json"]))["items"]
jobs = {j["metadata"]["name"]: j["metadata"]["uid"] for j in items("jobs")}
services = {}
for o in items("services"):
    run = o["metadata"]["labels"]["ktrain.dev/run"]
    services[run] = o["metadata"]["uid"]
    refs = o["metadata"].get("ownerReferences") or []
    assert [(r["kind"], r["name"], r["uid"]) for r in refs] == [("Job", run, jobs[run])], ("service", o["metadata"]["name"], refs)
for o in items("secrets"):
    run = o["metadata"]["labels"]["ktrain.dev/run"]
    refs = o["metadata"].get("ownerReferences") or []
    assert [(r["kind"], r["name"], r["uid"]) for r in refs] == [("Service", run, services[run])], ("secret", o["metadata"]["name"], refs)
PY
echo "ok: each run's Service is owned by its Job, its Secret by the Service"
k_ok "status of a run of the sweep" status grid-s-137
expect_contains "$out" "the Job is suspended" "status explains a suspended run"

echo "== delete --all"
start=$(date +%s.%N)
k_ok "list --sweep" list --sweep grid-s -o name
expect_eq "$(sort <<<"$out" | tr '\n' ' ')" "$(kubectl get jobs -l ktrain.dev/sweep=grid-s -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | tr '\n' ' ')" \
  "list --sweep: the 200 runs kubectl lists for the sweep's label"
k_ok "delete the sweep" delete --all grid-s
echo "delete --all of 200 runs: $(python3 -c "import sys; print('%.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")"
expect_eq "$(count jobs) $(count services) $(count secrets) $(count pods)" "0 0 0 0" "nothing of the sweep is left"
k_ok "list" list -o name
expect_eq "$out" "" "list: no runs"

echo "== examples/sweep, as it is"
k_ok "validate the example" validate -f "$KTRAIN_SOURCE/examples/sweep/ktrain.yaml"
expect_contains "$out" "launcher injected by an init container" "its image lacks the launcher: injected"
k_ok "submit the example" submit -f "$KTRAIN_SOURCE/examples/sweep/ktrain.yaml" --run-id e --wait --timeout 120s
for run in lr-sweep-e-0 lr-sweep-e-1 lr-sweep-e-2 lr-sweep-e-3; do
  k_ok "logs $run" logs "$run"
  expect_contains "$out" "final: lr=" "$run trained to the end"
done
k_ok "logs of the last run" logs lr-sweep-e-3
expect_contains "$out" "final: lr=0.01 batch=128" "the last combination: lr 0.01, batch 128"
k_ok "delete the example's runs" delete --all lr-sweep-e

echo "== examples/sweep with train.sweep.parallel: 2"
k_ok "submit, 2 at once" submit -f "$KTRAIN_SOURCE/examples/sweep/ktrain.yaml" --run-id p \
  --set train.sweep.parallel=2 --wait --timeout 180s
expect_contains "$err" "2 runs of lr-sweep-p wait for a place (train.sweep.parallel: 2)" "submit says that two runs wait"
expect_contains "$err" "ktrain: started lr-sweep-p-3 (0 still wait; at most 2 at once)" "submit started the last one"
kubectl get jobs -l ktrain.dev/sweep=lr-sweep-p -o json | python3 -c '
import json, sys
from datetime import datetime
jobs = json.load(sys.stdin)["items"]
assert len(jobs) == 4, len(jobs)
ev = []
for j in jobs:
    st = j["status"]
    t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
    # completionTime comes after the SuccessCriteriaMet condition (the pods end first).
    end = st.get("completionTime") or next(c["lastTransitionTime"] for c in st["conditions"] if c["type"] == "SuccessCriteriaMet")
    ev += [(t(st["startTime"]), 1), (t(end), -1)]
now = peak = 0
for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
    now += d
    peak = max(peak, now)
assert peak <= 2, f"{peak} Jobs ran at once"
' || fail "kubectl: more than two Jobs of the sweep ran at once"
echo "ok: kubectl: at most two of the sweep's Jobs ran at once"
k_ok "status SWEEP" status lr-sweep-p -o json
expect_eq "$(json '[d["counts"], list(d["runs"][3]["params"].items()), d["runs"][3]["exitCode"]]' <<<"$out")" \
  '[{"Succeeded": 4}, [["lr", "0.01"], ["batch", "128"]], 0]' "status SWEEP -o json: counts, each run's combination (in file order) and exit code"
k_ok "status SWEEP table" status lr-sweep-p
expect_contains "$out" "Runs:       4 (4 Succeeded)" "status SWEEP: the counts"
uid=$(kubectl get job lr-sweep-p-3 -o jsonpath='{.metadata.uid}')
k_ok "submit the sweep again" submit -f "$KTRAIN_SOURCE/examples/sweep/ktrain.yaml" --run-id p --set train.sweep.parallel=2
expect_eq "$(kubectl get job lr-sweep-p-3 -o jsonpath='{.metadata.uid} {.spec.suspend} {.metadata.labels.ktrain\.dev/queued}')" \
  "$uid false " "submit again: a run that was started is not made to wait again"
k_ok "delete the parallel sweep" delete --all lr-sweep-p

echo "== sweep.parallel with a Kueue queue: the queue label comes when a run is released"
cat >"$work/kq.yaml" <<YAML
name: kq
image: registry.example.com/ml/kq:1
train:
  command: [sh, -c, "echo x={x}"]
  framework: none
  preflight: "off"
  sweep: {x: ["1", "2"], parallel: 1}
scheduling: {queue: team-q}
YAML
k_ok "render, waiting run" render -f kq.yaml --run-id r -o json
expect_eq "$(json '[[o["metadata"].get("labels", {}).get("kueue.x-k8s.io/queue-name"), o["metadata"].get("annotations", {}).get("ktrain.dev/queue-name"), o["spec"].get("suspend")] for o in d["items"] if o["kind"] == "Job" and o["metadata"]["name"] == "kq-r-1"][0]' <<<"$out")" \
  '[null, "team-q", true]' "a waiting run of a Kueue queue: no queue label yet (Kueue would admit it), the queue kept aside"
k_ok "submit with a queue" submit -f kq.yaml --run-id q
expect_contains "$err" "ktrain: started kq-q-1" "submit released the second run when the first ended"
expect_eq "$(kubectl get job kq-q-1 -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name} {.spec.suspend} {.metadata.labels.ktrain\.dev/queued}{.metadata.annotations.ktrain\.dev/queue-name}')" \
  "team-q true " "released into the queue: labelled, still suspended for Kueue to admit"
k_ok "status of the released run" status kq-q-1
expect_contains "$out" "waits for Kueue to admit it from the LocalQueue 'team-q'" "status: queued for Kueue"
k_ok "delete the queue sweep" delete --all kq-q
echo "PASS"
