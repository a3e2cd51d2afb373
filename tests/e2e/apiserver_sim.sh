#!/usr/bin/env bash
# The test API server's simulated cluster: scripted trouble (unschedulable,
# image pull errors, OOMKilled, quota, backoff limit, deadline), restarts
# (a new pod per attempt, or `previous` logs with restartPolicy OnFailure),
# pod log parameters, and watch streams (events, selectors, bookmarks).
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
work="$(mktemp -d /tmp/ktrain-sim.XXXXXX)"
cat >"$work/script.yaml" <<'YAML'
nodes: 3
bookmarkInterval: 0.2
pods:
  - match: {job: pending}
    unschedulable: true
  - match: {job: pulling}
    imagePullError: true
  - match: {job: oom}
    oomKilled: true
    lines: ["allocating"]
  - match: {job: flaky, attempt: 1}
    exitCode: 3
    lines: ["attempt one"]
  - match: {job: flaky}
    lines: ["attempt two"]
  - match: {job: restarts, attempt: 1}
    exitCode: 1
    lines: ["first run"]
  - match: {job: restarts}
    lines: ["second run"]
    hold: true
  - match: {job: broken}
    exitCode: 2
    reason: Error
    message: "boom"
  - match: {job: forever}
    hold: true
    lines: ["a", "b", "c", "d"]
  - match: {pod: two}
    lines: ["x"]
    hold: true
  - match: {job: logs}
    lines: ["l1", "l2", "l3"]
jobs:
  - match: {name: quota}
    quotaExceeded: true
YAML
start_apiserver "$work/script.yaml"
cleanup() { stop_apiserver; rm -rf "$work"; }
trap cleanup EXIT

ns=/apis/batch/v1/namespaces/default
# make_job NAME [RESTART_POLICY] [BACKOFF] [EXTRA_SPEC_JSON]
make_job() {
  local spec="{\"completionMode\":\"Indexed\",\"completions\":1,\"backoffLimit\":${3:-6}${4:-},\"template\":{\"spec\":{\"restartPolicy\":\"${2:-Never}\",\"containers\":[{\"name\":\"main\",\"image\":\"example/$1:1\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}}"
  api_curl -o /dev/null -w '' -X POST -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"$1\"},\"spec\":$spec}" "$ns/jobs"
}
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
pods_of() { echo "/api/v1/namespaces/default/pods?labelSelector=job-name%3D$1"; }
events_of() { echo "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D$1"; }

for j in pending pulling oom quota flaky restarts broken forever; do
  case $j in
    restarts) make_job $j OnFailure ;;
    broken) make_job $j Never 1 ;;
    forever) make_job $j Never 6 ',"activeDeadlineSeconds":1' ;;
    *) make_job $j ;;
  esac
done

# Unschedulable: PodScheduled=False with the scheduler's message, and an event.
wait_for 'any(c["type"]=="PodScheduled" and c["status"]=="False" for p in d["items"] for c in p["status"].get("conditions",[]))' "$(pods_of pending)"
msg='0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.'
expect_eq "$(api_curl "$(pods_of pending)" | json '[c for c in d["items"][0]["status"]["conditions"] if c["type"]=="PodScheduled"][0]["reason"]')" "Unschedulable" "unschedulable reason"
expect_eq "$(api_curl "$(pods_of pending)" | json '[c for c in d["items"][0]["status"]["conditions"] if c["type"]=="PodScheduled"][0]["message"]')" "$msg" "unschedulable message"
pending_pod="$(api_curl "$(pods_of pending)" | json 'd["items"][0]["metadata"]["name"]')"
expect_eq "$(api_curl "$(events_of "$pending_pod")" | json '[(e["reason"], e["message"], e["source"]["component"]) for e in d["items"]]')" \
  "[[\"FailedScheduling\", \"$msg\", \"default-scheduler\"]]" "FailedScheduling event"
code="$(api_curl -o "$work/out" -w '%{http_code}' "/api/v1/namespaces/default/pods/$pending_pod/log")"
expect_eq "$code" "400" "logs of a pending pod: 400"
expect_eq "$(json 'd["message"]' <"$work/out")" "container \"main\" in pod \"$pending_pod\" is waiting to start: ContainerCreating" "waiting to start message"

# Image pull errors: ErrImagePull, then ImagePullBackOff, with events.
wait_for 'd["items"] and d["items"][0]["status"]["containerStatuses"][0]["state"].get("waiting",{}).get("reason")=="ImagePullBackOff"' "$(pods_of pulling)"
pulling_pod="$(api_curl "$(pods_of pulling)" | json 'd["items"][0]["metadata"]["name"]')"
expect_eq "$(api_curl "$(pods_of pulling)" | json 'd["items"][0]["status"]["containerStatuses"][0]["state"]["waiting"]["message"]')" \
  'Back-off pulling image "example/pulling:1"' "ImagePullBackOff message"
expect_contains "$(api_curl "$(events_of "$pulling_pod")" | json '[e["message"] for e in d["items"]]')" "Error: ErrImagePull" "ErrImagePull event"
expect_contains "$(api_curl "$(events_of "$pulling_pod")" | json '[e["reason"] for e in d["items"]]')" "BackOff" "BackOff event"

# OOMKilled: terminated reason OOMKilled, exit 137; the Job fails after its backoff.
wait_for 'd["items"] and d["items"][0]["status"]["phase"]=="Failed"' "$(pods_of oom)"
expect_eq "$(api_curl "$(pods_of oom)" | json 'd["items"][0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"]+" "+str(d["items"][0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"])')" "OOMKilled 137" "OOMKilled"

# Quota: no pod, a FailedCreate event that says "exceeded quota".
wait_for 'len(d["items"])>0' "$(events_of quota)"
expect_contains "$(api_curl "$(events_of quota)" | json '[e["reason"]+": "+e["message"] for e in d["items"]][0]')" "FailedCreate: Error creating: pods \"quota-0-" "FailedCreate event"
expect_contains "$(api_curl "$(events_of quota)" | json '[e["message"] for e in d["items"]][0]')" "exceeded quota" "quota message"
expect_eq "$(api_curl "$(pods_of quota)" | json 'len(d["items"])')" "0" "no pod under quota"

# A failed pod is replaced by a new pod for the same index (attempt 2), then the Job completes.
wait_for '[c["type"] for c in d["status"].get("conditions",[])].count("Complete")==1' "$ns/jobs/flaky"
expect_eq "$(api_curl "$(pods_of flaky)" | json 'sorted(p["status"]["phase"] for p in d["items"])')" '["Failed", "Succeeded"]' "replacement pod"
expect_eq "$(api_curl "$(pods_of flaky)" | json 'sorted(set(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in d["items"]))')" '["0"]' "same index"
expect_eq "$(api_curl "$ns/jobs/flaky" | json 'str(d["status"]["failed"])+" "+str(d["status"]["succeeded"])')" "1 1" "job counts"

# OnFailure: the container restarts in the same pod; `previous` has the first run.
wait_for 'd["items"] and d["items"][0]["status"]["containerStatuses"][0]["restartCount"]==1 and "running" in d["items"][0]["status"]["containerStatuses"][0]["state"]' "$(pods_of restarts)"
rpod="$(api_curl "$(pods_of restarts)" | json 'd["items"][0]["metadata"]["name"]')"
expect_eq "$(api_curl "/api/v1/namespaces/default/pods/$rpod/log")" "second run" "current logs"
expect_eq "$(api_curl "/api/v1/namespaces/default/pods/$rpod/log?previous=true")" "first run" "previous logs"
expect_eq "$(api_curl "$(pods_of restarts)" | json 'd["items"][0]["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]')" "1" "lastState"
code="$(api_curl -o "$work/out" -w '%{http_code}' "/api/v1/namespaces/default/pods/$(api_curl "$(pods_of flaky)" | json 'd["items"][0]["metadata"]["name"]')/log?previous=true")"
expect_eq "$code" "400" "previous without a restart: 400"
expect_contains "$(json 'd["message"]' <"$work/out")" 'previous terminated container "main" in pod' "previous message"
expect_eq "$(admin POST /_test/release '{"job": "restarts"}' | json 'd["released"]')" "1" "release a held pod"
wait_for '[c["type"] for c in d["status"].get("conditions",[])].count("Complete")==1' "$ns/jobs/restarts"

# Backoff limit: a failed condition with the real reason.
wait_for 'any(c["type"]=="Failed" for c in d["status"].get("conditions",[]))' "$ns/jobs/broken"
expect_eq "$(api_curl "$ns/jobs/broken" | json '[c["reason"] for c in d["status"]["conditions"] if c["type"]=="Failed"][0]')" "BackoffLimitExceeded" "BackoffLimitExceeded"
expect_eq "$(api_curl "$ns/jobs/broken" | json 'd["status"]["failed"]')" "2" "failed pods = backoffLimit + 1"
expect_eq "$(api_curl "$(pods_of broken)" | json 'sorted(set(p["status"]["containerStatuses"][0]["state"]["terminated"]["message"] for p in d["items"]))')" '["boom"]' "termination message"
# Deadline: the active pod is removed and the Job fails with DeadlineExceeded.
wait_for 'any(c["type"]=="Failed" for c in d["status"].get("conditions",[]))' "$ns/jobs/forever"
expect_eq "$(api_curl "$ns/jobs/forever" | json '[c["reason"] for c in d["status"]["conditions"] if c["type"]=="Failed"][0]')" "DeadlineExceeded" "DeadlineExceeded"

# Pod logs: container choice, tailLines, sinceTime at second precision, sinceSeconds.
api_curl -o /dev/null -X POST -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"two"},"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"x"}]}}' \
  /api/v1/namespaces/default/pods
wait_for 'd["status"]["phase"]=="Running"' /api/v1/namespaces/default/pods/two
code="$(api_curl -o "$work/out" -w '%{http_code}' /api/v1/namespaces/default/pods/two/log)"
expect_eq "$code" "400" "two containers, none named: 400"
expect_eq "$(json 'd["message"]' <"$work/out")" "a container name must be specified for pod two, choose one of: [a b]" "container message"
expect_eq "$(api_curl '/api/v1/namespaces/default/pods/two/log?container=b')" "x" "container=b"
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' '/api/v1/namespaces/default/pods/two/log?container=c')" "400" "unknown container: 400"
make_job logs
wait_for 'd["items"] and d["items"][0]["status"]["phase"]=="Succeeded"' "$(pods_of logs)"
lpod="$(api_curl "$(pods_of logs)" | json 'd["items"][0]["metadata"]["name"]')"
api_curl "/api/v1/namespaces/default/pods/$lpod/log?timestamps=true" >"$work/ts.log"
first_ts="$(sed -n 1p "$work/ts.log" | cut -d' ' -f1)"
# sinceTime with a fraction later than every line still returns the lines of that second.
late="${first_ts%.*}.999999999Z"
expect_eq "$(api_curl "/api/v1/namespaces/default/pods/$lpod/log?sinceTime=$late" | wc -l | tr -d ' ')" "$(wc -l <"$work/ts.log" | tr -d ' ')" "sinceTime has second precision"
expect_eq "$(api_curl "/api/v1/namespaces/default/pods/$lpod/log?sinceSeconds=3600" | wc -l | tr -d ' ')" "$(wc -l <"$work/ts.log" | tr -d ' ')" "sinceSeconds"
expect_eq "$(api_curl "/api/v1/namespaces/default/pods/$lpod/log?sinceTime=2099-01-01T00:00:00Z" | wc -c | tr -d ' ')" "0" "sinceTime in the future"

# Watch: events from a version, label selectors, bookmarks, timeoutSeconds.
rv="$(api_curl '/api/v1/namespaces/default/configmaps' | json 'd["metadata"]["resourceVersion"]')"
for spec in 'w1 a y' 'w2 c y' 'w3 b x' 'w4 b z'; do
  set -- $spec
  api_curl -o /dev/null -X POST -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"app\":\"$2\",\"tier\":\"$3\"}},\"data\":{\"k\":\"v\"}}" \
    /api/v1/namespaces/default/configmaps
done
api_curl -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"data":{"k":"v2"}}' /api/v1/namespaces/default/configmaps/w1
api_curl -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"metadata":{"labels":{"tier":"x"}}}' /api/v1/namespaces/default/configmaps/w4
api_curl -o /dev/null -X DELETE /api/v1/namespaces/default/configmaps/w1
# Replayed from the version taken before the changes: the same events, in order.
api_curl "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$rv&labelSelector=app%20in%20(a,b),tier!=x&allowWatchBookmarks=true&timeoutSeconds=1" >"$work/watch.out"
python3 - "$work/watch.out" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"]
assert seen == [("ADDED", "w1"), ("ADDED", "w4"), ("MODIFIED", "w1"), ("DELETED", "w4"), ("DELETED", "w1")], seen
assert all(e["object"]["kind"] == "ConfigMap" for e in events if e["type"] != "BOOKMARK")
bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
assert bookmarks and bookmarks[-1]["object"]["metadata"]["resourceVersion"].isdigit(), bookmarks
rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
assert rvs == sorted(rvs), rvs
print("ok: watch events, selectors and bookmarks")
PY
# A dropped watch stream (fault) ends mid-way; the client resumes from its last version.
admin POST /_test/faults '{"path": "/api/v1/namespaces/default/configmaps", "query": "watch=1", "dropAfterLines": 1}' >/dev/null
if api_curl "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$rv&timeoutSeconds=1" >"$work/cut.out" 2>/dev/null; then
  fail "the watch stream was not cut"
fi
expect_eq "$(wc -l <"$work/cut.out" | tr -d ' ')" "1" "watch cut after one event"
echo "PASS"
