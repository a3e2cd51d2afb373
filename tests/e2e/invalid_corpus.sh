#!/usr/bin/env bash
# Every file in tests/invalid/ is an invalid project: `ktrain validate -f FILE` must exit 2,
# print nothing on stdout, and print exactly FILE's sibling .expected on stderr.
# KTRAIN_UPDATE_GOLDEN=1 rewrites the .expected files (review the diff before committing).
set -uo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
: "${KTRAIN_SOURCE:?set KTRAIN_SOURCE to the source folder}"
ktrain="$KTRAIN_BUILD/ktrain"
corpus="$KTRAIN_SOURCE/tests/invalid"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail=0
count=0
cd "$corpus" || exit 1
for f in *.yaml; do
  count=$((count + 1))
  expected="${f%.yaml}.expected"
  "$ktrain" validate -f "$f" >"$work/out" 2>"$work/err"
  status=$?
  if [ "${KTRAIN_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$work/err" "$expected"
  fi
  if [ "$status" != 2 ]; then
    echo "FAIL $f: exit status $status, expected 2"
    fail=1
  fi
  if [ -s "$work/out" ]; then
    echo "FAIL $f: printed on stdout:"
    cat "$work/out"
    fail=1
  fi
  if [ ! -f "$expected" ]; then
    echo "FAIL $f: no $expected (run with KTRAIN_UPDATE_GOLDEN=1 to create it)"
    fail=1
  elif ! diff -u "$expected" "$work/err"; then
    echo "FAIL $f: stderr differs from $expected"
    fail=1
  fi
done

# The same through standard input: the messages name "-" instead of the file.
"$ktrain" validate -f - <"$corpus/negative-gpus.yaml" >"$work/out" 2>"$work/err"
status=$?
if [ "$status" != 2 ] || [ -s "$work/out" ] || ! grep -q '^-:[0-9]*:[0-9]*: train.gpus: ' "$work/err"; then
  echo "FAIL stdin: status $status, stderr: $(cat "$work/err")"
  fail=1
fi

if [ "$count" -lt 30 ]; then
  echo "FAIL: only $count files in the corpus, expected at least 30"
  fail=1
fi
[ "$fail" = 0 ] && echo "ok: $count invalid project files rejected with the expected messages"
exit "$fail"
