#!/usr/bin/env bash
# Golden files: every example renders, without warnings, to exactly
# tests/golden/<example>.yaml (with the fixed run id "golden"), twice in a row
# byte for byte but for the rendezvous token, which is fresh each time.
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

examples=0
for file in "$src"/examples/*/ktrain.yaml; do
  name=$(basename "$(dirname "$file")")
  examples=$((examples + 1))
  out=$tmp/$name.yaml
  if ! "$ktrain" render -f "$file" --run-id golden >"$out" 2>"$tmp/$name.err"; then
    fail "$name: ktrain render failed:"; sed 's/^/    /' "$tmp/$name.err"; continue
  fi
  if [ -s "$tmp/$name.err" ]; then
    fail "$name: rendered with warnings (examples must render cleanly):"
    sed 's/^/    /' "$tmp/$name.err"
  fi
  "$ktrain" render -f "$file" --run-id golden >"$tmp/$name.again.yaml" 2>/dev/null
  # The rendezvous Secret's token is fresh each time (and must be): the same
  # otherwise. Compared without it.
  if [ -n "$(grep -E '^  token: ' "$out")" ] && [ "$(grep -E '^  token: ' "$out")" = "$(grep -E '^  token: ' "$tmp/$name.again.yaml")" ]; then
    fail "$name: two renders gave the same rendezvous token"
  fi
  for f in "$out" "$tmp/$name.again.yaml"; do
    if grep -q "^kind: Job$" "$f" && ! grep -qE "^  token: [A-Za-z0-9+/=]{88}$" "$f"; then fail "$name: no rendezvous token in the render"; fi
    sed -i -E 's|^  token: [A-Za-z0-9+/=]{88}$|  token: (fresh)|' "$f"
  done
  cmp -s "$out" "$tmp/$name.again.yaml" || fail "$name: two renders differ (not deterministic)"
  if [ "${KTRAIN_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$out" "$golden/$name.yaml"
    echo "updated tests/golden/$name.yaml"
  elif [ ! -f "$golden/$name.yaml" ]; then
    fail "$name: no tests/golden/$name.yaml (make it with KTRAIN_UPDATE_GOLDEN=1)"
  elif ! diff -u "$golden/$name.yaml" "$out" >"$tmp/$name.diff"; then
    fail "$name: output differs from tests/golden/$name.yaml (KTRAIN_UPDATE_GOLDEN=1 rewrites it):"
    head -n 60 "$tmp/$name.diff" | sed 's/^/    /'
  else
    echo "ok   $name"
  fi
done
[ "$examples" -gt 0 ] || fail "no examples/*/ktrain.yaml found"

# A golden file whose example is gone is stale.
for g in "$golden"/*.yaml; do
  [ -e "$g" ] || continue
  name=$(basename "$g" .yaml)
  [ -f "$src/examples/$name/ktrain.yaml" ] || fail "tests/golden/$name.yaml has no example"
done

[ "$failures" -eq 0 ] || { echo "golden: $failures failure(s)"; exit 1; }
echo "golden: all $examples examples match"
