#!/usr/bin/env bash
# The README's two steps in their order, on the real control plane and a real registry:
# `ktrain build` then `ktrain submit` (no --build) runs exactly what build pushed, by
# digest, whether the project names no tag, or a tag in image.ref (which build then
# pushes too). validate and status say which image runs. A project whose image.build
# was never built is refused before anything is sent. A run whose image does not exist
# ends `submit --wait` and `submit --follow` with exit 1 and the registry's words.
# The node agent runs the pods: it finds an image only by the exact reference that
# images.json gives it (the digest build printed), as a kubelet pulls only what exists.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/k8s/cluster.bash"
source "${KTRAIN_SOURCE:-.}/tests/e2e/k8s_lib.bash"
require_k8s
for t in docker-registry skopeo umoci busybox; do
  command -v "$t" >/dev/null || fail "$t is not installed (scripts/setup installs it)"
done
source "$KTRAIN_SOURCE/tests/fixtures/registry/registry.sh"
# (start_cluster sets its own EXIT trap, which calls CLUSTER_ON_EXIT.)
build_submit_cleanup() {
  local rc=$?
  registry_stop
  (exit "$rc")
  k8s_test_cleanup
}
CLUSTER_ON_EXIT=build_submit_cleanup
trap build_submit_cleanup EXIT
registry_start "$work/reg"
make_base_image "$work" "docker://$REGISTRY/base:1"
export KTRAIN_CACHE_DIR=$work/cache SOURCE_DATE_EPOCH=1700000000

proj=$work/proj
build_project "$proj" "  command: [sh, -c, 'echo rank \$KTRAIN_RANK of \$KTRAIN_WORLD_SIZE']
  nodes: 2
  gpus: 0
  preflight: \"off\""

echo "== nothing built yet: submit refuses, render and validate warn"
set +e
"$ktrain" submit -f "$proj/ktrain.yaml" --run-id none >"$work/out" 2>"$work/err"; rc=$?
set -e
expect_eq "$rc" 2 "submit of a project never built: exit 2"
expect_contains "$(cat "$work/err")" "nothing is built yet" "the message says why"
expect_contains "$(cat "$work/err")" "run 'ktrain build' first" "and what to run"
"$ktrain" render -f "$proj/ktrain.yaml" --run-id none >/dev/null 2>"$work/err"
expect_contains "$(cat "$work/err")" "nothing is built yet" "render warns"

echo "== ktrain build, then ktrain submit"
"$ktrain" build -f "$proj/ktrain.yaml" >"$work/built" 2>"$work/build.err" ||
  { cat "$work/build.err"; fail "ktrain build"; }
ref=$(cat "$work/built")
[[ $ref =~ ^$REGISTRY/team/hello@sha256:[0-9a-f]{64}$ ]] || fail "build printed '$ref'"
skopeo inspect --no-tags --tls-verify=false "docker://$ref" >/dev/null || fail "$ref is not in the registry"
expect_eq "$(json 'd["images"]["'"$REGISTRY"'/team/hello"]["digest"]' <"$proj/.ktrain/build.json")" \
  "${ref#*@}" "build recorded the digest in .ktrain/build.json"
expect_eq "$(cat "$proj/.ktrain/.gitignore" | tail -n 1)" "*" ".ktrain/ keeps itself out of git"

# The node finds the image by that digest only.
cat >"$work/images.json" <<JSON
{
  "$ref": {"user": "1000", "workdir": "/workspace",
    "files": {"/opt/ktrain/bin/ktrain-launch": "$launcher", "/workspace": "$work/ws"}},
  $launcher_image
}
JSON
start_cluster --nodes 2 --gpus 0 --images "$work/images.json"
cd "$work"

"$ktrain" validate -f "$proj/ktrain.yaml" >"$work/out"
expect_contains "$(cat "$work/out")" "  image: $ref, built by ktrain build at " "validate says which image runs"
"$ktrain" render -f "$proj/ktrain.yaml" --run-id r1 >"$work/render.yaml"
expect_eq "$(grep -E '^ +image: ' "$work/render.yaml" | sort -u | sed 's/^ *image: //; s/"//g')" "$ref" \
  "render names the built digest"
"$ktrain" submit -f "$proj/ktrain.yaml" --run-id one --wait >"$work/out" 2>"$work/err" ||
  { cat "$work/err"; "$ktrain" status hello-one || true; fail "submit --wait of what build pushed"; }
expect_eq "$(kubectl get job hello-one -o jsonpath='{.spec.template.spec.containers[0].image}')" "$ref" \
  "the Job runs the digest build pushed"
expect_contains "$("$ktrain" logs hello-one)" "rank 1 of 2" "both ranks ran"
expect_contains "$("$ktrain" status hello-one)" "Image:      $ref" "status says which image runs"
expect_eq "$("$ktrain" status hello-one -o json | json 'd["image"]')" "$ref" "status -o json: image"
echo "ok: build then submit ran $ref"

echo "== image.ref names a tag of the repository: build pushes it, runs go by digest"
sed -i "s|^image:$|image:\n  ref: $REGISTRY/team/hello:0.1.0|" "$proj/ktrain.yaml"
echo 'print(2)' >"$proj/train.py"
"$ktrain" build -f "$proj/ktrain.yaml" >"$work/built2" 2>"$work/build.err" ||
  { cat "$work/build.err"; fail "ktrain build with image.ref"; }
ref2=$(cat "$work/built2")
[ "$ref2" != "$ref" ] || fail "a changed workspace kept the digest"
tagged=$(skopeo inspect --tls-verify=false "docker://$REGISTRY/team/hello:0.1.0" | json 'd["Digest"]')
expect_eq "$tagged" "${ref2#*@}" "build pushed the tag that image.ref names"
"$ktrain" render -f "$proj/ktrain.yaml" --run-id r2 >"$work/render2.yaml"
expect_eq "$(grep -E '^ +image: ' "$work/render2.yaml" | sort -u | sed 's/^ *image: //; s/"//g')" "$ref2" \
  "render names the digest, not the movable tag"
"$ktrain" submit -f "$proj/ktrain.yaml" --run-id two --dry-run=server -o json >/dev/null

echo "== an image that does not exist ends the wait with exit 1"
cat >"$work/missing.yaml" <<YAML
name: missing
image: $REGISTRY/team/missing:1.0.0
train:
  command: [sh, -c, 'echo never']
  gpus: 0
  preflight: "off"
YAML
started=$(date +%s)
set +e
"$ktrain" submit -f "$work/missing.yaml" --run-id w --wait >"$work/wait.out" 2>"$work/wait.err" &
wait_pid=$!
"$ktrain" submit -f "$work/missing.yaml" --run-id f --follow >"$work/follow.out" 2>"$work/follow.err"
follow_rc=$?
wait "$wait_pid"
wait_rc=$?
set -e
took=$(($(date +%s) - started))
expect_eq "$wait_rc" 1 "submit --wait of a missing image: exit 1"
expect_eq "$follow_rc" 1 "submit --follow of a missing image: exit 1"
for f in wait follow; do
  expect_contains "$(cat "$work/$f.err")" "run missing-${f:0:1} cannot start: node 0: ErrImagePull: " "$f: says which node and why"
  expect_contains "$(cat "$work/$f.err")" "not found" "$f: the registry's words"
  expect_contains "$(cat "$work/$f.err")" "the image cannot be pulled" "$f: what it means"
done
[ "$took" -lt 120 ] || fail "giving up on a missing image took ${took}s"
echo "ok: a missing image ended --wait and --follow with exit 1 in ${took}s"
expect_eq "$(kubectl get job missing-w -o name)" "job.batch/missing-w" "the run is left as it is"
k_ok "delete missing-w" delete missing-w
k_ok "delete missing-f" delete missing-f
echo "PASS"
