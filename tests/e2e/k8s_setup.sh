#!/usr/bin/env bash
# ktrain setup on the real control plane (real RBAC, admission and garbage collector):
# the objects pass the API server's validation, a second setup changes nothing, a user
# bound to the generated Role submits, follows, serves, scales and deletes there, and
# can read no Secret nor touch another namespace; setup --check answers from real
# SelfSubjectAccessReviews. kubectl, as the admin and as the users, is the reference.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s

cat >"$work/ws/serve.py" <<'PY'
import http.server, os, socket
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
addr = socket.gethostbyname(socket.gethostname())
http.server.HTTPServer((addr, 8080), H).serve_forever()
PY
start_cluster --nodes 1 --gpus 8 --images "$work/images.json"
cd "$work"
# as_alice / as_nobody ARGS: ktrain as those users (the kubeconfigs of cluster.bash).
as_alice() { KUBECONFIG="$ALICE_KUBECONFIG" "$ktrain" -n team-a "$@"; }
rc_of() { local rc=0; "$@" >"$work/rc.out" 2>&1 || rc=$?; echo "$rc"; }

echo "== --dry-run=client: what the API server accepts"
"$ktrain" setup team-a --dry-run=client --user alice --gpus 16 --cpu 64 --memory 256Gi \
  --max-jobs 50 --allow-egress 10.0.0.0/8 >setup.yaml
kubectl create namespace team-a --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply --dry-run=server -f setup.yaml >dry.out || fail "the API server refused setup's objects: $(cat dry.out)"
expect_eq "$(grep -c 'server dry run' dry.out)" "$(grep -c '^kind:' setup.yaml)" "every object validated by the server"
kubectl delete namespace team-a --wait=false >/dev/null
k8s_wait "namespace team-a to go" 60 sh -c "! kubectl get namespace team-a"
echo "ok: validated"

echo "== setup"
"$ktrain" setup team-a --user alice --gpus 16 --cpu 64 --memory 256Gi --max-jobs 50 >setup.out 2>&1 ||
  fail "setup: $(cat setup.out)"
expect_contains "$(cat setup.out)" "Namespace/team-a applied" "the namespace"
expect_eq "$(kubectl get resourcequota ktrain -n team-a -o jsonpath='{.spec.hard.requests\.nvidia\.com/gpu} {.spec.hard.requests\.cpu} {.spec.hard.count/jobs\.batch}')" \
  "16 64 50" "the quota"
expect_eq "$(kubectl get rolebinding ktrain -n team-a -o jsonpath='{.subjects[0].name} {.roleRef.name}')" "alice ktrain" "alice bound"
expect_eq "$(kubectl get networkpolicy -n team-a -o name | sort | tr '\n' ' ')" \
  "networkpolicy.networking.k8s.io/ktrain-allow-dns networkpolicy.networking.k8s.io/ktrain-default-deny networkpolicy.networking.k8s.io/ktrain-runs " \
  "network policies"
expect_eq "$(kubectl get priorityclass ktrain-training ktrain-serving -o jsonpath='{.items[*].value}')" "1000 10000" "priority classes"
before="$(kubectl get ns/team-a resourcequota/ktrain limitrange/ktrain role/ktrain role/ktrain-view rolebinding/ktrain networkpolicy/ktrain-default-deny networkpolicy/ktrain-allow-dns networkpolicy/ktrain-runs -n team-a -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}')"
"$ktrain" setup team-a --user alice --gpus 16 --cpu 64 --memory 256Gi --max-jobs 50 >/dev/null 2>&1 || fail "setup again"
after="$(kubectl get ns/team-a resourcequota/ktrain limitrange/ktrain role/ktrain role/ktrain-view rolebinding/ktrain networkpolicy/ktrain-default-deny networkpolicy/ktrain-allow-dns networkpolicy/ktrain-runs -n team-a -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}')"
expect_eq "$after" "$before" "a second setup changes nothing (same resourceVersions)"
echo "ok: setup, idempotent"

echo "== setup --check"
expect_eq "$(rc_of env KUBECONFIG="$ALICE_KUBECONFIG" "$ktrain" setup --check team-a)" 0 "alice has every right"
expect_contains "$(cat rc.out)" "every right ktrain uses is granted in team-a" "alice's check"
expect_eq "$(rc_of env KUBECONFIG="$NOBODY_KUBECONFIG" "$ktrain" setup --check team-a)" 1 "nobody lacks them"
expect_contains "$(cat rc.out)" "create  jobs.batch" "the table names the right"
expect_contains "$(cat rc.out)" "rights ktrain uses are not granted in team-a: a cluster admin grants them with 'ktrain setup team-a --user nobody'" \
  "the hint names the user as the API server knows them"
KUBECONFIG="$ALICE_KUBECONFIG" "$ktrain" setup --check team-a -o json >check.json
expect_eq "$(json 'd["allowed"], d["namespaceExists"], len(d["checks"])' <check.json)" \
  "(True, None, 100)" "setup --check -o json (alice may not read namespaces; 100 rights, 48 of them on the operators' kinds)"
echo "ok: check"

echo "== alice in team-a: submit, follow, serve, scale, delete"
cat >job.yaml <<'YAML'
name: job
image: registry.example.com/ml/job:1
train:
  command: [sh, -c, 'echo hello from $KTRAIN_RUN']
  nodes: 1
YAML
run="$(as_alice submit -f job.yaml --follow 2>follow.err)" || fail "alice's submit --follow: $(cat follow.err)"
run="$(head -1 <<<"$run")"
expect_contains "$(as_alice logs "$run")" "hello from $run" "alice reads the logs"
expect_eq "$(kubectl get secret "$run-rdzv" -n team-a -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" \
  "Service/$run" "the Secret is owned by the run's Service"
expect_eq "$(kubectl get pods -n team-a -l "ktrain.dev/run=$run" -o jsonpath='{.items[0].spec.containers[0].resources.requests.cpu}')" \
  "100m" "the LimitRange's default request (the quota needs one)"
cat >web.yaml <<'YAML'
name: web
image: registry.example.com/ml/web:1
serve:
  command: [python3, serve.py]
  port: 8080
  readiness: {path: /, periodSeconds: 1}
YAML
as_alice serve -f web.yaml >serve.out 2>&1 || fail "alice's serve: $(cat serve.out)"
as_alice scale web --replicas 2 >/dev/null 2>&1 || fail "alice's scale"
expect_eq "$(kubectl get deployment web -n team-a -o jsonpath='{.spec.replicas}')" 2 "scaled"
# exec and port-forward: the real API server authorizes alice by the Role's pods/exec and
# pods/portforward, and passes the WebSocket upgrade on to the node, whose agent here
# serves neither (tests/fixtures/k8s/README.md): the refusal comes from there, not RBAC.
rc="$(rc_of as_alice exec web -- true)"
echo "alice's exec: exit $rc: $(cat rc.out)"
case "$(cat rc.out)" in *orbidden*) fail "alice's exec is forbidden: $(cat rc.out)" ;; esac
expect_eq "$rc" 1 "alice's exec: refused by the node, exit 1"
# The API server took the v5 WebSocket and asked the node for the stream (as SPDY).
expect_contains "$(cat rc.out)" "unable to upgrade connection" "alice's exec reached the node"
rc="$(rc_of env KUBECONFIG="$NOBODY_KUBECONFIG" "$ktrain" -n team-a exec web -- true)"
expect_eq "$rc" 3 "exec as a user without rights: exit 3"
expect_contains "$(cat rc.out)" "forbidden" "exec as a user without rights: forbidden"
# port-forward: the real API server takes ktrain's SPDY tunnel (the WebSocket
# subprotocol SPDY/3.1+portforward.k8s.io, as kubectl 1.31+ asks for), authorizes alice
# by pods/portforward, and asks the node to upgrade to SPDY, which its agent does not
# serve: the node's refusal (501) comes back at once, before anything listens.
rc="$(rc_of as_alice port-forward web :8080)"
echo "alice's port-forward: exit $rc: $(head -c 300 rc.out)"
case "$(cat rc.out)" in *orbidden*) fail "alice's port-forward is forbidden: $(cat rc.out)" ;; esac
expect_eq "$rc" 1 "alice's port-forward: refused by the node, exit 1"
expect_contains "$(cat rc.out)" "portforward: 501" "alice's port-forward reached the node"
expect_contains "$(grep 'SPDY upgrade failed' "$CLUSTER_DIR/logs/kube-apiserver.log")" "501" \
  "the API server's SPDY tunnel took alice's port-forward to the node"
rc="$(rc_of env KUBECONFIG="$NOBODY_KUBECONFIG" "$ktrain" -n team-a port-forward web :8080)"
expect_eq "$rc" 3 "port-forward as a user without rights: exit 3, before listening"
expect_contains "$(cat rc.out)" "forbidden" "port-forward as a user without rights: forbidden"
as_alice delete web >/dev/null 2>&1 || fail "alice deletes the service"
as_alice delete "$run" >/dev/null 2>&1 || fail "alice deletes the run"
k8s_wait "the run's objects to go" 30 sh -c \
  "[ -z \"\$(kubectl get jobs,services,secrets -n team-a -l ktrain.dev/run=$run -o name)\" ]"
echo "ok: alice runs in team-a"

echo "== alice's dev pod"
cat >box.yaml <<'YAML'
name: box
image: registry.example.com/ml/box:1
train:
  command: [python3, train.py]
  nodes: 4
  gpus: 1
  shm: 1Gi
YAML
expect_eq "$(rc_of as_alice dev -f box.yaml --dry-run=server)" 0 "the API server accepts the dev pod"
expect_eq "$(kubectl get jobs -n team-a -l ktrain.dev/run=box-dev -o name)" "" "a server dry run keeps nothing"
as_alice dev -f box.yaml --idle-timeout 4s >dev.out 2>dev.err || fail "alice's dev: $(cat dev.err)"
expect_eq "$(cat dev.out)" "box-dev" "alice's dev pod runs"
expect_eq "$(kubectl get pods -n team-a -l ktrain.dev/run=box-dev -o jsonpath='{.items[0].status.phase} {.items[0].spec.containers[0].resources.limits.nvidia\.com/gpu} {.items[0].spec.containers[0].command[0]} {.items[0].metadata.labels.ktrain\.dev/dev}')" \
  "Running 1 /bin/sh true" "kubectl sees it: running, one node's GPUs, the idle loop, the dev label"
# list reads the Job, whose status the Job controller writes a moment after the pod's.
box_listed() { as_alice list | grep -q "box-dev  dev    $1"; }
k8s_wait "alice's list to show the dev pod running" 10 box_listed Running
echo "ok: alice's list shows the dev pod"
# A process in the container, as the container's user (as an exec'd shell is: the node
# agent serves no exec), keeps the pod; once nothing else runs, the idle timeout ends it
# and the Job completes.
pid="$(pgrep -f -n 'ktrain-dev 4 1$')" || fail "the dev pod's idle loop is not running"
nsenter -t "$pid" -m -S 1000 -G 1000 sleep 7
expect_eq "$(kubectl get job box-dev -n team-a -o jsonpath='{.status.active}')" "1" \
  "the pod stays while a command runs in it, beyond the idle timeout"
box_ended() { [ "$(as_alice status box-dev -o json | json 'd["state"]')" = Succeeded ]; }
k8s_wait "the idle dev pod to end" 30 box_ended
expect_contains "$(as_alice logs box-dev)" "nothing else ran in it for 4s (idle timeout 4s): ending" \
  "the dev pod's log says why it ended"
box_listed Succeeded || fail "an ended dev pod in the list: $(as_alice list)"
echo "ok: an ended dev pod in the list"
as_alice dev -f box.yaml --idle-timeout 0 >dev.out 2>dev.err || fail "alice's dev again: $(cat dev.err)"
expect_contains "$(cat dev.err)" "the dev pod box-dev has ended (Succeeded" "dev after the end: says so"
expect_contains "$(cat dev.err)" "created the dev pod box-dev" "dev after the end: a new one"
expect_eq "$(kubectl get job box-dev -n team-a -o jsonpath='{.status.active} {.spec.template.spec.containers[0].command[4]}')" \
  "1 0" "the new dev pod runs, with no idle timeout"
as_alice dev -f box.yaml --stop >/dev/null 2>&1 || fail "alice's dev --stop"
k8s_wait "the dev pod's objects to go" 30 sh -c \
  "[ -z \"\$(kubectl get jobs,services,secrets,pods -n team-a -l ktrain.dev/run=box-dev -o name)\" ]"
echo "ok: alice's dev pod"

echo "== top without metrics-server: alice, who may not read nodes/proxy, is told what to install"
# No metrics-server and no DCGM exporter here, as on a fresh cluster. The kubelets'
# summaries are read through nodes/proxy, which setup never grants: the real RBAC refuses
# it to alice. (An admin's read reaches no kubelet here: the API server does not proxy to
# the node agent's loopback addresses; kube_top.sh covers it against the test API server.)
cat >spin.yaml <<'YAML'
name: spin
image: registry.example.com/ml/spin:1
train:
  command: [sh, -c, 'sleep 60']
  nodes: 1
YAML
spin="$(as_alice submit -f spin.yaml 2>/dev/null | head -1)"
spin_running() { [ "$(as_alice status "$spin" -o json | json 'd["state"]')" = Running ]; }
k8s_wait "$spin to run" 30 spin_running
expect_eq "$(rc_of env KUBECONFIG="$ALICE_KUBECONFIG" kubectl auth can-i get nodes/proxy)" 1 "setup does not grant nodes/proxy"
expect_eq "$(rc_of as_alice top "$spin")" 1 "alice's top with no source: exit 1"
expect_contains "$(cat rc.out)" "install metrics-server" "alice is told what to install"
expect_contains "$(cat rc.out)" "needs nodes/proxy, which this user lacks" "and why the kubelets' figures are not shown"
as_alice delete "$spin" >/dev/null 2>&1 || fail "delete $spin"

echo "== what alice may not do"
run="$(as_alice submit -f job.yaml --wait 2>/dev/null | head -1)"
for what in "get secrets" "get secret $run-rdzv"; do
  expect_eq "$(rc_of env KUBECONFIG="$ALICE_KUBECONFIG" kubectl -n team-a $what)" 1 "kubectl $what as alice"
  expect_contains "$(cat rc.out)" "Forbidden" "kubectl $what as alice: Forbidden"
done
expect_eq "$(rc_of env KUBECONFIG="$ALICE_KUBECONFIG" kubectl -n default get jobs)" 1 "alice in another namespace"
rc="$(rc_of env KUBECONFIG="$ALICE_KUBECONFIG" "$ktrain" -n default submit -f job.yaml)"
[ "$rc" != 0 ] || fail "alice submitted in default"
expect_contains "$(cat rc.out)" "forbidden" "ktrain says alice may not"
expect_eq "$(kubectl get jobs -n default -o name)" "" "nothing reached default"
# The garbage collector takes the Service and the Secret with the Job.
kubectl delete job "$run" -n team-a >/dev/null
k8s_wait "the garbage collector to take $run's Service and Secret" 60 sh -c \
  "[ -z \"\$(kubectl get services,secrets -n team-a -l ktrain.dev/run=$run -o name)\" ]"
echo "ok: alice is kept to team-a and reads no Secret"

echo "== bad input"
expect_eq "$(rc_of "$ktrain" setup Team_A)" 2 "a bad namespace name"
expect_contains "$(cat rc.out)" "NAMESPACE 'Team_A': not a namespace name" "said"
expect_eq "$(rc_of "$ktrain" setup team-b --gpus lots)" 2 "a bad quantity"
expect_contains "$(cat rc.out)" "--gpus lots: not a Kubernetes quantity" "said"
expect_eq "$(rc_of "$ktrain" setup team-b --allow-egress 10.0.0.0/33)" 2 "a bad CIDR"
expect_contains "$(cat rc.out)" "--allow-egress 10.0.0.0/33: not a CIDR" "said"
expect_eq "$(rc_of "$ktrain" setup --check team-a --gpus 4)" 2 "--check with setup flags"
expect_contains "$(cat rc.out)" "--check only reads" "said"
expect_eq "$(rc_of "$ktrain" setup team-b --dry-run=maybe)" 2 "a bad --dry-run"
expect_eq "$(rc_of "$ktrain" setup team-b --cluster-queue pool)" 1 "a LocalQueue without Kueue"
expect_contains "$(cat rc.out)" "Kueue is not installed" "said"
expect_eq "$(rc_of kubectl get namespace team-b)" 1 "nothing was made"
echo "PASS"
