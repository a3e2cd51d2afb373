#!/usr/bin/env bash
# The test API server's error responses, as kubectl and a raw client see them:
# 401 (no or bad credentials), bad client certificates, the 403 rule, 404,
# 409 AlreadyExists and Conflict, 422 with causes, 410 Gone, and injected
# faults (429 with Retry-After, 503, a body cut short).
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
require_kubectl
start_apiserver
work="$APISERVER_DIR/work"
mkdir -p "$work"

# It accepts many connections at once, as the real one does (clients that open 16
# together had their SYNs dropped by a backlog of 5, and waited a second).
if command -v ss >/dev/null; then
  backlog="$(ss -Hltn "sport = :$APISERVER_PORT" | awk '{print $3}')"
  [ "${backlog:-0}" -ge 128 ] || fail "the listening socket's backlog is ${backlog:-unknown}, not at least 128"
  echo "ok: listen backlog $backlog"
else
  echo "SKIP: ss (iproute2) is not installed: listen backlog not checked"
fi

job_json='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"busybox"}]}}}}'
jobs=/apis/batch/v1/namespaces/default/jobs

# 401: no credentials, a wrong token.
code="$(curl -sS -o "$work/out" -w '%{http_code}' --cacert "$APISERVER_DIR/ca.crt" "$APISERVER_URL/api/v1/namespaces/default/pods")"
expect_eq "$code" "401" "no credentials: 401"
expect_eq "$(json 'd["kind"]+" "+d["status"]+" "+d["reason"]+" "+str(d["code"])' <"$work/out")" "Status Failure Unauthorized 401" "401 is a metav1.Status"
expect_contains "$(kubectl --token=wrong get pods 2>&1 || true)" "You must be logged in to the server" "kubectl with a wrong token"
# A client certificate from another CA fails the TLS handshake.
if curl -sS -o /dev/null --cacert "$APISERVER_DIR/ca.crt" --cert "$APISERVER_DIR/bad-client.crt" \
    --key "$APISERVER_DIR/bad-client.key" "$APISERVER_URL/api" 2>/dev/null; then
  fail "a client certificate from another CA was accepted"
fi
echo "ok: foreign client certificate rejected"
expect_eq "$(curl -sS --cacert "$APISERVER_DIR/ca.crt" --cert "$APISERVER_DIR/client.crt" --key "$APISERVER_DIR/client.key" \
  "$APISERVER_URL/api/v1/namespaces/default" | json 'd["metadata"]["name"]')" "default" "client certificate accepted"
# Extra tokens from the script map to other users.
admin POST /_test/script '{"tokens": {"alice-token": "alice"}}' >/dev/null
expect_eq "$(kubectl --token=alice-token get ns default -o name)" "namespace/default" "scripted token"

# 404 NotFound.
expect_eq "$(kubectl get job nope 2>&1 || true)" 'Error from server (NotFound): jobs.batch "nope" not found' "404 message"

# 409 AlreadyExists.
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d "$job_json" "$jobs")" "201" "create: 201"
code="$(api_curl -o "$work/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d "$job_json" "$jobs")"
expect_eq "$code" "409" "create again: 409"
expect_eq "$(json 'd["reason"]+": "+d["message"]+" "+d["details"]["group"]+"/"+d["details"]["kind"]' <"$work/out")" \
  'AlreadyExists: jobs.batch "x" already exists batch/jobs' "AlreadyExists Status"
echo "$job_json" >"$work/x.json"
expect_contains "$(kubectl create -f "$work/x.json" 2>&1 || true)" 'Error from server (AlreadyExists): error when creating' "kubectl create: AlreadyExists"

# 409 Conflict: PUT with a stale resourceVersion.
api_curl "$jobs/x" >"$work/x-current.json"
stale="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["metadata"]["resourceVersion"]="1"; d["metadata"]["labels"]={"a":"b"}; print(json.dumps(d))' "$work/x-current.json")"
code="$(api_curl -o "$work/out" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' -d "$stale" "$jobs/x")"
expect_eq "$code" "409" "stale update: 409"
expect_eq "$(json 'd["reason"]' <"$work/out")" "Conflict" "Conflict reason"
expect_contains "$(json 'd["message"]' <"$work/out")" 'Operation cannot be fulfilled on jobs.batch "x": the object has been modified' "Conflict message"
fresh="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["metadata"]["labels"]={"a":"b"}; print(json.dumps(d))' "$work/x-current.json")"
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' -d "$fresh" "$jobs/x")" "200" "fresh update: 200"

# 403 rule: the real message format, for kubectl and in the Status details.
admin POST /_test/forbid '{"verb": "patch", "resource": "jobs"}' >/dev/null
expect_eq "$(kubectl patch job x --type=merge -p '{"metadata":{"labels":{"b":"c"}}}' 2>&1 || true)" \
  'Error from server (Forbidden): jobs.batch "x" is forbidden: User "test-user" cannot patch resource "jobs" in API group "batch" in the namespace "default"' \
  "403 message"
code="$(api_curl -o "$work/out" -w '%{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{}' "$jobs/x")"
expect_eq "$code" "403" "403 status"
expect_eq "$(json 'd["reason"]+" "+d["details"]["name"]+" "+d["details"]["kind"]' <"$work/out")" "Forbidden x jobs" "403 details"
expect_eq "$(kubectl get job x -o name)" "job.batch/x" "other verbs still allowed"
admin DELETE /_test/forbid >/dev/null
expect_eq "$(kubectl patch job x --type=merge -p '{"metadata":{"labels":{"b":"c"}}}')" "job.batch/x patched" "403 rule removed"

# 422 Invalid with details.causes.
bad='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main"}]}}}}'
echo "$bad" >"$work/bad.json"
expect_eq "$(kubectl apply -f "$work/bad.json" 2>&1 || true)" \
  'The Job "bad" is invalid: spec.template.spec.containers[0].image: Required value' "422 message (kubectl)"
code="$(api_curl -o "$work/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d "$bad" "$jobs")"
expect_eq "$code" "422" "422 status"
expect_eq "$(json 'd["reason"]+" "+d["details"]["kind"]+" "+d["details"]["causes"][0]["reason"]+" "+d["details"]["causes"][0]["field"]' <"$work/out")" \
  "Invalid Job FieldValueRequired spec.template.spec.containers[0].image" "422 causes"
code="$(api_curl -o "$work/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}' /api/v1/namespaces/default/configmaps)"
expect_eq "$code" "422" "invalid name: 422"
expect_contains "$(json 'd["message"]' <"$work/out")" 'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain' "invalid name message"
# Server-side apply without a field manager is a 400.
code="$(api_curl -o "$work/out" -w '%{http_code}' -X PATCH -H 'Content-Type: application/apply-patch+yaml' -d "$job_json" "$jobs/x")"
expect_eq "$code" "400" "apply without fieldManager: 400"

# 410 Gone: a watch from a compacted resourceVersion, and a stale continue token.
for i in 1 2 3; do
  api_curl -o /dev/null -X POST -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c$i\"}}" /api/v1/namespaces/default/configmaps
done
page="$(api_curl '/api/v1/namespaces/default/configmaps?limit=1')"
token="$(echo "$page" | json 'd["metadata"]["continue"]')"
expect_eq "$(echo "$page" | json 'd["metadata"]["remainingItemCount"]')" "2" "paging: remainingItemCount"
old_rv="$(echo "$page" | json 'd["metadata"]["resourceVersion"]')"
api_curl -o /dev/null -X POST -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c4"}}' /api/v1/namespaces/default/configmaps
admin POST /_test/compact >/dev/null
api_curl "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$((old_rv - 2))" >"$work/watch.out"
expect_eq "$(json 'd["type"]+" "+str(d["object"]["code"])+" "+d["object"]["reason"]' <"$work/watch.out")" "ERROR 410 Expired" "watch from a compacted version: 410"
expect_contains "$(json 'd["object"]["message"]' <"$work/watch.out")" "too old resource version: $((old_rv - 2))" "410 message"
code="$(api_curl -o "$work/out" -w '%{http_code}' "/api/v1/namespaces/default/configmaps?limit=1&continue=$token")"
expect_eq "$code" "410" "stale continue token: 410"

# Injected faults: 503 twice then success; 429 with Retry-After; a body cut short; latency.
admin POST /_test/faults '{"method": "GET", "path": "/api/v1/namespaces/*/configmaps", "status": 503, "count": 2}' >/dev/null
codes=""
for i in 1 2 3; do codes="$codes $(api_curl -o /dev/null -w '%{http_code}' /api/v1/namespaces/default/configmaps)"; done
expect_eq "$codes" " 503 503 200" "503 twice, then 200"
admin POST /_test/faults '{"path": "/api/v1/namespaces/default/configmaps/c1", "status": 429, "retryAfter": 2}' >/dev/null
api_curl -D "$work/headers" -o "$work/out" /api/v1/namespaces/default/configmaps/c1
expect_contains "$(tr -d '\r' <"$work/headers" | tr 'A-Z' 'a-z')" "retry-after: 2" "429 carries Retry-After"
expect_eq "$(json 'd["code"]' <"$work/out")" "429" "429 Status body"
admin POST /_test/faults '{"path": "/api/v1/namespaces/default/configmaps", "dropAfterBytes": 20}' >/dev/null
if api_curl -o "$work/cut" /api/v1/namespaces/default/configmaps 2>/dev/null; then fail "a cut body was not noticed"; fi
expect_eq "$(wc -c <"$work/cut" | tr -d ' ')" "20" "body cut after 20 bytes"
expect_eq "$(api_curl -o /dev/null -w '%{http_code}' /api/v1/namespaces/default/configmaps)" "200" "next request whole again"
expect_eq "$(admin GET '/_test/requests?method=PUT' | json '[e["status"] for e in d]')" "[409, 200]" "request log statuses"
admin DELETE /_test/requests >/dev/null
admin POST /_test/faults '{"path": "/version", "latencyMs": 300}' >/dev/null
t="$(api_curl -o /dev/null -w '%{time_total}' /version)"
python3 -c "import sys; sys.exit(0 if float('$t') >= 0.3 else 1)" || fail "latency not injected ($t s)"
echo "ok: latency"

# The request log.
expect_eq "$(admin GET '/_test/requests?path=/version' | json 'len(d)')" "1" "request log filter"
echo "PASS"
