#!/usr/bin/env bash
# On a real node: the kubelet, containerd and runc (tests/fixtures/k8s/real_node.bash)
# joined to the real control plane, in a network namespace of the test's own, pulling
# from a real registry with the pull policy ktrain renders. What users run, end to end:
# `ktrain build` (busybox-static base, ktrain-launch baked in) then `submit --follow`
# of a run through ktrain-launch, `submit --sync` of an edit without a rebuild (one node, then two that meet by the headless
# Service's names, which a DNS stand-in answers), examples/hello-ddp on a Python base
# image made from the host's python3, status (a checkpoint and its age, asked of the running
# pod), logs, exec and port-forward (through the API
# server to the kubelet), exec -it with a terminal, stop and resume, dev --shell, top
# from the kubelet's /stats/summary, a stock image with the
# launcher from the launcher image (named, or pushed by submit where the project names
# none; a dev pod of such an image), the numeric-user default that the kubelet's
# runAsNonRoot check accepts, a container killed at its memory limit explained by
# status, train.retry on the kubelet's exit codes (a failed rank's last lines kept in its
# termination message), the CUDA preflight's refusal (exit 79)
# and the hang watchdog (exit 74) with their termination messages in status, delete
# leaving nothing, and logs -f, status --watch and port-forward ending (exit 3) once the
# API server has not answered for KTRAIN_API_GRACE. Our node agent serves the other
# k8s_* tests (GPU capacity and GPU feature-discovery labels, many nodes: what a real
# node cannot have here); this one uses the real node because these are what a kubelet
# decides.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
real_node_netns "$@"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
# The real node pulls only what this test pushes: no launcher image at ktrain's default name.
unset KTRAIN_LAUNCHER_IMAGE
# ktrain-launch runs inside the images, which have no libraries: a static one. The
# sanitizer build's is dynamic (the sanitizers need their runtime), so there the images
# get the -O2 build's (scripts/test builds build/ first) while ktrain itself is the
# sanitizer build's.
if grep -q "^KTRAIN_SANITIZE:BOOL=ON" "$KTRAIN_BUILD/CMakeCache.txt" 2>/dev/null; then
  static_launch="$(cd "$KTRAIN_SOURCE" && pwd)/build/ktrain-launch"
  { [ -x "$static_launch" ] && file "$static_launch" | grep -q "statically linked"; } ||
    k8s_skip "the sanitizer build's ktrain-launch is dynamic, and there is no static one at $static_launch (scripts/test builds build/ first)"
  export KTRAIN_LAUNCH_PATH=$static_launch
fi
start_cluster --real-node
cd "$work"
export KTRAIN_CACHE_DIR=$work/cache SOURCE_DATE_EPOCH=1700000000
echo "node $NODE_NAME Ready; registry $REGISTRY"

echo "== build, then submit --follow on the kubelet"
mkdir -p proj
cat >proj/work.sh <<'SH'
echo "rank $KTRAIN_RANK of $KTRAIN_WORLD_SIZE as $(id -u) in $(pwd)"
# A holding rank serves its workspace on 8080 (for port-forward).
[ "${HOLD:-0}" = 0 ] || busybox httpd -p 8080 -h /workspace
exec sleep "${HOLD:-0}"
SH
# A GPU helper that reports a driver older than CUDA 12 (the node has no GPU: it stands
# in for the driver, as in k8s_cuda.sh on the node agent).
cat >proj/fake-gpucheck <<'SH'
#!/bin/sh
case "$1" in
  count) echo "info driver CUDA 11.2, 1 GPU(s)"; echo "count 1"; echo "driver_cuda 11020" ;;
esac
SH
chmod +x proj/fake-gpucheck
cat >proj/ktrain.yaml <<YAML
name: real
image:
  build:
    base: $REGISTRY/busybox:1
    repository: $REGISTRY/team/real
train:
  command: [sh, work.sh]
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
YAML
"$ktrain" build -f proj/ktrain.yaml >built 2>build.err || { cat build.err; fail "ktrain build"; }
ref=$(cat built)
[[ $ref =~ ^$REGISTRY/team/real@sha256:[0-9a-f]{64}$ ]] || fail "build printed '$ref'"
k_ok "submit --follow" submit -f proj/ktrain.yaml --run-id a --follow --timeout 120s
expect_contains "$out" "[rank 0] rank 0 of 1 as 1000 in /workspace" "the rank's line, as user 1000 in the workspace"
k_ok "status" status real-a -o json
expect_eq "$(json 'd["state"], d["image"]' <<<"$out")" "('Succeeded', '$ref')" "status: succeeded, the image build pushed"
expect_eq "$(kubectl get pod -l ktrain.dev/run=real-a -o jsonpath='{.items[0].status.containerStatuses[0].imageID}')" \
  "$ref" "the kubelet ran the digest build pushed"
k_ok "logs" logs real-a
expect_contains "$out" "rank 0 of 1 as 1000" "logs of the finished run, from the kubelet"

echo "== submit --sync: an edit, a new file and a removal run on the kubelet without a rebuild"
mv proj/fake-gpucheck fake-gpucheck.keep
cp proj/work.sh work.sh.keep
{ echo 'echo "synced: $(cat note.txt), gpucheck $([ -e fake-gpucheck ] && echo here || echo gone)"'
  cat work.sh.keep; } >proj/work.sh
echo "a note" >proj/note.txt
k_ok "submit --sync --follow" submit -f proj/ktrain.yaml --sync --run-id s --follow --timeout 120s
expect_contains "$out" "[rank 0] synced: a note, gpucheck gone" "the edit, the new file and the removal reached the pod"
expect_contains "$err" "synced 2 entries changed and 1 removed onto $(cut -c1-19 <<<"${ref#*@}")" "submit says what it sent, onto the build"
synced=$REGISTRY/team/real@$(json 'd["images"]["'"$REGISTRY"'/team/real"]["digest"]' <proj/.ktrain/build.json)
[ "$synced" != "$ref" ] || fail "the record still names the build"
expect_eq "$(kubectl get pod -l ktrain.dev/run=real-s -o jsonpath='{.items[0].status.containerStatuses[0].imageID}')" \
  "$synced" "the kubelet ran the synced image"
# Back as it was: a sync that puts the file back and drops the note (the later steps
# serve work.sh from the workspace).
mv fake-gpucheck.keep proj/fake-gpucheck
cp work.sh.keep proj/work.sh
rm proj/note.txt
"$ktrain" build -f proj/ktrain.yaml --sync -o json >sync.json 2>sync.err || { cat sync.err; fail "build --sync back"; }
expect_eq "$(json 'd["sync"]["changed"], d["sync"]["removed"], d["sync"]["depth"]' <sync.json)" \
  "(2, 1, 2)" "the sync back: work.sh and fake-gpucheck, the note removed, on the first sync"
k_ok "delete real-s" delete real-s

echo "== two nodes: the ranks meet through the headless Service's names"
k_ok "submit --follow of 2 nodes" submit -f proj/ktrain.yaml --set train.nodes=2 --run-id b --follow --timeout 120s
expect_contains "$out" "[rank 0] rank 0 of 2 as 1000" "rank 0's line"
expect_contains "$out" "[rank 1] rank 1 of 2 as 1000" "rank 1's line: it found rank 0 by real-b-0.real-b"
k_ok "status of the 2-node run" status real-b -o json
expect_eq "$(json 'd["state"], [r["index"] for r in d["ranks"]]' <<<"$out")" "('Succeeded', [0, 1])" "status: both ranks succeeded"

echo "== the README's example: hello-ddp, built on a Python base, 2 nodes x 2 processes"
# A ring all-reduce over TCP between the pods, each in a network namespace of its own.
real_node_python_image "$REGISTRY/python:3"
cp -r "$KTRAIN_SOURCE/examples/hello-ddp" ddp
ddp_set=(--set "image.ref=$REGISTRY/ktrain/hello-ddp:0.1.0" --set "image.build.base=$REGISTRY/python:3"
  --set "image.build.repository=$REGISTRY/ktrain/hello-ddp")
"$ktrain" build -f ddp/ktrain.yaml "${ddp_set[@]}" >ddp.built 2>ddp.err || { cat ddp.err; fail "ktrain build of hello-ddp"; }
k_ok "submit --follow of hello-ddp" submit -f ddp/ktrain.yaml "${ddp_set[@]}" --run-id a --follow --timeout 180s
for r in 0 1 2 3; do
  expect_contains "$out" "[rank $r] all-reduce OK: 32 elements summed over 4 workers (checksum 5280)" \
    "hello-ddp: rank $r's result"
done
expect_eq "$(kubectl get pod -l ktrain.dev/run=hello-ddp-a -o jsonpath='{.items[*].status.containerStatuses[0].imageID}')" \
  "$(cat ddp.built) $(cat ddp.built)" "both pods ran the image build pushed"

echo "== exec into a running rank, through the API server to the kubelet"
# The holding run keeps its checkpoints on an emptyDir (train.volumes, checkpoint: true).
sed -i 's/^  preflight: "off"$/  preflight: "off"\n  env: {HOLD: "120"}\n  volumes: [{emptyDir: true, mount: \/ckpt, checkpoint: true}]/' proj/ktrain.yaml
k_ok "submit a holding run" submit -f proj/ktrain.yaml --run-id h
wait_state real-h Running 90
k_ok "exec" exec real-h -- sh -c 'echo in-pod $(id -u) $JOB_COMPLETION_INDEX'
expect_eq "$out" "in-pod 1000 0" "exec ran in the rank's container"

echo "== status: the checkpoint a restart resumes from, asked of the running pod"
k_ok "status before a checkpoint" status real-h
expect_contains "$out" "Checkpoint: none yet in /ckpt" "status: no checkpoint yet"
k_ok "a checkpoint, and one half-written" exec real-h -- sh -c 'mkdir /ckpt/step-10 /ckpt/step-20.tmp'
k_ok "status with a checkpoint" status real-h
grep -qE "^Checkpoint: /ckpt/step-10 \(written [0-9]+s ago\)$" <<<"$out" ||
  fail "status: the checkpoint and its age: $out"
k_ok "status -o json with a checkpoint" status real-h -o json
expect_eq "$(json 'd["checkpoint"]["path"], abs(__import__("datetime").datetime.fromisoformat(d["checkpoint"]["written"].replace("Z", "+00:00")).timestamp() - __import__("time").time()) < 600' <<<"$out")" \
  "('/ckpt/step-10', True)" "status -o json: the checkpoint's path and when it was written"
echo "ok: status shows the running pod's newest complete checkpoint and its age"

echo "== port-forward to the rank, through the API server to the kubelet"
"$ktrain" port-forward real-h :8080 >pf.out 2>pf.err &
pf_pid=$!
port=""
for _ in $(seq 1 100); do
  port="$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) -> 8080$/\1/p' pf.out | head -1)"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "port-forward printed no port: $(cat pf.out pf.err)"
expect_eq "$(curl -sS -m 10 "http://127.0.0.1:$port/work.sh" | head -1)" \
  "$(head -1 proj/work.sh)" "a file of the workspace, served in the pod, through port-forward"
kill "$pf_pid" 2>/dev/null; wait "$pf_pid" 2>/dev/null || true

echo "== top from the kubelet's /stats/summary (no metrics-server here)"
k8s_wait "the kubelet's first figures for the rank" 60 sh -c "'$ktrain' top real-h -o json >top.json"
expect_eq "$(json '[r["rank"] for r in d["ranks"]], d["ranks"][0]["memoryBytes"] > 0' <top.json)" \
  "([0], True)" "top: the rank's memory, from the kubelet"

echo "== exec -it: a terminal in the rank's container (script(1) gives this side one)"
printf 'tty; stty size; exit 4\n' | script -qec "stty rows 33 cols 101 2>/dev/null; '$ktrain' exec real-h -it -- sh" /dev/null >tty.out 2>&1 && rc=0 || rc=$?
expect_eq "$rc" 4 "exec -it: the shell's exit status ($(tr -d '\r' <tty.out | tail -5))"
grep -q '^/dev/pts/[0-9]' <(tr -d '\r' <tty.out) || fail "exec -it: no terminal in the container: $(cat tty.out)"
grep -q '^33 101$' <(tr -d '\r' <tty.out) || fail "exec -it: the terminal's size did not reach the container: $(cat tty.out)"
echo "ok: exec -it: a terminal of this side's size in the container"

echo "== stop and resume: the pods go, and come back"
k_ok "stop real-h" stop real-h
wait_state real-h Stopped 60
k8s_wait "the stopped run's pod to go" 60 sh -c "[ -z \"\$(kubectl get pods -l ktrain.dev/run=real-h -o name)\" ]"
k_ok "resume real-h" resume real-h
wait_state real-h Running 90
k_ok "exec after resume" exec real-h -- sh -c 'echo back $JOB_COMPLETION_INDEX'
expect_eq "$out" "back 0" "the resumed rank runs"
k_ok "delete real-h" delete real-h
sed -i '/^  volumes: \[{emptyDir: true, mount: \/ckpt, checkpoint: true}\]$/d' proj/ktrain.yaml  # later steps: none
grep -q "checkpoint: true" proj/ktrain.yaml && fail "the checkpoint volume is still in the project"

echo "== dev --shell: a dev pod on the kubelet, a shell in it"
out="$(printf 'echo "in $KTRAIN_RUN as $(id -u)"\nexit 3\n' | "$ktrain" dev -f proj/ktrain.yaml --shell 2>dev.err)" && rc=0 || rc=$?
expect_eq "$rc" 3 "dev --shell: the shell's exit status ($(tail -3 dev.err))"
expect_eq "$out" "in real-dev as 1000" "dev --shell: a shell in the dev pod, as the project's user"
k_ok "dev --stop" dev -f proj/ktrain.yaml --stop

echo "== serve: the kubelet probes each replica's readiness; serve returns at the autoscaler's minimum"
cat >proj/web.yaml <<YAML
name: web
image: $ref
serve:
  command: [busybox, httpd, -f, -p, "8080", -h, /workspace]
  port: 8080
  cpu: 100m
  memory: 64Mi
  autoscale: {min: 2, max: 3, cpu: 70}
  readiness: {path: /work.sh, periodSeconds: 1}
launcher:
  inject: never
YAML
k_ok "serve" serve -f proj/web.yaml --timeout 120s
expect_contains "$out" "web: rolled out, 2 replicas available" "serve returns with the minimum of 2 ready"
expect_eq "$(kubectl get deployment web -o jsonpath='{.status.readyReplicas}')" "2" \
  "kubectl: the kubelet found both replicas ready"
k_ok "delete web" delete web

echo "== a stock image: the launcher comes from the launcher image, by an init container"
"$ktrain" build --launcher-image "$REGISTRY/ktrain-launch:test" >launcher.built 2>launcher.err ||
  { cat launcher.err; fail "ktrain build --launcher-image"; }
cat >proj/stock.yaml <<YAML
name: stock
image: $REGISTRY/busybox:1
train:
  command: [sh, -c, 'echo stock rank \$KTRAIN_RANK of \$KTRAIN_WORLD_SIZE']
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
launcher:
  image: $REGISTRY/ktrain-launch:test
YAML
k_ok "submit --follow of a stock image" submit -f proj/stock.yaml --run-id a --follow --timeout 120s
expect_contains "$out" "[rank 0] stock rank 0 of 1" "the stock image ran through the injected launcher"
expect_eq "$(kubectl get pod -l ktrain.dev/run=stock-a -o jsonpath='{.items[0].status.initContainerStatuses[0].state.terminated.exitCode}')" \
  "0" "the launcher's init container copied it"

echo "== a stock image and no launcher image named: submit says what to run, or pushes one"
# The stock project above, without its launcher image.
sed '/^launcher:/,$d; s/^name: stock/name: bare/; s/echo stock rank/echo bare rank/' proj/stock.yaml >proj/bare.yaml
k submit -f proj/bare.yaml --run-id a
expect_eq "$rc" 2 "no registry to push the launcher image to: a usage error"
expect_contains "$err" "ktrain's default, ghcr.io/ktrain/ktrain-launch:" "the error names the default, unpublished image"
expect_contains "$err" "ktrain submit --push-launcher REGISTRY/PATH/ktrain-launch" "the error says what to run"
expect_eq "$(kubectl get jobs,secrets,services -l ktrain.dev/run=bare-a -o name)" "" "nothing was created"
k_ok "submit --push-launcher" submit -f proj/bare.yaml --run-id a --push-launcher "$REGISTRY/team/ktrain-launch" --follow --timeout 120s
expect_contains "$err" "the launcher image for $REGISTRY/busybox:1: $REGISTRY/team/ktrain-launch@sha256:" "submit pushed the launcher image"
expect_contains "$err" "(pushed)" "the first time, it was pushed"
expect_contains "$out" "[rank 0] bare rank 0" "the stock image ran through the launcher submit pushed"
k_ok "submit --push-launcher again" submit -f proj/bare.yaml --run-id b --push-launcher "$REGISTRY/team/ktrain-launch"
expect_contains "$err" "(the registry had it)" "the second time, nothing was uploaded"
# A dev pod of the stock image has the launcher too (ktrain-launch -- CMD works in it).
k dev -f proj/bare.yaml --shell </dev/null
expect_eq "$rc" 2 "dev: no registry to push the launcher image to: a usage error"
expect_contains "$err" "ktrain dev --push-launcher REGISTRY/PATH/ktrain-launch" "dev's error says what to run"
expect_eq "$(kubectl get jobs,pods -l ktrain.dev/run=bare-dev -o name)" "" "dev created nothing"
out="$(printf '/opt/ktrain/bin/ktrain-launch --version\nexit 5\n' |
  "$ktrain" dev -f proj/bare.yaml --push-launcher "$REGISTRY/team/ktrain-launch" --shell 2>dev.err)" && rc=0 || rc=$?
expect_eq "$rc" 5 "dev --shell of a stock image: the shell's exit status ($(tail -3 dev.err))"
expect_contains "$out" "ktrain-launch" "ktrain-launch runs in the stock image's dev pod"
expect_contains "$(cat dev.err)" "(the registry had it)" "dev used the launcher image submit pushed"
k_ok "dev --stop of the stock image's pod" dev -f proj/bare.yaml --stop
# A project that builds its own image elsewhere, running a stock one: the launcher image
# goes beside image.build.repository.
cat >>proj/bare.yaml <<YAML
launcher: {inject: auto}
YAML
sed -i "s|^image: .*|image:\n  ref: $REGISTRY/busybox:1\n  build: {base: $REGISTRY/busybox:1, repository: $REGISTRY/team/app}|" proj/bare.yaml
k_ok "submit beside image.build.repository" submit -f proj/bare.yaml --run-id c
expect_contains "$(kubectl get job bare-c -o jsonpath='{.spec.template.spec.initContainers[0].image}')" \
  "$REGISTRY/team/ktrain-launch@sha256:" "the launcher image, pushed beside the project's repository"
for r in a b c; do k_ok "delete bare-$r" delete "bare-$r"; done

# built_project NAME COMMAND: proj/NAME.yaml, one node of the image build pushed (it has
# the launcher: nothing injected), no GPU, no preflight; more of train on stdin.
built_project() {
  { cat <<YAML
name: $1
image: $ref
launcher:
  inject: never
train:
  command: $2
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
YAML
    cat; } >"proj/$1.yaml"
}

echo "== a memory limit the rank passes: OOMKilled, explained"
built_project oom "[sh, -c, 'x=a; while :; do x=\$x\$x; done']" <<YAML
  memory: 24Mi
YAML
k submit -f proj/oom.yaml --run-id a --wait --timeout 120s
expect_eq "$rc" 1 "a run killed at its memory limit fails (exit 1)"
k_ok "status of the OOMKilled run" status oom-a
expect_contains "$out" "Why:        rank 0 ran out of memory (limit 24Mi) and was killed (OOMKilled)" \
  "status: OOMKilled, with the limit it passed"

echo "== train.retry: the exit code decides (podFailurePolicy, on the kubelet's exit codes)"
built_project retry "[sh, -c, 'echo \"exits \$CODE\"; exit \$CODE']" <<YAML
  restarts: 0
  retry:
    - {exitCodes: [143], action: retry-free}
    - {otherExitCodes: true, action: fail}
YAML
k submit -f proj/retry.yaml --run-id a --set train.env.CODE=3 --wait --timeout 120s
expect_eq "$rc" 1 "exit 3 (otherExitCodes: fail): the run fails"
expect_eq "$(kubectl get pods -l ktrain.dev/run=retry-a -o name | wc -l)" 1 "fail: one pod, no retry"
k_ok "status of the run a rule failed" status retry-a
expect_contains "$out" "a pod failure rule failed the run at once" "status: a rule ended it"
expect_contains "$out" "failed with exit code 3 matching FailJob rule at index 1" "status: which rule, as the Job controller says"
expect_contains "$out" "$(printf 'Last lines of node 0 (kept in its termination message, with the pod):\n  exits 3')" \
  "status: the rank's last line, from the termination message the kubelet kept"
expect_eq "$(kubectl get pod -l ktrain.dev/run=retry-a -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}')" \
  "$(printf 'rank 0 exited 3\nlast lines of rank 0:\nexits 3')" "the kubelet's termination message: the cause, then the last lines"
k_ok "status -o json of the failed run" status retry-a -o json
expect_eq "$(json 'd["ranks"][0]["message"], d["ranks"][0]["lastLines"]' <<<"$out")" "('rank 0 exited 3', ['exits 3'])" \
  "status -o json: the cause and the last lines apart"
k_ok "submit a run that exits 143" submit -f proj/retry.yaml --run-id b --set train.env.CODE=143
# restarts: 0, so a counted failure would end the run at once: a second try is free.
k8s_wait "a second, uncounted try of retry-b" 120 sh -c \
  "[ \$(kubectl get pods -l ktrain.dev/run=retry-b --field-selector=status.phase=Failed -o name | wc -l) -ge 2 ]"
expect_eq "$(kubectl get job retry-b -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}')" "" \
  "retry-free: the Job has not failed, with restarts 0"
k_ok "delete retry-a" delete retry-a
k_ok "delete retry-b" delete retry-b

echo "== the CUDA preflight's refusal on the kubelet: exit 79, its termination message in status"
# No GPU here: the pod asks for none, and the launcher is told of one (train.env's
# KTRAIN_GPUS replaces the rendered 0) with the scripted helper standing in for an 11.2
# driver.
built_project olddriver "[sh, -c, 'echo \"never runs\"']" <<YAML
  cuda: "12.4"
  env: {KTRAIN_GPUS: "1", KTRAIN_GPUCHECK: /workspace/fake-gpucheck}
YAML
sed -i 's/^  preflight: "off"$/  preflight: quick/' proj/olddriver.yaml
k submit -f proj/olddriver.yaml --run-id a --wait --timeout 120s
expect_eq "$rc" 1 "a driver too old for the image's CUDA fails the run"
expect_eq "$(kubectl get pod -l ktrain.dev/run=olddriver-a -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}')" \
  "79" "the kubelet saw exit 79"
k_ok "status of the refused run" status olddriver-a
expect_contains "$out" "failed with exit code 79: the node's NVIDIA driver is too old for the image: node $NODE_NAME" \
  "status: the launcher's words, naming the node, from the termination message"
expect_contains "$out" "CUDA 12.4" "status: the CUDA version the image needs"
k_ok "logs of the refused run" logs olddriver-a
if grep -q "never runs" <<<"$out"; then fail "a worker ran on a driver too old"; fi
k_ok "delete olddriver-a" delete olddriver-a

echo "== the hang watchdog on the kubelet: exit 74, the termination message, status"
# train.watchdog.timeout is at least 1m; the launcher's variable sets seconds for a test.
built_project hang "[sh, -c, 'echo \"loading\"; exec sleep 600']" <<YAML
  env: {KTRAIN_WATCHDOG_TIMEOUT: "3"}
YAML
k submit -f proj/hang.yaml --run-id a --wait --timeout 120s
expect_eq "$rc" 1 "a hung rank fails the run"
expect_contains "$err" "rank 0 hung: no output and no heartbeat for" "submit --wait says which rank hung"
expect_eq "$(kubectl get pod -l ktrain.dev/run=hang-a -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}')" \
  "74" "the kubelet saw exit 74"
k_ok "status of the hung run" status hang-a
expect_contains "$out" "failed with exit code 74 (the watchdog): rank 0 hung: no output and no heartbeat for" \
  "status: the watchdog's words, from the termination message"
k_ok "logs of the hung run" logs hang-a
expect_contains "$out" "watchdog: rank 0 has had no output and no heartbeat for" "logs: the watchdog's dump"
k_ok "delete hang-a" delete hang-a

echo "== delete leaves nothing"
k_ok "delete real-a" delete real-a
k_ok "delete real-b" delete real-b
k_ok "delete hello-ddp-a" delete hello-ddp-a
k_ok "delete oom-a" delete oom-a
k_ok "delete stock-a" delete stock-a
k8s_wait "nothing of the runs to be left" 90 sh -c \
  "[ -z \"\$(kubectl get pods,services,jobs,deployments,secrets -l 'ktrain.dev/run in (bare-a,bare-b,bare-c,real-a,real-b,hello-ddp-a,real-h,real-dev,bare-dev,web,oom-a,stock-a,retry-a,retry-b,hang-a,olddriver-a)' -o name 2>/dev/null)\" ]"
echo "== the API server goes: a follow, a watch and a port-forward end after the grace period"
built_project gone "[sh, -c, 'echo \"up\"; busybox httpd -p 8080 -h /workspace; exec sleep 600']" </dev/null
k_ok "submit a run to follow" submit -f proj/gone.yaml --run-id a
wait_state gone-a Running 90
export KTRAIN_API_GRACE=5
"$ktrain" logs -f gone-a >gone-logs.out 2>gone-logs.err & logs_pid=$!
"$ktrain" status --watch gone-a >gone-watch.out 2>gone-watch.err & watch_pid=$!
"$ktrain" port-forward gone-a :8080 >gone-pf.out 2>gone-pf.err & pf_pid=$!
k8s_wait "the follow's first line" 30 grep -q "up" gone-logs.out
k8s_wait "port-forward to listen" 30 grep -q "^Forwarding from" gone-pf.out
api_pid=""
for p in $(cat "$CLUSTER_DIR/pids"); do
  case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in *kube-apiserver*) api_pid=$p ;; esac
done
[ -n "$api_pid" ] || fail "no kube-apiserver process among the cluster's"
kill -KILL "$api_pid"
t0=$SECONDS
for what in logs watch pf; do
  pid_var=${what}_pid
  rc=0
  timeout 60 tail --pid="${!pid_var}" -f /dev/null || fail "$what did not end within 60s of the API server's end"
  wait "${!pid_var}" || rc=$?
  expect_eq "$rc" 3 "$what: exit 3 once the API server is gone"
  expect_contains "$(cat "gone-$what.err")" "the API server has not answered for 5s: giving up (the run itself goes on" \
    "$what: says why it ended"
done
echo "ok: all three ended $((SECONDS - t0))s after the API server"
unset KTRAIN_API_GRACE
echo "PASS"
