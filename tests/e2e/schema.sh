#!/usr/bin/env bash
# Independent validation: every object of every example's render (-o json) against the
# upstream Kubernetes OpenAPI schemas (tests/schema, npm kubernetes-models), after a
# self-test showing that the checker rejects broken objects. Without node_modules the
# check is skipped with a message, except in CI (CI=true), where that is a failure.
set -euo pipefail
src=${KTRAIN_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${KTRAIN_BUILD:-$src/build}
ktrain=$build/ktrain
schema=$src/tests/schema
[ -x "$ktrain" ] || { echo "schema: $ktrain is not built"; exit 1; }

if ! command -v node >/dev/null 2>&1 || [ ! -d "$schema/node_modules/kubernetes-models" ]; then
  msg="schema: node or tests/schema/node_modules is missing (run scripts/setup, or npm ci in tests/schema)"
  if [ "${CI:-}" = true ]; then echo "FAIL $msg"; exit 1; fi
  echo "SKIP $msg"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$schema/validate.mjs" --self-test

files=()
for file in "$src"/examples/*/ktrain.yaml; do
  name=$(basename "$(dirname "$file")")
  "$ktrain" render -o json -f "$file" --run-id schema >"$tmp/$name.json"
  files+=("$tmp/$name.json")
done
[ ${#files[@]} -gt 0 ] || { echo "FAIL schema: no examples"; exit 1; }
node "$schema/validate.mjs" "${files[@]}"
echo "schema: every rendered object of ${#files[@]} examples is valid"
