#!/usr/bin/env bash
# The CUDA version an image needs, against a real registry: ktrain build records it
# (label dev.ktrain.cuda) from train.cuda or from the base image's CUDA_VERSION, and
# render --inspect-image reads it back from the registry into the node affinity and
# the launcher's KTRAIN_CUDA_VERSION. An image that says nothing, or cannot be read,
# renders without them.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in docker-registry skopeo umoci python3 curl busybox; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
work=$(mktemp -d)
trap 'registry_stop; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home SOURCE_DATE_EPOCH=1700000000 NO_COLOR=1

registry_start "$work/reg"
BASE_ENV=CUDA_VERSION=12.1.0 make_base_image "$work" "docker://$REGISTRY/cuda-base:12.1"
make_base_image "$work" "docker://$REGISTRY/plain-base:1"

# project BASE [CUDA]: a GPU project built on BASE, with train.cuda when given.
project() {
  mkdir -p "$work/p"
  echo 'print(1)' > "$work/p/train.py"
  cat > "$work/p/ktrain.yaml" <<YAML
name: cuda
image:
  build:
    base: $REGISTRY/$1
    repository: $REGISTRY/team/cuda
train:
  command: [python3, train.py]
  gpus: 8
${2:+  cuda: \"$2\"}
YAML
}
# label REF: the image's dev.ktrain.cuda label, or "none".
label() {
  skopeo inspect --no-tags --tls-verify=false "docker://$1" |
    python3 -c 'import json,sys; print((json.load(sys.stdin).get("Labels") or {}).get("dev.ktrain.cuda", "none"))'
}

project cuda-base:12.1
ref=$("$B/ktrain" build -f "$work/p/ktrain.yaml" 2> "$work/err") || { cat "$work/err"; fail "build"; }
[ "$(label "$ref")" = 12.1 ] || fail "label from the base's CUDA_VERSION: $(label "$ref")"
grep -qF "CUDA 12.1 (from the base image's CUDA_VERSION=12.1.0)" "$work/err" ||
  fail "the build does not say where the version came from: $(cat "$work/err")"
echo "ok: the base image's CUDA_VERSION recorded as dev.ktrain.cuda=12.1"

project cuda-base:12.1 12.4
ref124=$("$B/ktrain" build -f "$work/p/ktrain.yaml" 2> "$work/err") || { cat "$work/err"; fail "build 12.4"; }
[ "$(label "$ref124")" = 12.4 ] || fail "train.cuda wins: $(label "$ref124")"
grep -qF "CUDA 12.4 (from train.cuda)" "$work/err" || fail "$(cat "$work/err")"
echo "ok: train.cuda wins over the base image"

project plain-base:1
plain=$("$B/ktrain" build -f "$work/p/ktrain.yaml" 2> "$work/err") || { cat "$work/err"; fail "plain build"; }
[ "$(label "$plain")" = none ] || fail "a base that says nothing gets no label: $(label "$plain")"
echo "ok: no CUDA version, no label"

# render IMAGE [FLAGS...]: renders a GPU project that runs IMAGE, stderr in $work/err.
render() {
  local image=$1
  shift
  cat > "$work/r.yaml" <<YAML
name: cuda
image: $image
train:
  command: [python3, train.py]
  gpus: 8
YAML
  "$B/ktrain" render -f "$work/r.yaml" --run-id r1 "$@" 2> "$work/err"
}
out=$(render "$ref" --inspect-image -v) || { cat "$work/err"; fail "render --inspect-image"; }
grep -qF 'ktrain.dev/cuda: "12.1"' <<<"$out" || fail "no CUDA annotation: $out"
grep -qF 'key: nvidia.com/cuda.runtime-version.major' <<<"$out" || fail "no affinity: $out"
grep -A1 -F 'name: KTRAIN_CUDA_VERSION' <<<"$out" | grep -qF 'value: "12.1"' || fail "no KTRAIN_CUDA_VERSION: $out"
grep -qF "ktrain: CUDA 12.1 (from $ref's label dev.ktrain.cuda)" "$work/err" || fail "-v note: $(cat "$work/err")"
echo "ok: render --inspect-image reads the label back from the registry"

out=$(render "$ref") || fail "render"
! grep -qF 'ktrain.dev/cuda' <<<"$out" || fail "render without --inspect-image asked the registry"
out=$(render "$plain" --inspect-image -v) || fail "render of an image that says nothing"
! grep -qF 'ktrain.dev/cuda' <<<"$out" || fail "an affinity for an image that says nothing"
grep -qF "does not say which CUDA version it needs" "$work/err" || fail "-v note: $(cat "$work/err")"
out=$(render "127.0.0.1:1/none/such:1" --inspect-image -v) || fail "an unreachable registry fails the render"
! grep -qF 'ktrain.dev/cuda' <<<"$out" || fail "an affinity for an image not read"
grep -qF "the CUDA version that 127.0.0.1:1/none/such:1 needs is unknown (" "$work/err" ||
  fail "-v note: $(cat "$work/err")"
echo "ok: an image that says nothing, or cannot be read, renders as before"

rc=0
"$B/ktrain" render -f "$work/r.yaml" --insecure-registry reg.lan:5000 >/dev/null 2> "$work/err" || rc=$?
[ "$rc" = 2 ] || fail "--insecure-registry without --inspect-image: exit $rc"
grep -qF -- "--insecure-registry is for --inspect-image" "$work/err" || fail "$(cat "$work/err")"
echo "PASS"
