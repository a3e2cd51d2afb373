#!/usr/bin/env bash
# The JSON Schema of ktrain.yaml (`ktrain schema`), checked independently of ktrain: ajv
# (tests/schema/node_modules) compiles it in strict mode; it accepts every example, the
# files of tests/schema/valid (which ktrain validate also accepts) and what `ktrain init`
# writes, whose first line names it; and it rejects every file of tests/invalid but those
# listed below with the reason. The YAML is read as an editor reads it (YAML 1.2, by
# tests/schema/yaml_json.py on PyYAML). Without node, ajv or PyYAML the check is skipped
# with a message, except in CI (CI=true), where that is a failure.
set -euo pipefail
src=${KTRAIN_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${KTRAIN_BUILD:-$src/build}
ktrain=$build/ktrain
checker=$src/tests/schema
[ -x "$ktrain" ] || { echo "project_schema: $ktrain is not built"; exit 1; }

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL project_schema: $*"; exit 1; fi
  echo "SKIP project_schema: $*"
  exit 0
}
command -v node >/dev/null 2>&1 && [ -d "$checker/node_modules/ajv" ] ||
  skip "node or tests/schema/node_modules/ajv is missing (run scripts/setup, or npm ci in tests/schema)"
python3 -c 'import yaml' 2>/dev/null || skip "python3 with PyYAML is missing (scripts/setup installs python3-yaml)"

# Files of tests/invalid that a schema cannot reject, and why. Each must be a file that
# no editor reads as one YAML document (yaml_json.py refuses it), or one the schema
# accepts: so the list is checked as well, and a file that stops needing it fails here.
declare -A not_yaml=(
  [a-directory.yaml]="a directory, not a file"
  [binary-garbage.yaml]="not text: NUL bytes"
  [null-byte-like-binary.yaml]="not text: NUL bytes"
  [invalid-utf8.yaml]="not UTF-8"
  [malformed-flow.yaml]="a YAML syntax error"
  [malformed-indent.yaml]="a YAML syntax error"
  [tab-indent.yaml]="a YAML syntax error: a tab indents a line"
  [unclosed-quote.yaml]="a YAML syntax error: the quote is never closed"
  [two-documents.yaml]="two YAML documents"
  [duplicate-key.yaml]="a key given twice: YAML forbids it and JSON cannot hold it"
  [alias-bomb.yaml]="aliases of aliases that expand to ten million values: editors refuse them too"
)
declare -A semantic=(
  [patches-drop-image.yaml]="the merge patch is valid; the object it makes is not (checked after rendering)"
  [sweep-placeholder.yaml]="a {placeholder} in train.command must name a sweep parameter"
  [targets-train.yaml]="what train.target can express (its framework, train.runtime) is checked by the parser"
  [targets-trainjob.yaml]="what a TrainJob can express is checked by the parser"
  [targets-serve.yaml]="what serve.target kserve can express (runtime, nodes, metric) is checked by the parser"
  [watchdog-target.yaml]="which train.target can take train.watchdog is checked by the parser"
  [notify-empty.yaml]="an empty train.notify says nothing: the parser asks for a command or url"
  [retry-target.yaml]="which train.target can take train.retry is checked by the parser"
  [elastic-nodes.yaml]="elastic nodes (min..max) need train.target pytorchjob: checked by the parser"
  [sync-no-build.yaml]="train.sync needs image.build (the image it syncs onto): checked by the parser"
  [targets-serve-deployment.yaml]="serve.runtime needs target kserve, and the model URI's scheme, are checked by the parser"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$ktrain" schema >"$tmp/schema.json"
"$ktrain" schema -o json >"$tmp/schema-o-json.json"
cmp -s "$tmp/schema.json" "$tmp/schema-o-json.json" || fail "ktrain schema -o json differs from ktrain schema"
id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["$id"])' "$tmp/schema.json")
version=$("$ktrain" --version | cut -d' ' -f2)
[ "$id" = "https://ktrain.dev/schema/ktrain.yaml/$version.json" ] || fail "\$id is $id"

# Accepted: the examples, tests/schema/valid (ktrain validate accepts them too), and
# what ktrain init writes for each framework.
mkdir "$tmp/valid" "$tmp/json-valid" "$tmp/json-invalid"
for file in "$src"/examples/*/ktrain.yaml; do
  cp "$file" "$tmp/valid/example-$(basename "$(dirname "$file")").yaml"
done
for file in "$checker"/valid/*.yaml; do
  "$ktrain" validate -q -f "$file" >/dev/null || fail "$(basename "$file"): ktrain validate rejects it"
  cp "$file" "$tmp/valid/"
done
for framework in pytorch paddle tensorflow jax none; do
  out=$tmp/valid/init-$framework.yaml
  "$ktrain" init -f - --name "init-$framework" --framework "$framework" --gpus 2 >"$out"
  [ "$(head -n 1 "$out")" = "# yaml-language-server: \$schema=$id" ] ||
    fail "init --framework $framework: the first line is $(head -n 1 "$out")"
done
python3 "$checker/yaml_json.py" "$tmp/json-valid" "$tmp/valid"/*.yaml
for refused in "$tmp/json-valid"/*.refused; do
  [ -e "$refused" ] || continue
  fail "$(basename "$refused" .refused): not read as YAML: $(cat "$refused")"
done

# Rejected: tests/invalid, but for the files listed above.
python3 "$checker/yaml_json.py" "$tmp/json-invalid" "$src"/tests/invalid/*.yaml
invalid_json=()
listed_json=()
for file in "$src"/tests/invalid/*.yaml; do
  name=$(basename "$file" .yaml)
  json=$tmp/json-invalid/$name.json
  if [ -n "${not_yaml[$name.yaml]:-}" ]; then
    echo "skip $name.yaml: ${not_yaml[$name.yaml]}"
    [ -e "$tmp/json-invalid/$name.refused" ] ||
      fail "$name.yaml: listed as ${not_yaml[$name.yaml]}, but it reads as YAML: take it off the list"
  elif [ -e "$tmp/json-invalid/$name.refused" ]; then
    fail "$name.yaml: not read as YAML ($(cat "$tmp/json-invalid/$name.refused")); list it, with the reason"
  elif [ -n "${semantic[$name.yaml]:-}" ]; then
    echo "skip $name.yaml: ${semantic[$name.yaml]}"
    listed_json+=("$json")
  else
    invalid_json+=("$json")
  fi
done
for name in "${!not_yaml[@]}" "${!semantic[@]}"; do
  [ -e "$src/tests/invalid/$name" ] || fail "$name is listed but not in tests/invalid"
done
[ ${#invalid_json[@]} -ge 30 ] || fail "only ${#invalid_json[@]} invalid files to reject"

valid_json=("$tmp/json-valid"/*.json)
[ ${#valid_json[@]} -ge 10 ] || fail "only ${#valid_json[@]} valid files"
node "$checker/project_schema.mjs" "$tmp/schema.json" --valid "${valid_json[@]}" \
  --invalid "${invalid_json[@]}" --listed "${listed_json[@]}" || failures=$((failures + 1))

[ "$failures" -eq 0 ] || { echo "project_schema: $failures failure(s)"; exit 1; }
echo "project_schema: the schema accepts ${#valid_json[@]} valid files and rejects ${#invalid_json[@]} of tests/invalid (${#not_yaml[@]} are not YAML, ${#semantic[@]} only the parser can reject)"
