#!/usr/bin/env bash
# ktrain init writes a project file that ktrain validate accepts; init refuses to
# overwrite without --force; validate reads standard input with -f -.
set -euo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }

mkdir my_Project && cd my_Project
"$ktrain" init --gpus 8 --nodes 2 >"$work/out" || fail "init exited $?"
[ -f ktrain.yaml ] || fail "init wrote no ktrain.yaml"
grep -q '^name: my-project ' ktrain.yaml || fail "name not derived from the folder: $(grep ^name ktrain.yaml)"
grep -q '^#' ktrain.yaml || fail "the file has no comments"
out=$("$ktrain" validate) || fail "validate rejected the file init wrote"
version=$("$ktrain" --version | cut -d' ' -f2)
# A stock image (init proposes NGC's PyTorch): the launcher is injected, from this version's image.
[ "$out" = "ktrain.yaml: valid (train: 2 nodes x 8 GPUs, pytorch; launcher injected by an init container from ghcr.io/ktrain/ktrain-launch:$version (ktrain's default); runs as user 1000:1000)" ] || fail "validate printed: $out"
out=$(KTRAIN_LAUNCHER_IMAGE=registry.example.com/mirror/launch:3 "$ktrain" validate -o json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["launcher"] == {"inject": True, "reason": "injected by an init container from registry.example.com/mirror/launch:3 (KTRAIN_LAUNCHER_IMAGE)", "image": "registry.example.com/mirror/launch:3"}, d' "$out" ||
  fail "validate -o json with KTRAIN_LAUNCHER_IMAGE: $out"
set +e
KTRAIN_LAUNCHER_IMAGE='Bad:Ref' "$ktrain" validate >"$work/out" 2>"$work/err"
status=$?
set -e
[ "$status" = 2 ] || fail "a bad KTRAIN_LAUNCHER_IMAGE: exit $status, expected 2"
grep -q "^ktrain: error: KTRAIN_LAUNCHER_IMAGE=Bad:Ref: " "$work/err" || fail "a bad KTRAIN_LAUNCHER_IMAGE: $(cat "$work/err")"
out=$("$ktrain" validate --set launcher.inject=never)
case "$out" in *"launcher in the image at /opt/ktrain/bin (launcher.inject: never)"*) ;; *) fail "inject: never: $out" ;; esac

# Refuses to overwrite; the file is unchanged.
cp ktrain.yaml "$work/before"
set +e
"$ktrain" init --name other >"$work/out" 2>"$work/err"
status=$?
set -e
[ "$status" = 2 ] || fail "init over an existing file exited $status, expected 2"
grep -q -- '--force' "$work/err" || fail "the message does not mention --force: $(cat "$work/err")"
[ ! -s "$work/out" ] || fail "init printed on stdout when refusing"
cmp -s ktrain.yaml "$work/before" || fail "init changed the file without --force"

"$ktrain" init --name other --framework none --gpus 0 --force >/dev/null || fail "init --force failed"
grep -q '^name: other ' ktrain.yaml || fail "--force did not overwrite"
"$ktrain" -q validate || fail "validate rejected the overwritten file"
[ -z "$("$ktrain" -q validate)" ] || fail "-q printed something"

# Standard input.
out=$("$ktrain" validate -f - <ktrain.yaml) || fail "validate -f - failed"
case "$out" in "<stdin>: valid ("*) ;; *) fail "validate -f - printed: $out" ;; esac
"$ktrain" init --name piped -f - | "$ktrain" validate -f - >/dev/null || fail "init -f - | validate -f - failed"

# -f PATH elsewhere, and --set.
"$ktrain" init --name elsewhere -f "$work/other.yaml" >/dev/null
"$ktrain" validate -f "$work/other.yaml" --set train.nodes=3 | grep -q "3 nodes" || fail "--set ignored"
set +e
"$ktrain" validate -f "$work/other.yaml" --set train.nodes=abc >"$work/out" 2>"$work/err"
status=$?
set -e
[ "$status" = 2 ] || fail "--set train.nodes=abc exited $status"
[ ! -s "$work/out" ] || fail "stdout not empty on error"
grep -qx -- '--set train.nodes=abc: train.nodes: expected a whole number >= 1, found "abc"' "$work/err" ||
  fail "unexpected message: $(cat "$work/err")"

# -o json for CI: on stdout, also when invalid.
json=$("$ktrain" validate -o json -f "$work/other.yaml" --set train.gpus=-1 2>/dev/null) && fail "expected exit 2"
echo "$json" | grep -q '"valid": false' || fail "json: $json"

# Bad init flags write nothing.
cd "$work" && mkdir empty && cd empty
set +e
"$ktrain" init --name Bad_Name 2>/dev/null; s1=$?
"$ktrain" init --image 'not a ref' 2>/dev/null; s2=$?
set -e
[ "$s1" = 2 ] && [ "$s2" = 2 ] || fail "bad init flags exited $s1 $s2"
[ ! -e ktrain.yaml ] || fail "init wrote a file despite bad flags"
echo "ok"
