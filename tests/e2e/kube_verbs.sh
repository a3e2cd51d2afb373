#!/usr/bin/env bash
# Every cluster verb of the real binary against the test API server: submit (again
# with the same --run-id changes nothing; --dry-run=client|server; -o name|json),
# list (-A, -n, -o json|name), status (unschedulable, OOMKilled), logs (--rank,
# --node, --tail), submit --wait (0, 1, 124), delete, serve and scale, and the error
# paths: no or wrong credentials, a 403, no server, 429 with Retry-After, and a 500
# on a create (retried: a repeated create answers 409) and on a request that is
# not idempotent (not retried). Exit statuses and output are checked exactly.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac

work="$(mktemp -d /tmp/ktrain-verbs.XXXXXX)"
cleanup() { stop_apiserver; rm -rf "$work"; }
cat >"$work/script.yaml" <<'YAML'
nodes: 3
namespaces: [ml-serving, other]
pods:
  - match: {job: "pend-*"}
    unschedulable: true
  - match: {job: "oom-*", index: 1}
    oomKilled: true
    lines: ["allocating 80 GiB"]
  - match: {job: "logs-*"}
    linePattern: "[rank {index}] step {i}"
    lineCount: 5
  - match: {job: "fail-*", index: 0}
    exitCode: 3
    lines: ["epoch 1", "loss is nan at step 7"]
  - match: {job: "idem-*"}
    hold: true
  - match: {job: "slow-*"}
    hold: true
  - match: {job: "sw-*"}
    hold: true
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1 LC_ALL=C
cd "$work"

# project NAME [GPUS]: writes NAME.yaml, a 2-node project.
project() {
  cat >"$work/$1.yaml" <<YAML
name: $1
image: registry.example.com/ml/$1:1.0.0
train:
  command: [python3, train.py]
  framework: none
  nodes: 2
  gpus: ${2:-0}
  preflight: "off"
YAML
}
for p in ok idem logs fail slow; do project $p; done
project pend 1
project oom 1

ns=/api/v1/namespaces/default
bns=/apis/batch/v1/namespaces/default
http_code() { api_curl -o /dev/null -w '%{http_code}' "$1"; }
# wait_for PYTHON_CONDITION PATH: polls PATH until the condition over `d` holds.
wait_for() {
  local i
  for i in $(seq 1 200); do
    if api_curl "$2" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  fail "timed out waiting for $1 on $2: $(api_curl "$2")"
}
wait_state() {  # wait_state RUN STATE
  local i s=""
  for i in $(seq 1 200); do
    s="$("$ktrain" status "$1" -o json | json 'd["state"]')"
    [ "$s" = "$2" ] && return 0
    sleep 0.05
  done
  fail "run $1 is $s, not $2"
}
# versions RUN: uid and resourceVersion of the run's Job, Service and Secret.
versions() {
  local p
  for p in "$bns/jobs/$1" "$ns/services/$1" "$ns/secrets/$1-rdzv"; do
    api_curl "$p" | json 'd["metadata"]["uid"] + " " + d["metadata"]["resourceVersion"]'
  done
}

echo "== submit"
k_ok "submit" submit -f ok.yaml --run-id a
expect_eq "$out" "ok-a" "submit prints the run name"
expect_eq "$err" "" "submit prints nothing else"
expect_eq "$(http_code "$bns/jobs/ok-a")" "200" "the Job exists"
expect_eq "$(http_code "$ns/services/ok-a")" "200" "the Service exists"
expect_eq "$(http_code "$ns/secrets/ok-a-rdzv")" "200" "the rendezvous Secret exists"
expect_eq "$(api_curl "$bns/jobs/ok-a" | json 'd["metadata"]["managedFields"][0]["manager"]+" "+d["metadata"]["managedFields"][0]["operation"]')" \
  "ktrain Apply" "server-side apply, field manager ktrain"
expect_eq "$(api_curl "$bns/jobs/ok-a" | json 'd["metadata"]["labels"]["ktrain.dev/run"]+" "+str(d["spec"]["completions"])+" "+d["spec"]["completionMode"]')" \
  "ok-a 2 Indexed" "the Job's run label, completions and mode"

# The same --run-id again: nothing changes (same uid and resourceVersion), same output.
k_ok "submit idem" submit -f idem.yaml --run-id a -o json
expect_eq "$(json 'd["runs"]' <<<"$out")" '["idem-a"]' "submit -o json: runs"
expect_eq "$(json 'd["objects"]' <<<"$out")" '["service/idem-a", "secret/idem-a-rdzv", "job.batch/idem-a"]' "submit -o json: objects"
wait_for 'd["status"].get("ready")==2' "$bns/jobs/idem-a"
sleep 0.2
before="$(versions idem-a)"
secret_before="$(api_curl "$ns/secrets/idem-a-rdzv" | json 'd["data"]["token"]')"
k_ok "submit again" submit -f idem.yaml --run-id a -o json
expect_eq "$(json 'd["objects"]' <<<"$out")" '["service/idem-a", "secret/idem-a-rdzv", "job.batch/idem-a"]' "submit again: same objects"
expect_eq "$(versions idem-a)" "$before" "submit again: same uid and resourceVersion of Job, Service, Secret"
expect_eq "$(api_curl "$ns/secrets/idem-a-rdzv" | json 'd["data"]["token"]')" "$secret_before" "submit again: the running pods' token is kept"
expect_eq "$(api_curl "$bns/jobs?labelSelector=ktrain.dev%2Frun%3Didem-a" | json 'len(d["items"])')" "1" "submit again: one Job"
admin POST /_test/release '{"job":"idem-a"}' >/dev/null

k_ok "submit -o name" submit -f ok.yaml --run-id n -o name
expect_eq "$out" "ok-n" "submit -o name prints the run name"
k_ok "submit -o yaml" submit -f ok.yaml --run-id n -o yaml
expect_eq "$out" "runs:
- ok-n
objects:
- service/ok-n
- secret/ok-n-rdzv
- job.batch/ok-n" "submit -o yaml: the runs and objects as YAML"
k submit -f ok.yaml -o wide
expect_eq "$rc" "2" "submit -o wide: exit 2"
expect_contains "$err" "-o wide: submit prints name, json or yaml" "submit -o wide: message"
k submit -f ok.yaml --run-id BAD
expect_eq "$rc" "2" "submit --run-id BAD: exit 2"
expect_contains "$err" "--run-id BAD: expected 1 to 12 characters of a-z and 0-9" "submit --run-id BAD: message"
k submit -f ok.yaml --timeout 10s
expect_eq "$rc" "2" "submit --timeout without --wait: exit 2"

echo "== dry runs"
admin DELETE /_test/requests >/dev/null
k_ok "dry-run=client" submit -f ok.yaml --run-id c --dry-run=client
expect_eq "$(grep '^kind:' <<<"$out" | tr '\n' ' ')" "kind: Service kind: Job " "dry-run=client prints what render prints: the Service and the Job (the Secret's token is made at submit)"
expect_contains "$out" "  name: ok-c" "dry-run=client names them after the run"
k_ok "dry-run=client -o json" submit -f ok.yaml --run-id c --dry-run=client -o json
expect_eq "$(json '[o["kind"]+"/"+o["metadata"]["name"] for o in d["items"]]' <<<"$out")" '["Service/ok-c", "Job/ok-c"]' "dry-run=client -o json: a List"
expect_eq "$(admin GET /_test/requests | json 'len(d)')" "0" "dry-run=client sends nothing"
k_ok "dry-run=server" submit -f ok.yaml --run-id s --dry-run=server -o json
expect_eq "$(json 'd["objects"]' <<<"$out")" '["service/ok-s", "secret/ok-s-rdzv", "job.batch/ok-s"]' "dry-run=server: the objects the server accepted"
expect_eq "$(admin GET /_test/requests | json 'sorted((r["method"], r["path"].split("/")[-1] if r["method"]=="PATCH" else r["path"].split("/")[-1], "dryRun=All" in r["query"], r["status"]) for r in d)')" \
  '[["GET", "version", false, 200], ["PATCH", "ok-s", true, 201], ["PATCH", "ok-s", true, 201], ["POST", "secrets", true, 201]]' "dry-run=server: every write with dryRun=All (and /version read, to render for the server's release)"
expect_eq "$(http_code "$bns/jobs/ok-s") $(http_code "$ns/services/ok-s") $(http_code "$ns/secrets/ok-s-rdzv")" "404 404 404" "dry-run=server creates nothing"
k submit -f ok.yaml --dry-run=server --wait
expect_eq "$rc" "2" "--dry-run with --wait: exit 2"

echo "== list"
project other
k_ok "submit -n other" -n other submit -f other.yaml --run-id a
expect_eq "$out" "other-a" "submit -n other"
wait_state ok-a Succeeded
k_ok "list" list
header="$(head -n 1 <<<"$out")"
[[ "$header" =~ ^NAME\ +KIND\ +STATE\ +NODES\ +GPUS\ +AGE$ ]] || fail "list header: $header"
echo "ok: list header"
expect_eq "$(awk 'NR>1 {print $1}' <<<"$out" | sort | tr '\n' ' ')" "idem-a ok-a ok-n " "list: the runs of the namespace"
row="$(grep '^ok-a ' <<<"$out")"
[[ "$row" =~ ^ok-a\ +train\ +Succeeded\ +2\ +0\ +[0-9]+s$ ]] || fail "list row: $row"
echo "ok: list row"
k_ok "list -A" list -A
[[ "$(head -n 1 <<<"$out")" =~ ^NAMESPACE\ +NAME\ +KIND\ +STATE\ +NODES\ +GPUS\ +AGE$ ]] || fail "list -A header: $(head -n 1 <<<"$out")"
expect_eq "$(awk 'NR>1 {print $1 "/" $2}' <<<"$out" | sort | tr '\n' ' ')" "default/idem-a default/ok-a default/ok-n other/other-a " "list -A: every namespace"
k_ok "list -n other" -n other list -o name
expect_eq "$out" "other-a" "list -n other -o name"
k_ok "list -o json" list -o json
expect_eq "$(json '[(r["name"], r["namespace"], r["state"], r["nodes"], r["gpusPerNode"]) for r in d["runs"] if r["name"]=="ok-a"]' <<<"$out")" \
  '[["ok-a", "default", "Succeeded", 2, 0]]' "list -o json: a run"
expect_eq "$(json 'sorted(d["runs"][0].keys())' <<<"$out")" '["age", "created", "gpusPerNode", "kind", "name", "namespace", "nodes", "state"]' "list -o json: field names"
k_ok "list -n ml-serving" -n ml-serving list
expect_eq "$out" "" "list of an empty namespace: no table"
expect_eq "$err" "No runs found." "list of an empty namespace: says so"
k_ok "list -o json, empty" -n ml-serving list -o json
expect_eq "$(json 'd' <<<"$out")" '{"runs": []}' "list -o json of an empty namespace"
k list -o toml
expect_eq "$rc" "2" "list -o toml: exit 2"
expect_contains "$err" "-o toml: list prints table, wide, json, yaml or name" "list -o toml: message"

echo "== status"
k_ok "submit pend" submit -f pend.yaml --run-id a
k_ok "submit oom" submit -f oom.yaml --run-id a
sched='0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.'
wait_for 'len(d["items"])==2 and all(any(c["type"]=="PodScheduled" and c["status"]=="False" for c in p["status"].get("conditions",[])) for p in d["items"])' \
  "$ns/pods?labelSelector=ktrain.dev%2Frun%3Dpend-a"
k_ok "status pend" status pend-a
expect_contains "$out" "State:      Pending" "status: pending"
expect_contains "$out" "Nodes:      2 x 1 GPUs" "status: nodes and GPUs"
expect_contains "$out" "Why:        ranks 0, 1 cannot be scheduled: $sched" "status: why it waits, with the scheduler's words"
k_ok "status pend -o json" status pend-a -o json
expect_eq "$(json 'd["explanations"]' <<<"$out")" "[\"ranks 0, 1 cannot be scheduled: $sched\"]" "status -o json: explanations"
expect_eq "$(json '[(r["index"], r["phase"], r["reason"]) for r in d["ranks"]]' <<<"$out")" \
  '[[0, "Pending", "Unschedulable"], [1, "Pending", "Unschedulable"]]' "status -o json: ranks"
expect_eq "$(json 'sorted(set(r["message"] for r in d["ranks"]))' <<<"$out")" "[\"$sched\"]" "status -o json: the scheduler's message per rank"
wait_state oom-a Failed
k_ok "status oom" status oom-a
expect_contains "$out" "Why:        rank 1 ran out of memory and was killed (OOMKilled): raise train.memory or lower the batch size" "status: OOMKilled in plain words"
row="$(grep '^1 ' <<<"$out")"
[[ "$row" =~ ^1\ +oom-a-1-[a-z0-9]{5}\ +Failed\ +node-[0-9]\ +0\ +137\ +OOMKilled$ ]] || fail "status OOMKilled row: $row"
echo "ok: status row: exit code 137, OOMKilled"
k_ok "status oom -o json" status oom-a -o json
expect_eq "$(json '[d["state"], d["firstFailedRank"], d["ranks"][1]["exitCode"], d["ranks"][1]["reason"], d["ranks"][0]["phase"]]' <<<"$out")" \
  '["Failed", 1, 137, "OOMKilled", "Succeeded"]' "status -o json: the OOMKilled rank"
expect_contains "$(json 'd["conditions"]' <<<"$out")" "Failed: BackoffLimitExceeded" "status -o json: the Job's condition"
k status nosuch
expect_eq "$rc" "1" "status of an unknown run: exit 1"
expect_eq "$err" "ktrain: error: run \"nosuch\" not found in namespace \"default\" (see 'ktrain list', or pass -n NAMESPACE)" "status of an unknown run: message"
k status ok-a -o name
expect_eq "$rc" "2" "status -o name: exit 2"

echo "== logs"
k_ok "submit logs" submit -f logs.yaml --run-id a
wait_state logs-a Succeeded
k_ok "logs" logs logs-a
expect_eq "$out" "$(for r in 0 1; do for i in 1 2 3 4 5; do echo "[rank $r] step $i"; done; done)" "logs: every rank, in order"
k_ok "logs --rank 1" logs logs-a --rank 1
expect_eq "$out" "$(for i in 1 2 3 4 5; do echo "[rank 1] step $i"; done)" "logs --rank 1"
k_ok "logs --tail 2" logs logs-a --tail 2
expect_eq "$out" "$(printf '[rank 0] step 4\n[rank 0] step 5\n[rank 1] step 4\n[rank 1] step 5')" "logs --tail 2: the last 2 of each"
k_ok "logs --node 1 --tail 1" logs logs-a --node 1 --tail 1
expect_eq "$out" "[rank 1] step 5" "logs --node 1 --tail 1"
k_ok "logs --timestamps" logs logs-a --rank 0 --tail 1 --timestamps
[[ "$out" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\ \[rank\ 0\]\ step\ 5$ ]] || fail "logs --timestamps: $out"
echo "ok: logs --timestamps"
k logs logs-a --node 5
expect_eq "$rc" "2" "logs --node 5 of a 2-node run: exit 2"
expect_contains "$err" "--node 5: run \"logs-a\" has no pod with that index (it has 2)" "logs --node 5: message"
k logs nosuch
expect_eq "$rc" "1" "logs of an unknown run: exit 1"
expect_contains "$err" "run \"nosuch\" not found in namespace \"default\"" "logs of an unknown run: message"
k logs logs-a --rank 1 --node 1
expect_eq "$rc" "2" "logs --rank with --node: exit 2"

echo "== submit --wait"
k submit -f ok.yaml --run-id w --wait
expect_eq "$rc" "0" "--wait on a run that succeeds: exit 0"
expect_eq "$out" "ok-w" "--wait prints the run name"
expect_eq "$err" "ktrain: run ok-w succeeded" "--wait says it succeeded"
k submit -f fail.yaml --run-id w --wait
expect_eq "$rc" "1" "--wait on a run that fails: exit 1"
[[ "$(head -n 1 <<<"$err")" =~ ^ktrain:\ run\ fail-w\ failed:\ node\ 0\ failed\ first\ \(pod\ fail-w-0-[a-z0-9]{5},\ exit\ code\ 3,\ Error\)$ ]] ||
  fail "--wait failure line: $err"
echo "ok: --wait names the rank that failed first, its exit code and reason"
expect_eq "$(tail -n +2 <<<"$err")" "$(printf 'ktrain: last 2 lines of node 0:\n  epoch 1\n  loss is nan at step 7')" "--wait shows that rank's last lines"
k submit -f slow.yaml --run-id w --wait --timeout 2s
expect_eq "$rc" "124" "--wait --timeout on a run that goes on: exit 124"
expect_eq "$err" "ktrain: error: timed out after 2s waiting for run slow-w (Running)" "--timeout message"
admin POST /_test/release '{"job":"slow-w"}' >/dev/null

echo "== delete"
admin DELETE /_test/requests >/dev/null
k_ok "delete" delete ok-a
expect_eq "$out" "deleted ok-a" "delete prints what it deleted"
expect_eq "$(http_code "$bns/jobs/ok-a") $(http_code "$ns/services/ok-a") $(http_code "$ns/secrets/ok-a-rdzv")" "404 404 404" "delete: Job, Service and Secret gone"
wait_for 'len(d["items"])==0' "$ns/pods?labelSelector=ktrain.dev%2Frun%3Dok-a"
echo "ok: delete: the pods are gone (background propagation)"
expect_eq "$(admin GET '/_test/requests?method=DELETE' | json 'sorted(set(r["path"].split("/")[-2] for r in d if r["path"].endswith("/ok-a") or r["path"].endswith("/ok-a-rdzv")))')" \
  '["jobs", "secrets", "services"]' "delete: one DELETE per object"
k delete nosuch
expect_eq "$rc" "1" "delete of an unknown run: exit 1"
expect_eq "$err" "ktrain: error: deleting nosuch: run \"nosuch\" not found in namespace \"default\" (see 'ktrain list', or pass -n NAMESPACE)" "delete of an unknown run: message"
k delete ok-n nosuch
expect_eq "$rc" "1" "delete of a known and an unknown run: exit 1"
expect_eq "$out" "deleted ok-n" "delete goes on with the other runs"
expect_eq "$(http_code "$bns/jobs/ok-n")" "404" "delete: ok-n gone"
k_ok "delete -n other" -n other delete other-a
expect_eq "$(http_code /apis/batch/v1/namespaces/other/jobs/other-a)" "404" "delete -n other"

echo "== serve and scale"
serve_project="$KTRAIN_SOURCE/examples/serve-autoscale/ktrain.yaml"
k_ok "serve" serve -f "$serve_project"
expect_eq "$out" "resnet50-serve: rolled out, 2 replicas available" "serve waits for the rollout of the autoscaler's minimum"
sns=/apis/apps/v1/namespaces/ml-serving
expect_eq "$(http_code "$sns/deployments/resnet50-serve") $(http_code /api/v1/namespaces/ml-serving/services/resnet50-serve) $(http_code /apis/autoscaling/v2/namespaces/ml-serving/horizontalpodautoscalers/resnet50-serve)" \
  "200 200 200" "serve: Deployment, Service and HPA in the project's namespace"
k_ok "serve again" -o name serve -f "$serve_project" --no-wait
expect_eq "$out" "$(printf 'service/resnet50-serve\ndeployment.apps/resnet50-serve\nhorizontalpodautoscaler.autoscaling/resnet50-serve\npoddisruptionbudget.policy/resnet50-serve')" "serve -o name --no-wait"
k_ok "serve --dry-run=server" serve -f "$serve_project" --dry-run=server
expect_eq "$out" "resnet50-serve" "serve --dry-run=server"
k serve -f ok.yaml
expect_eq "$rc" "2" "serve of a project without serve: exit 2"
expect_contains "$err" "there is no serve section" "serve without serve: message"
k_ok "scale --replicas" -n ml-serving scale resnet50-serve --replicas 3
expect_eq "$out" "deployment.apps/resnet50-serve scaled" "scale --replicas"
expect_contains "$err" "the HorizontalPodAutoscaler \"resnet50-serve\" controls deployment \"resnet50-serve\" (min 2, max 20) and will change the replicas again" "scale --replicas warns about the HPA"
expect_eq "$(api_curl "$sns/deployments/resnet50-serve/scale" | json 'd["spec"]["replicas"]')" "3" "scale: 3 replicas"
wait_for 'd["status"].get("readyReplicas")==3' "$sns/deployments/resnet50-serve"
k_ok "scale --min --max" -n ml-serving scale resnet50-serve --min 3 --max 8
expect_eq "$out" "horizontalpodautoscaler.autoscaling/resnet50-serve patched (min 3, max 8)" "scale --min --max"
expect_eq "$(api_curl /apis/autoscaling/v2/namespaces/ml-serving/horizontalpodautoscalers/resnet50-serve | json '[d["spec"]["minReplicas"], d["spec"]["maxReplicas"]]')" "[3, 8]" "the HPA's range"
k_ok "scale --max" -n ml-serving scale resnet50-serve --max 5
expect_eq "$out" "horizontalpodautoscaler.autoscaling/resnet50-serve patched (min 3, max 5)" "scale --max keeps the minimum"
k -n ml-serving scale resnet50-serve --min 9
expect_eq "$rc" "2" "scale --min above the maximum: exit 2"
expect_eq "$err" "ktrain: error: --min 9 would be more than the autoscaler's maximum 5; give --max too" "scale --min above the maximum: message"
k -n ml-serving scale resnet50-serve
expect_eq "$rc" "2" "scale without a change: exit 2"
k -n ml-serving scale nosuch --replicas 1
expect_eq "$rc" "1" "scale of an unknown deployment: exit 1"
expect_eq "$err" "ktrain: error: scaling nosuch: \"nosuch\" not found in namespace \"ml-serving\": no Deployment, InferenceService or LeaderWorkerSet of that name (pass -n NAMESPACE to look in another)" "scale of an unknown deployment: message"
cat >"$work/web.yaml" <<'YAML'
name: web
image: registry.example.com/ml/web:1.0.0
serve:
  command: [python3, serve.py]
  port: 8080
  replicas: 2
YAML
k_ok "serve web" serve -f web.yaml
expect_eq "$out" "web: rolled out, 2 replicas available" "serve with fixed replicas"
k_ok "scale web" scale web --replicas 1
expect_eq "$out $err" "deployment.apps/web scaled " "scale without an HPA: no warning"
wait_for 'd["status"].get("replicas")==1' /apis/apps/v1/namespaces/default/deployments/web
k scale web --min 2
expect_eq "$rc" "1" "scale --min without an HPA: exit 1"
expect_contains "$err" "--min/--max change the HorizontalPodAutoscaler, and none controls deployment \"web\"" "scale --min without an HPA: message"

echo "== a sweep: runs sent while the later ones are rendered, each run in order"
# 150 runs (450 objects: more than one batch of requests). Secrets and Services are
# answered 30 ms late: a Job sent together with its run's Secret or Service would start
# before they were answered.
values=$(seq -s ', ' 0 149)
cat >"$work/sw.yaml" <<YAML
name: sw
image: registry.example.com/ml/sw:1.0.0
train:
  command: [python3, train.py, --i, "{i}"]
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
  sweep:
    i: [$values]
YAML
admin DELETE /_test/requests >/dev/null
admin PUT /_test/faults '[{"method":"POST","path":"/api/v1/namespaces/other/secrets","latencyMs":30,"count":-1},
  {"method":"PATCH","path":"/api/v1/namespaces/other/services/*","latencyMs":30,"count":-1}]' >/dev/null
k_ok "submit a sweep" -n other submit -f sw.yaml --run-id s -o json
admin DELETE /_test/faults >/dev/null
expect_eq "$(json '" ".join(d["runs"][:2] + d["runs"][-1:]), len(d["runs"])' <<<"$out")" "('sw-s-0 sw-s-1 sw-s-149', 150)" "sweep: the runs"
expect_eq "$(json 'len(d["objects"]), d["objects"][0], d["objects"][150], d["objects"][449]' <<<"$out")" \
  "(450, 'service/sw-s-0', 'secret/sw-s-0-rdzv', 'job.batch/sw-s-149')" "sweep: objects named by step, then run by run"
admin GET '/_test/requests' >"$work/sweep-reqs.json"
python3 - "$work/sweep-reqs.json" <<'PY' || fail "sweep: a Job went before its Secret or Service was answered"
import datetime, json, sys
def t(s):
    return datetime.datetime.fromisoformat(s[:26]).timestamp()
start = {}
owned = {}
for r in json.load(open(sys.argv[1])):
    p = r["path"]
    if "/namespaces/other/" not in p or r["status"] >= 400:
        continue
    kind = "job" if "/jobs/" in p else "service" if "/services/" in p else "secret" if "/secrets" in p else None
    if kind is None:
        continue
    name = p.rsplit("/", 1)[1]
    # Secrets are created (owned by their Service) and never patched, read or listed.
    assert not (kind == "secret" and r["method"] != "POST"), (r["method"], p)
    if r["method"] == "PATCH" and kind == "service" and name in owned.get(kind, set()):
        # The second PATCH of a Service: the Job made its owner.
        start.setdefault("owner-" + kind, []).append((t(r["time"]), name))
        continue
    owned.setdefault(kind, set()).add(name)
    start.setdefault(kind, []).append((t(r["time"]), name if kind != "secret" else None))
jobs = {n: s for s, n in start["job"]}
services = {n: s for s, n in start["service"]}
assert len(jobs) == 150 and len(services) == 150 and len(start["secret"]) == 150, {k: len(v) for k, v in start.items()}
for n, s in jobs.items():
    assert s >= services[n] + 0.03, (n, s - services[n])
# Each run's Service was made the Job's after the Job was answered.
for kind, suffix in (("owner-service", ""),):
    patched = {n[: len(n) - len(suffix)] if suffix else n: s for s, n in start[kind]}
    assert sorted(patched) == sorted(jobs), kind
    for n, s in patched.items():
        assert s > jobs[n], (kind, n)
# A Secret's name is in its body, not its path: each Job started 30 ms after some
# Secret, and no Job before the first 128 Secrets had been answered.
first_jobs = sorted(jobs.values())
secrets = sorted(s for s, _ in start["secret"])
assert first_jobs[0] >= secrets[127] + 0.03, first_jobs[0] - secrets[127]
print("ok: sweep: every Job started after its Service was answered")
PY
[ "$(api_curl "/api/v1/namespaces/other/secrets?labelSelector=ktrain.dev/sweep=sw-s" | json 'len(d["items"])')" = 150 ] ||
  fail "sweep: 150 Secrets"
echo "ok: sweep: 150 Secrets"

# A Job refused late in the sweep: nothing of the sweep is left, not even what the
# earlier runs had running.
admin PUT /_test/faults '{"method":"PATCH","path":"/apis/batch/v1/namespaces/other/jobs/sw-t-140","status":422,"message":"Job.batch \"sw-t-140\" is invalid: spec.parallelism: Invalid value","count":-1}' >/dev/null
k -n other submit -f sw.yaml --run-id t
admin DELETE /_test/faults >/dev/null
expect_eq "$rc" "1" "sweep refused late: exit 1"
expect_contains "$err" "sw-t-140" "sweep refused late: names the object"
expect_contains "$err" "is invalid: spec.parallelism: Invalid value" "sweep refused late: the server's words"
expect_contains "$err" "objects this submit had created were removed)" "sweep refused late: what was created is removed"
left=""
for c in /apis/batch/v1/namespaces/other/jobs /api/v1/namespaces/other/services /api/v1/namespaces/other/secrets; do
  left+="$(api_curl "$c?labelSelector=ktrain.dev/sweep=sw-t" | json 'len(d["items"])')"
done
expect_eq "$left" "000" "sweep refused late: no Job, Service or Secret left"
k_ok "list -o wide" -n other list -o wide
expect_eq "$(head -1 <<<"$out" | tr -s ' ')" "NAME KIND STATE NODES GPUS AGE SWEEP CREATED" "list -o wide: the header"
expect_eq "$(grep -c ' sw-s  *20[0-9-]*T' <<<"$out")" "150" "list -o wide: each run's sweep and creation time"
k_ok "list -o yaml" -n other list -o yaml
expect_eq "$(head -1 <<<"$out")" "runs:" "list -o yaml: a YAML document"
expect_eq "$(grep -c '^- name: sw-s-' <<<"$out") $(grep -c '^  sweep: sw-s$' <<<"$out")" "150 150" "list -o yaml: each run and its sweep"
k_ok "status -o yaml" -n other status sw-s-0 -o yaml
expect_contains "$out" "name: sw-s-0" "status -o yaml"
k_ok "delete the sweep" -n other delete --all sw-s
expect_eq "$(api_curl "/apis/batch/v1/namespaces/other/jobs?labelSelector=ktrain.dev/sweep=sw-s" | json 'len(d["items"])')" "0" "sweep deleted"

echo "== version"
k_ok "version --server" version --server
expect_eq "$(sed -n 2p <<<"$out")" "server v1.32.0 (linux/amd64) at $APISERVER_URL" "version --server: the API server's version"
k_ok "version --server -o json" version --server -o json
expect_eq "$(json 'd["serverVersion"]["gitVersion"], d["clientVersion"]["version"] != ""' <<<"$out")" "('v1.32.0', True)" "version --server -o json"
k version --server --kubeconfig "$work/no-such.kubeconfig"
expect_eq "$rc" "3" "version --server without a cluster: exit 3"

echo "== errors"
sed '/^    token:/d' "$KUBECONFIG" >"$work/nocred.kubeconfig"
k --kubeconfig "$work/nocred.kubeconfig" list
expect_eq "$rc" "3" "no credentials: exit 3"
expect_contains "$err" "the API server wants credentials, and user 'token-user' in kubeconfig $work/nocred.kubeconfig has none" "no credentials: says who"
expect_contains "$err" "401 Unauthorized" "no credentials: the status"
expect_contains "$err" "add a token, a client certificate or an exec plugin to that user" "no credentials: what to do"
sed 's/^    token: .*/    token: not-the-token/' "$KUBECONFIG" >"$work/wrong.kubeconfig"
k --kubeconfig "$work/wrong.kubeconfig" submit -f ok.yaml --run-id t
expect_eq "$rc" "3" "wrong token: exit 3"
expect_contains "$err" "the API server rejected the credentials of user 'token-user'" "wrong token: message"
[[ "$err" != *not-the-token* ]] || fail "the token appears in the message"
echo "ok: the token is not printed"
expect_eq "$(http_code "$bns/jobs/ok-t")" "404" "wrong token: nothing created"

admin POST /_test/forbid '{"verb":"patch","resource":"jobs","group":"batch"}' >/dev/null
k submit -f ok.yaml --run-id f
expect_eq "$rc" "3" "403: exit 3"
expect_contains "$err" "403 Forbidden: jobs.batch \"ok-f\" is forbidden: User \"test-user\" cannot patch resource \"jobs\" in API group \"batch\" in the namespace \"default\"" "403: the server's words"
expect_contains "$err" "(user 'token-user' of context 'token' in kubeconfig $KUBECONFIG is not allowed to do this; ask a cluster admin for the RBAC permission)" "403: plain words"
expect_contains "$err" "(the 2 objects this submit had created were removed)" "403: what was created is removed"
left="$(api_curl "/api/v1/namespaces/default/secrets?labelSelector=ktrain.dev/run=ok-f" | json 'len(d["items"])')$(api_curl "/api/v1/namespaces/default/services?labelSelector=ktrain.dev/run=ok-f" | json 'len(d["items"])')"
expect_eq "$left" "00" "403: no Secret or Service left behind"
admin DELETE /_test/forbid >/dev/null

# 429 with Retry-After: waited for, then the answer.
admin DELETE /_test/requests >/dev/null
admin POST /_test/faults '{"method":"GET","path":"/apis/batch/v1/namespaces/*/jobs","status":429,"retryAfter":1,"count":2}' >/dev/null
k_ok "list after 429s" list -o name
expect_eq "$(sort <<<"$out" | tr '\n' ' ')" "fail-w idem-a logs-a ok-w oom-a pend-a slow-w web " "list after two 429s: the answer (runs, and the service web)"
admin GET '/_test/requests?path=/apis/batch/v1/namespaces/default/jobs' >"$work/reqs.json"
expect_eq "$(json '[r["status"] for r in d]' <"$work/reqs.json")" "[429, 429, 200]" "429: retried until it succeeds"
gaps="$(python3 -c 'import datetime, json, sys
t = [datetime.datetime.fromisoformat(r["time"][:26]).timestamp() for r in json.load(open(sys.argv[1]))]
print(all(b - a >= 0.9 for a, b in zip(t, t[1:])))' "$work/reqs.json")"
expect_eq "$gaps" "True" "429: Retry-After (1 s) honoured before each retry"
admin DELETE /_test/faults >/dev/null

# A 500 on the Secret's create: retried (a repeated create answers 409, which means done).
admin DELETE /_test/requests >/dev/null
admin POST /_test/faults '{"method":"POST","path":"/api/v1/namespaces/*/secrets","status":500,"count":1}' >/dev/null
k_ok "submit after a 500 on create" submit -f ok.yaml --run-id r
expect_eq "$(admin GET '/_test/requests?method=POST' | json '[r["status"] for r in d]')" "[500, 201]" "500 on a create: sent again"
expect_eq "$(api_curl "$ns/secrets?labelSelector=ktrain.dev%2Frun%3Dok-r" | json 'len(d["items"])')" "1" "500 on a create: one Secret"
admin DELETE /_test/faults >/dev/null
# A 500 on a request that is not idempotent (scale's merge patch): not sent again.
admin DELETE /_test/requests >/dev/null
admin POST /_test/faults '{"method":"PATCH","path":"/apis/apps/v1/namespaces/*/deployments/*/scale","status":500,"count":1}' >/dev/null
k scale web --replicas 2
expect_eq "$rc" "1" "500 on a scale: exit 1"
expect_contains "$err" "scaling web: PATCH https://127.0.0.1:$APISERVER_PORT/apis/apps/v1/namespaces/default/deployments/web/scale?fieldManager=ktrain: 500 Internal Server Error" "500 on a scale: message"
expect_eq "$(admin GET '/_test/requests?method=PATCH' | json '[r["status"] for r in d]')" "[500]" "500 on a request that is not idempotent: not sent again"
admin DELETE /_test/faults >/dev/null

# No server.
stop_apiserver_keep() { kill -TERM "$APISERVER_PID"; wait "$APISERVER_PID" 2>/dev/null || true; APISERVER_PID=""; }
stop_apiserver_keep
k list
expect_eq "$rc" "3" "no server: exit 3"
expect_contains "$err" "cannot connect to the API server at https://127.0.0.1:$APISERVER_PORT of context 'token' in kubeconfig $KUBECONFIG: connection refused or unreachable; is the cluster running, and is this the right context?" "no server: plain words"
k submit -f ok.yaml --run-id x
expect_eq "$rc" "3" "no server: submit exit 3"
k status ok-w
expect_eq "$rc" "3" "no server: status exit 3"
echo "PASS"
