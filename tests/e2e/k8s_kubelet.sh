#!/usr/bin/env bash
# What a kubelet refuses, on the real control plane with the node agent: each
# refusal with the reason and message a kubelet writes, read back with kubectl
# and with ktrain status. ktrain's runs get a numeric non-root user, which the
# kubelet accepts for root images too, or root when asked for. A stock image
# without ktrain-launch runs through launcher injection (an init container
# copies it from the launcher image); without injection it fails at start, as
# on a real cluster.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s

cat >"$work/images.json" <<JSON
{
  "registry.example.com/ml/*": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$work/ws"}},
  "nvcr.io/nvidia/pytorch:*": {"user": "", "workdir": "/workspace"},
  "docker.io/library/python:*": {"user": "", "workdir": "/"},
  "registry.example.com/stock/named:*": {"user": "ubuntu", "users": {"ubuntu": "1000:1000"}},
  "registry.example.com/stock/nolauncher:*": {"user": "1000", "workdir": "/workspace"},
  "registry.example.com/rootml/*": {"user": "", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$work/ws"}},
  $launcher_image,
  "registry.example.com/ktrain/launch:*": {"user": "", "files": {"/ktrain-launch": "$launcher"}}
}
JSON
start_cluster --nodes 1 --gpus 8 --images "$work/images.json"
cd "$work"

# project NAME IMAGE
project() {
  cat >"$work/$1.yaml" <<YAML
name: $1
image: $2
train:
  command: [python3, train.py]
  framework: pytorch
  nodes: 1
  gpus: 1
  preflight: "off"
YAML
}
# waiting POD_SELECTOR: the first container's waiting reason and message.
waiting() {
  kubectl get pods -l "$1" -o jsonpath='{.items[0].status.containerStatuses[0].state.waiting.reason}: {.items[0].status.containerStatuses[0].state.waiting.message}'
}
wait_reason() {  # wait_reason SELECTOR REASON
  k8s_wait "$2 on $1" 60 sh -c "kubectl get pods -l '$1' -o jsonpath='{.items[0].status.containerStatuses[0].state.*.reason}' | grep -qx '$2'"
}

echo "== runAsNonRoot and an image that runs as root, or as a named user"
# The kubelet's refusals (pods without a numeric user), word for word.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: asroot, labels: {t: asroot}}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: c, image: "nvcr.io/nvidia/pytorch:24.08-py3", command: [python3, -c, "print(1)"]}
---
apiVersion: v1
kind: Pod
metadata: {name: named, labels: {t: named}}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: c, image: "registry.example.com/stock/named:1", command: [python3, -c, "print(1)"]}
YAML
wait_reason t=asroot CreateContainerConfigError
uid="$(kubectl get pod asroot -o jsonpath='{.metadata.uid}')"
expect_eq "$(waiting t=asroot)" "CreateContainerConfigError: container has runAsNonRoot and image will run as root (pod: \"asroot_default($uid)\", container: c)" \
  "the kubelet's refusal of a root image, word for word"
expect_contains "$(kubectl get events --field-selector involvedObject.name=asroot,reason=Failed -o jsonpath='{.items[*].message}')" \
  "Error: container has runAsNonRoot and image will run as root" "the kubelet's event"
wait_reason t=named CreateContainerConfigError
expect_contains "$(waiting t=named)" \
  "container has runAsNonRoot and image has non-numeric user (ubuntu), cannot verify user is non-root" "the kubelet's refusal of a user name"

echo "== ktrain's runs: a numeric non-root user by default, root when asked for"
# A root image with ktrain-launch (as ktrain build makes from a stock base).
cat >"$work/ws/who.sh" <<'SH'
echo "uid=$(id -u) gid=$(id -g) home=$HOME"
touch "$HOME/.written" && echo "home is writable"
SH
cat >"$work/who.yaml" <<'YAML'
name: who
image: registry.example.com/rootml/who:1
train:
  command: [sh, who.sh]
  framework: none
  nodes: 1
  gpus: 0
  preflight: "off"
YAML
k_ok "submit who" submit -f who.yaml --run-id a --wait --timeout 60s
k_ok "logs who" logs who-a
expect_eq "$out" "$(printf '[rank 0] uid=1000 gid=1000 home=/home/ktrain\n[rank 0] home is writable')" \
  "a root image runs as 1000:1000 with a writable HOME (no CreateContainerConfigError)"
k_ok "submit who as root" submit -f who.yaml --run-id b --set security.runAsNonRoot=false --wait --timeout 60s
k_ok "logs who as root" logs who-b
expect_eq "$(head -n 1 <<<"$out")" "[rank 0] uid=0 gid=0 home=/root" "security.runAsNonRoot: false runs as the image's user, root"
k_ok "validate as root" validate -f who.yaml --set security.runAsNonRoot=false
expect_contains "$out" "runs as the image's user, root included (security.runAsNonRoot: false)" "validate says so"

echo "== a stock image without ktrain-launch: the launcher is injected"
cat >"$work/bare.yaml" <<'YAML'
name: bare
image: nvcr.io/nvidia/pytorch:24.08-py3
train:
  command: [python3, -c, "import os; print('stock image, uid', os.getuid(), 'in', os.getcwd())"]
  framework: pytorch
  nodes: 1
  gpus: 0
  preflight: "off"
YAML
export KTRAIN_LAUNCHER_IMAGE=registry.example.com/ktrain/launch:1
k_ok "validate bare" validate -f bare.yaml
expect_contains "$out" "launcher injected by an init container from registry.example.com/ktrain/launch:1 (KTRAIN_LAUNCHER_IMAGE)" \
  "validate says how the run gets its launcher"
k_ok "submit bare" submit -f bare.yaml --run-id a --wait --timeout 60s
k_ok "logs bare" logs bare-a
expect_eq "$out" "[rank 0] stock image, uid 1000 in /workspace" "a stock image (no launcher) runs through injection"
pod="$(kubectl get pods -l ktrain.dev/run=bare-a -o jsonpath='{.items[0].metadata.name}')"
expect_eq "$(kubectl get pod "$pod" -o jsonpath='{.status.initContainerStatuses[0].name} {.status.initContainerStatuses[0].state.terminated.exitCode}')" \
  "ktrain-launcher 0" "the init container copied the launcher and exited 0"
expect_contains "$(kubectl logs "$pod" -c ktrain-launcher)" "installed in /opt/ktrain/bin" "its log says where"
# No launcher image named, and no registry to push one to (no image.build, no
# --push-launcher): ktrain's default is not published, so submit refuses at once.
default_launcher="ghcr.io/ktrain/ktrain-launch:$("$ktrain" --version | cut -d' ' -f2)"
unset KTRAIN_LAUNCHER_IMAGE
k submit -f bare.yaml --run-id d --wait --timeout 60s
expect_eq "$rc" 2 "without a launcher image, nor a registry to push one to: refused"
expect_contains "$err" "ktrain's default, $default_launcher, is not published" "the refusal names the default image"
expect_eq "$(kubectl get jobs,secrets,services -l ktrain.dev/run=bare-d -o name)" "" "nothing of bare-d was created"
# This cluster serves the launcher image under the default name (k8s_lib.bash).
export KTRAIN_LAUNCHER_IMAGE=$default_launcher

echo "== ktrain init's project, as it is"
# NGC's PyTorch image, 1 GPU, the quick preflight: it starts (the launcher is
# injected and runs) and stops at the GPU check, since these nodes have no GPU.
mkdir "$work/first" && (cd "$work/first" && "$ktrain" init >/dev/null)
k submit -f first/ktrain.yaml --run-id a --wait --timeout 60s
expect_eq "$rc" "1" "init's project on a node without a GPU: the run fails"
expect_contains "$err" "exit code 77" "at the launcher's GPU check (exit 77), so after it started"
expect_contains "$err" "no NVIDIA GPU or driver was found on this node" "in words"
expect_eq "$(kubectl get pods -l ktrain.dev/run=first-a -o jsonpath='{.items[0].status.initContainerStatuses[0].state.terminated.exitCode}')" \
  "0" "its launcher was injected"

echo "== without injection, the old failure"
k submit -f bare.yaml --run-id n --set launcher.inject=never --wait --timeout 60s
expect_eq "$rc" "1" "a run whose image lacks the launcher fails"
term="$(kubectl get pods -l ktrain.dev/run=bare-n -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.reason} {.items[0].status.containerStatuses[0].state.terminated.exitCode}')"
expect_eq "$term" "StartError 128" "the container did not start: StartError, exit code 128"
expect_contains "$(kubectl get pods -l ktrain.dev/run=bare-n -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}')" \
  'exec: "/opt/ktrain/bin/ktrain-launch": stat /opt/ktrain/bin/ktrain-launch: no such file or directory' "the runtime's message"

echo "== a launcher image that cannot be pulled"
k_ok "submit with a missing launcher image" submit -f bare.yaml --run-id m --set launcher.image=registry.example.com/ktrain/missing:1
k8s_wait "the init container's ErrImagePull" 60 sh -c \
  "kubectl get pods -l ktrain.dev/run=bare-m -o jsonpath='{.items[0].status.initContainerStatuses[0].state.waiting.reason}' | grep -q ImagePull"
k_ok "status bare-m" status bare-m
expect_contains "$out" "rank 0 cannot pull the launcher image registry.example.com/ktrain/missing:1" "status names the launcher image"
expect_contains "$out" "ktrain build --launcher-image REF" "and says how to make one"
# logs -f waits for the container, saying once why it cannot start.
set +e
timeout 10 "$ktrain" logs -f bare-m >"$work/follow.out" 2>&1
set -e
expect_contains "$(cat "$work/follow.out")" \
  "node 0 (pod $(kubectl get pods -l ktrain.dev/run=bare-m -o jsonpath='{.items[0].metadata.name}')) cannot start yet: init container ktrain-launcher: " \
  "logs -f says why it waits"
expect_contains "$(cat "$work/follow.out")" 'registry.example.com/ktrain/missing:1' "naming the image"
expect_eq "$(grep -c "cannot start yet" "$work/follow.out")" "1" "once, though the kubelet goes between ErrImagePull and ImagePullBackOff"
k_ok "delete bare-m" delete bare-m

echo "== Secrets and ConfigMaps that are not there"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: envref, labels: {t: envref}}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - name: c
    image: registry.example.com/ml/x:1
    command: [sh, -c, 'echo "token=$TOKEN"']
    env:
    - name: TOKEN
      valueFrom: {secretKeyRef: {name: hf-token, key: token}}
---
apiVersion: v1
kind: Pod
metadata: {name: volref, labels: {t: volref}}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: registry.example.com/ml/x:1
    command: [cat, /etc/model/config.json]
    volumeMounts: [{name: cfg, mountPath: /etc/model}]
  volumes:
  - name: cfg
    configMap: {name: model-config}
YAML
wait_reason t=envref CreateContainerConfigError
expect_eq "$(waiting t=envref)" 'CreateContainerConfigError: secret "hf-token" not found' "a missing Secret in env: the kubelet's message"
k8s_wait "FailedMount for volref" 60 sh -c \
  "kubectl get events --field-selector involvedObject.name=volref,reason=FailedMount -o name | grep -q ."
expect_eq "$(kubectl get events --field-selector involvedObject.name=volref,reason=FailedMount -o jsonpath='{.items[0].message}')" \
  'MountVolume.SetUp failed for volume "cfg" : configmap "model-config" not found' "a missing ConfigMap volume: FailedMount"
expect_eq "$(waiting t=volref)" "ContainerCreating: " "the pod waits in ContainerCreating"
# Once they exist, the kubelet goes on: both pods run and see their data.
kubectl create secret generic hf-token --from-literal=token=s3cr3t >/dev/null
kubectl create configmap model-config --from-literal=config.json='{"layers": 50}' >/dev/null
k8s_wait "envref to succeed" 60 sh -c "kubectl get pod envref -o jsonpath='{.status.phase}' | grep -qx Succeeded"
k8s_wait "volref to succeed" 60 sh -c "kubectl get pod volref -o jsonpath='{.status.phase}' | grep -qx Succeeded"
expect_eq "$(kubectl logs envref)" "token=s3cr3t" "the Secret's value in the environment"
expect_eq "$(kubectl logs volref)" '{"layers": 50}' "the ConfigMap mounted as a folder"

echo "== restarts and the previous container's log"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: again, labels: {t: again}}
spec:
  restartPolicy: OnFailure
  containers:
  - name: c
    image: registry.example.com/ml/x:1
    command: [sh, -c, 'if [ -f /data/once ]; then echo second; else touch /data/once; echo first; exit 4; fi']
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
YAML
k8s_wait "again to succeed after a restart" 60 sh -c "kubectl get pod again -o jsonpath='{.status.phase}' | grep -qx Succeeded"
expect_eq "$(kubectl get pod again -o jsonpath='{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].lastState.terminated.exitCode}')" \
  "1 4" "restartPolicy OnFailure: one restart, the last state's exit code"
expect_eq "$(kubectl logs again)" "second" "logs: the current container"
expect_eq "$(kubectl logs again --previous)" "first" "logs --previous: the one before (the emptyDir outlived it)"
expect_contains "$(kubectl get events --field-selector involvedObject.name=again,reason=BackOff -o jsonpath='{.items[0].message}')" \
  "Back-off restarting failed container c" "the kubelet's BackOff event"

echo "== a liveness probe that fails restarts the container"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: unwell, labels: {t: unwell}}
spec:
  containers:
  - name: c
    image: registry.example.com/ml/x:1
    command: [sleep, "3600"]
    livenessProbe: {tcpSocket: {port: 9}, periodSeconds: 1, failureThreshold: 2}
YAML
k8s_wait "unwell's liveness restart" 60 sh -c \
  "kubectl get pod unwell -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}' | grep -qx 143"
echo "ok: failureThreshold failures in a row: SIGTERM (exit code 143), then a restart"
expect_contains "$(kubectl get events --field-selector involvedObject.name=unwell,reason=Killing -o jsonpath='{.items[0].message}')" \
  "Container c failed liveness probe, will be restarted" "the kubelet's Killing event"

echo "== an image nobody has"
kubectl run nosuch --image=registry.example.com/nowhere/x:1 --restart=Never -l t=nosuch >/dev/null
wait_reason t=nosuch ErrImagePull
wait_reason t=nosuch ImagePullBackOff
expect_eq "$(waiting t=nosuch)" 'ImagePullBackOff: Back-off pulling image "registry.example.com/nowhere/x:1"' "then ImagePullBackOff, as the kubelet backs off"
expect_contains "$(kubectl get events --field-selector involvedObject.name=nosuch,reason=Failed -o jsonpath='{.items[0].message}')" \
  'failed to pull and unpack image "registry.example.com/nowhere/x:1"' "the pull's failure in the kubelet's event"
echo "PASS"
