# Helpers for the tests on the real control plane (tests/fixtures/k8s). Source
# it after cluster.bash: it makes $work (removed on exit, after the cluster
# stops), $work/ws (the images' /workspace) and $work/images.json, which
# describes the images registry.example.com/ml/* (user 1000, ktrain-launch
# baked in, as `ktrain build` makes them) and ktrain's default launcher image.
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac
launcher="$KTRAIN_BUILD/ktrain-launch"
case "$launcher" in /*) ;; *) launcher="$PWD/$launcher" ;; esac
work="$(mktemp -d /tmp/ktrain-k8s-test.XXXXXX)"
mkdir -p "$work/ws"
export NO_COLOR=1 LC_ALL=C
# The projects name these images without image.build, so their pods get the
# launcher from ktrain's default launcher image (FROM scratch: /ktrain-launch);
# a test that writes its own images.json adds $launcher_image to it.
launcher_image="\"ghcr.io/ktrain/ktrain-launch:*\": {\"user\": \"\", \"files\": {\"/ktrain-launch\": \"$launcher\"}}"
# This cluster has it (the agent serves it): named, so submit pushes none.
KTRAIN_LAUNCHER_IMAGE="ghcr.io/ktrain/ktrain-launch:$("$KTRAIN_BUILD/ktrain" version | awk '{print $2}')"
export KTRAIN_LAUNCHER_IMAGE
cat >"$work/images.json" <<JSON
{
  "registry.example.com/ml/*": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$work/ws"}},
  $launcher_image
}
JSON
k8s_test_cleanup() {
  local rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR/logs" ]; then cluster_logs 15; fi
  stop_cluster
  rm -rf "$work"
}
CLUSTER_ON_EXIT=k8s_test_cleanup
trap k8s_test_cleanup EXIT

# wait_state RUN STATE SECONDS
wait_state() {
  local i s=""
  for i in $(seq 1 $(($3 * 5))); do
    s="$("$ktrain" status "$1" -o json 2>/dev/null | json 'd["state"]' 2>/dev/null || true)"
    [ "$s" = "$2" ] && return 0
    sleep 0.2
  done
  fail "run $1 is $s, not $2, after $3 s: $("$ktrain" status "$1" 2>&1)"
}
# versions RUN: uid and resourceVersion of the run's Job, Service and Secret.
versions() {
  kubectl get "job/$1" "service/$1" "secret/$1-rdzv" -o jsonpath='{range .items[*]}{.metadata.uid} {.metadata.resourceVersion}{"\n"}{end}'
}
