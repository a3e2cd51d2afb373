#!/usr/bin/env bash
# The build-time tool that embeds templates/: it converts each skeleton to the JSON
# that render reads, and fails (exit 1, naming the file and place) on a template that
# is not valid YAML or not a mapping, so that a broken template stops the build.
set -euo pipefail
src=${KTRAIN_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${KTRAIN_BUILD:-$src/build}
tool=$build/ktrain-embed-templates
[ -x "$tool" ] || { echo "embed_templates: $tool is not built"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The real templates: every file is there, as YAML and as JSON.
"$tool" "$tmp/out.cc" "$src/templates" || fail "the real templates did not convert"
for f in "$src"/templates/*.yaml; do
  grep -q "{\"$(basename "$f")\"," "$tmp/out.cc" || fail "$(basename "$f") is not embedded"
done
grep -q '{"apiVersion":"batch/v1","kind":"Job"' "$tmp/out.cc" || fail "job.yaml's JSON is missing"
echo "ok: the real templates convert"

# Unchanged output is not rewritten (nothing rebuilds needlessly).
touch -d '2000-01-01' "$tmp/out.cc"
"$tool" "$tmp/out.cc" "$src/templates"
[ "$(stat -c %Y "$tmp/out.cc")" = "$(date -d 2000-01-01 +%s)" ] || fail "an unchanged output was rewritten"
echo "ok: an unchanged output is left alone"

# Not valid YAML: the file, line and column.
mkdir "$tmp/bad"
printf 'kind: Job\nspec: [unclosed\n' > "$tmp/bad/job.yaml"
if "$tool" "$tmp/bad.cc" "$tmp/bad" 2> "$tmp/err"; then fail "invalid YAML was accepted"; fi
grep -q "^ktrain-embed-templates: templates/job.yaml:[0-9]*:[0-9]*: " "$tmp/err" ||
  fail "no place in: $(cat "$tmp/err")"
[ ! -e "$tmp/bad.cc" ] || fail "an output was written for invalid templates"
echo "ok: invalid YAML fails with its place"

# Not a mapping.
printf -- '- a\n- b\n' > "$tmp/bad/job.yaml"
if "$tool" "$tmp/bad.cc" "$tmp/bad" 2> "$tmp/err"; then fail "a list was accepted"; fi
grep -q "templates/job.yaml: a template must be a YAML mapping" "$tmp/err" ||
  fail "unexpected message: $(cat "$tmp/err")"
echo "ok: a template that is not a mapping fails"

# Wrong usage.
if "$tool" 2> "$tmp/err"; then fail "no arguments were accepted"; fi
grep -q "^usage: ktrain-embed-templates OUT.cc TEMPLATES_DIR" "$tmp/err" || fail "no usage line"
echo "ok: usage"
