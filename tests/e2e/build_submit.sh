#!/usr/bin/env bash
# `ktrain submit --build`: builds and pushes the image to a real registry, then
# submits the run with the new image by digest to the test API server. A second
# submit --build of an unchanged workspace gives the same digest.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in docker-registry skopeo umoci python3 curl busybox; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
source "$S/tests/fixtures/apiserver/testlib.bash"
work=$(mktemp -d)

start_apiserver
trap 'registry_stop; stop_apiserver; rm -rf "$work"' EXIT
registry_start "$work/reg"
make_base_image "$work" "docker://$REGISTRY/base:1"

proj=$work/proj
build_project "$proj" "  command: [sh, -c, 'echo rank \$KTRAIN_RANK']
  nodes: 2
  gpus: 0
  preflight: \"off\""
export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home SOURCE_DATE_EPOCH=1700000000

# image_of RUN: the image of the run's Job.
image_of() {
  api_curl "/apis/batch/v1/namespaces/default/jobs/$1" |
    json 'd["spec"]["template"]["spec"]["containers"][0]["image"]'
}

"$B/ktrain" submit --build -f "$proj/ktrain.yaml" --run-id one >"$work/out1" 2>"$work/err1" ||
  { cat "$work/err1"; fail "submit --build"; }
expect_eq "$(wc -l <"$work/out1" | tr -d ' ')" 1 "stdout is the run name only"
run1=$(cat "$work/out1")
img1=$(image_of "$run1")
[[ $img1 =~ ^$REGISTRY/team/hello@sha256:[0-9a-f]{64}$ ]] || fail "the Job runs '$img1', not the pushed digest"
echo "ok: $run1 runs $img1"
expect_contains "$(cat "$work/err1")" "pushed $REGISTRY/team/hello@" "build progress on stderr"
skopeo inspect --no-tags --tls-verify=false "docker://$img1" >/dev/null || fail "the digest is not in the registry"
echo "ok: the digest is in the registry"

# Unchanged workspace: the same digest, another run.
"$B/ktrain" submit --build -f "$proj/ktrain.yaml" --run-id two >"$work/out2" 2>"$work/err2" ||
  { cat "$work/err2"; fail "second submit --build"; }
img2=$(image_of "$(cat "$work/out2")")
expect_eq "$img2" "$img1" "an unchanged workspace runs the same digest"

# A changed file: a new digest.
echo 'print("changed")' > "$proj/train.py"
"$B/ktrain" submit --build -f "$proj/ktrain.yaml" --run-id three >"$work/out3" 2>"$work/err3" ||
  { cat "$work/err3"; fail "third submit --build"; }
img3=$(image_of "$(cat "$work/out3")")
[ "$img3" != "$img1" ] || fail "a changed workspace kept the digest"
echo "ok: a changed workspace runs a new digest"

# Bad combinations are usage errors, and nothing is built or submitted.
set +e
out=$("$B/ktrain" submit --build --local -f "$proj/ktrain.yaml" 2>&1); rc=$?
set -e
expect_eq "$rc" 2 "--build --local is a usage error"
expect_contains "$out" "--build" "the message names --build"
set +e
out=$("$B/ktrain" submit --insecure-registry "$REGISTRY" -f "$proj/ktrain.yaml" 2>&1); rc=$?
set -e
expect_eq "$rc" 2 "--insecure-registry without --build is a usage error"
expect_contains "$out" "--insecure-registry is for --build" "the message says what it is for"
bad_push() {  # bad_push WHAT VERB ARGS...: VERB ARGS is a usage error that names --push-launcher
  local what=$1 verb=$2
  shift 2
  set +e
  out=$("$B/ktrain" "$verb" "$@" -f "$proj/ktrain.yaml" 2>&1); rc=$?
  set -e
  expect_eq "$rc" 2 "$what: a usage error"
  expect_contains "$out" "--push-launcher" "$what: the message names --push-launcher"
}
bad_push "--push-launcher of no image reference" submit --run-id bad --push-launcher "Bad Ref!"
bad_push "--push-launcher of a digest" submit --run-id bad --push-launcher "$REGISTRY/l@sha256:$(printf '0%.0s' $(seq 64))"
bad_push "--push-launcher with --local" submit --run-id bad --push-launcher "$REGISTRY/l" --local
# dev takes the same flag, checked the same way, before anything is asked of the cluster.
bad_push "dev --push-launcher of a digest" dev --push-launcher "$REGISTRY/l@sha256:$(printf '0%.0s' $(seq 64))"
bad_push "dev --insecure-registry without --push-launcher" dev --insecure-registry "$REGISTRY"
sed -i '/^  build:/,/^    repository:/d; s/^image:$/image: busybox:1/' "$proj/ktrain.yaml"
set +e
out=$("$B/ktrain" submit --build -f "$proj/ktrain.yaml" --run-id four 2>&1); rc=$?
set -e
expect_eq "$rc" 2 "--build without image.build is a usage error"
expect_contains "$out" "image.build" "the message names image.build"
jobs=$(api_curl "/apis/batch/v1/namespaces/default/jobs" | json 'len(d["items"])')
expect_eq "$jobs" 3 "only the three good submits made Jobs"
echo "PASS"
