#!/usr/bin/env bash
# Golden files: every example renders, without warnings, to exactly
# tests/golden/<example>.yaml (with the fixed run id "golden"), twice in a row
# byte for byte, with no Secret and no token in it; --kube-version: the release named,
# its fields, and the refusal of one the project needs.
# KTRAIN_UPDATE_GOLDEN=1 rewrites the golden files on purpose.
set -euo pipefail
src=${KTRAIN_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${KTRAIN_BUILD:-$src/build}
ktrain=$build/ktrain
golden=$src/tests/golden
[ -x "$ktrain" ] || { echo "golden: $ktrain is not built"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# check NAME GOLDEN FILE [--set K=V ...]: renders FILE and compares it with GOLDEN.
check() {
  local name=$1 gold=$2 file=$3; shift 3
  local out=$tmp/$name.yaml
  if ! "$ktrain" render -f "$file" --run-id golden "$@" >"$out" 2>"$tmp/$name.err"; then
    fail "$name: ktrain render failed:"; sed 's/^/    /' "$tmp/$name.err"; return
  fi
  # A note (the rendezvous Secret an operator's pods wait for) is no warning.
  if grep -v '^ktrain: note: ' "$tmp/$name.err" | grep -q .; then
    fail "$name: rendered with warnings (examples must render cleanly):"
    sed 's/^/    /' "$tmp/$name.err"
  fi
  "$ktrain" render -f "$file" --run-id golden "$@" >"$tmp/$name.again.yaml" 2>/dev/null
  # Render is a pure function: the same bytes each time, and no secret material (the
  # rendezvous Secret and its token are made by submit).
  cmp -s "$out" "$tmp/$name.again.yaml" || fail "$name: two renders differ (not deterministic)"
  if grep -qE '^kind: Secret$|^  token: ' "$out"; then
    fail "$name: the render holds a Secret or a token"
  fi
  if [ "${KTRAIN_UPDATE_GOLDEN:-0}" = 1 ]; then
    mkdir -p "$(dirname "$gold")"
    cp "$out" "$gold"
    echo "updated ${gold#"$src/"}"
  elif [ ! -f "$gold" ]; then
    fail "$name: no ${gold#"$src/"} (make it with KTRAIN_UPDATE_GOLDEN=1)"
  elif ! diff -u "$gold" "$out" >"$tmp/$name.diff"; then
    fail "$name: output differs from ${gold#"$src/"} (KTRAIN_UPDATE_GOLDEN=1 rewrites it):"
    head -n 60 "$tmp/$name.diff" | sed 's/^/    /'
  else
    echo "ok   $name"
  fi
}

examples=0
for file in "$src"/examples/*/ktrain.yaml; do
  name=$(basename "$(dirname "$file")")
  examples=$((examples + 1))
  check "$name" "$golden/$name.yaml" "$file"
done

# Each target (train.target, serve.target) of the examples: tests/golden/targets/
# <example>@<target>.yaml.
targets=(
  "pytorch-ddp pytorchjob --set train.retry=null"
  "pytorch-ddp jobset"
  "pytorch-ddp mpijob --set train.command=[mpirun,python,train.py] --set train.retry=null --set train.watchdog=null"
  "paddle-ocr jobset"
  "hello-ddp tfjob --set train.framework=tensorflow"
  "hello-ddp trainjob --set launcher.inject=never --set train.ttl=null"
  "sweep pytorchjob --set train.framework=pytorch"
  "serve-autoscale kserve --set serve.autoscale.metric=null"
  "serve-autoscale lws --set serve.nodes=2"
)
target_golden=0
for t in "${targets[@]}"; do
  read -r example target rest <<<"$t"
  key=train.target
  case "$target" in kserve|lws) key=serve.target ;; esac
  # shellcheck disable=SC2086
  check "$example@$target" "$golden/targets/$example@$target.yaml" \
    "$src/examples/$example/ktrain.yaml" --set "$key=$target" $rest
  target_golden=$((target_golden + 1))
done
for g in "$golden"/targets/*.yaml; do
  [ -e "$g" ] || continue
  found=0
  for t in "${targets[@]}"; do
    read -r example target _ <<<"$t"
    [ "$(basename "$g")" = "$example@$target.yaml" ] && found=1
  done
  [ "$found" = 1 ] || fail "${g#"$src/"} is not rendered by any case of golden.sh"
done
[ "$examples" -gt 0 ] || fail "no examples/*/ktrain.yaml found"

# A golden file whose example is gone is stale.
for g in "$golden"/*.yaml; do
  [ -e "$g" ] || continue
  name=$(basename "$g" .yaml)
  [ -f "$src/examples/$name/ktrain.yaml" ] || fail "tests/golden/$name.yaml has no example"
done

# The release rendered for (--kube-version): named in the output; what it lacks is
# left out, or refused when the project needs it.
hello=$src/examples/hello-ddp/ktrain.yaml
"$ktrain" render -f "$hello" --run-id golden >"$tmp/newest.yaml" 2>/dev/null
head -n 1 "$tmp/newest.yaml" | grep -qx '# rendered for Kubernetes 1.36, the newest release ktrain is tested against (--kube-version sets another)' ||
  fail "render does not say which release it rendered for: $(head -n 1 "$tmp/newest.yaml")"
grep -q '^  podReplacementPolicy: Failed$' "$tmp/newest.yaml" || fail "no podReplacementPolicy for 1.36"
# With -o json, the output is only JSON: the release is said on stderr.
"$ktrain" render -f "$hello" --run-id golden -o json >"$tmp/newest.json" 2>"$tmp/newest.err" ||
  fail "render -o json failed: $(cat "$tmp/newest.err")"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/newest.json" || fail "render -o json is not JSON"
grep -qx 'ktrain: rendered for Kubernetes 1.36, the newest release ktrain is tested against (--kube-version sets another)' "$tmp/newest.err" ||
  fail "render -o json does not say the release on stderr: $(cat "$tmp/newest.err")"
if "$ktrain" render -f "$hello" --run-id golden --kube-version v1.28.4 >"$tmp/old.yaml" 2>"$tmp/old.err"; then
  head -n 1 "$tmp/old.yaml" | grep -qx '# rendered for Kubernetes 1.28 (--kube-version)' ||
    fail "--kube-version 1.28: $(head -n 1 "$tmp/old.yaml")"
  grep -q 'podReplacementPolicy' "$tmp/old.yaml" && fail "--kube-version 1.28 renders podReplacementPolicy (off before 1.29)"
  grep -q 'older than 1.32, the oldest ktrain is tested against' "$tmp/old.err" ||
    fail "--kube-version 1.28 gave no warning: $(cat "$tmp/old.err")"
  # Nothing else differs.
  diff <(tail -n +2 "$tmp/newest.yaml" | grep -v 'podReplacementPolicy') <(tail -n +2 "$tmp/old.yaml") >/dev/null ||
    fail "--kube-version 1.28 changed more than podReplacementPolicy"
else
  fail "--kube-version v1.28.4 failed: $(cat "$tmp/old.err")"
fi
set +e
"$ktrain" render -f "$hello" --kube-version 2.x >/dev/null 2>"$tmp/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q -- '--kube-version 2.x: expected a Kubernetes release like 1.36' "$tmp/bad.err" ||
  fail "--kube-version 2.x: exit $rc, $(cat "$tmp/bad.err")"
set +e
"$ktrain" render -f "$hello" --kube-version 1.31 --set scheduling.queue=team-a \
  --set scheduling.managedBy=kueue.x-k8s.io/multikueue >"$tmp/mk.yaml" 2>"$tmp/mk.err"
rc=$?
set -e
[ "$rc" = 2 ] && [ ! -s "$tmp/mk.yaml" ] && grep -q 'scheduling.managedBy: Kubernetes 1.31 does not serve the Job field spec.managedBy (it is on from 1.32)' "$tmp/mk.err" ||
  fail "managedBy for 1.31: exit $rc, $(cat "$tmp/mk.err")"
"$ktrain" render -f "$hello" --kube-version 1.32 --set scheduling.queue=team-a \
  --set scheduling.managedBy=kueue.x-k8s.io/multikueue >"$tmp/mk.yaml" 2>/dev/null ||
  fail "managedBy for 1.32 refused"
grep -q '^  managedBy: kueue.x-k8s.io/multikueue$' "$tmp/mk.yaml" || fail "managedBy for 1.32 not rendered"

[ "$failures" -eq 0 ] || { echo "golden: $failures failure(s)"; exit 1; }
echo "golden: all $examples examples and $target_golden target renderings match"
