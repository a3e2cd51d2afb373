#!/usr/bin/env bash
# What a kubelet refuses, on the real control plane with the node agent: each
# refusal with the reason and message a kubelet writes, read back with kubectl
# and with ktrain status. Runs of stock images (root, no ktrain-launch) fail
# today as they do on a real cluster: these are the failures that the issue
# "Day one on a real cluster" fixes (launcher injection, security defaults).
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
  "registry.example.com/stock/nolauncher:*": {"user": "1000", "workdir": "/workspace"}
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

echo "== runAsNonRoot and an image that runs as root"
project ngc nvcr.io/nvidia/pytorch:24.08-py3
k_ok "submit ngc" submit -f ngc.yaml --run-id a
wait_reason ktrain.dev/run=ngc-a CreateContainerConfigError
w="$(waiting ktrain.dev/run=ngc-a)"
pod="$(kubectl get pods -l ktrain.dev/run=ngc-a -o jsonpath='{.items[0].metadata.name}')"
uid="$(kubectl get pods -l ktrain.dev/run=ngc-a -o jsonpath='{.items[0].metadata.uid}')"
expect_eq "$w" "CreateContainerConfigError: container has runAsNonRoot and image will run as root (pod: \"${pod}_default($uid)\", container: train)" \
  "the kubelet's refusal, word for word"
expect_contains "$(kubectl get events --field-selector involvedObject.name="$pod",reason=Failed -o jsonpath='{.items[*].message}')" \
  "Error: container has runAsNonRoot and image will run as root" "the kubelet's event"
k_ok "status ngc" status ngc-a -o json
expect_eq "$(json '[d["state"], d["ranks"][0]["reason"]]' <<<"$out")" '["Pending", "CreateContainerConfigError"]' "ktrain status: the rank's reason"

echo "== runAsNonRoot and a non-numeric user"
project named registry.example.com/stock/named:1
k_ok "submit named" submit -f named.yaml --run-id a
wait_reason ktrain.dev/run=named-a CreateContainerConfigError
expect_contains "$(waiting ktrain.dev/run=named-a)" \
  "container has runAsNonRoot and image has non-numeric user (ubuntu), cannot verify user is non-root" "the kubelet's refusal of a user name"

echo "== an image without ktrain-launch"
project bare registry.example.com/stock/nolauncher:1
k submit -f bare.yaml --run-id a --wait --timeout 60s
expect_eq "$rc" "1" "a run whose image lacks the launcher fails"
term="$(kubectl get pods -l ktrain.dev/run=bare-a -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.reason} {.items[0].status.containerStatuses[0].state.terminated.exitCode}')"
expect_eq "$term" "StartError 128" "the container did not start: StartError, exit code 128"
expect_contains "$(kubectl get pods -l ktrain.dev/run=bare-a -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}')" \
  'exec: "/opt/ktrain/bin/ktrain-launch": stat /opt/ktrain/bin/ktrain-launch: no such file or directory' "the runtime's message"

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

echo "== an image nobody has"
kubectl run nosuch --image=registry.example.com/nowhere/x:1 --restart=Never -l t=nosuch >/dev/null
wait_reason t=nosuch ErrImagePull
expect_contains "$(waiting t=nosuch)" 'failed to pull and unpack image "registry.example.com/nowhere/x:1"' "ErrImagePull"
echo "PASS"
