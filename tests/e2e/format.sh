#!/usr/bin/env bash
# Every C++ source is formatted as .clang-format says: clang-format --dry-run -Werror
# over the tracked .cc and .h files (every such file under cli/, runtime/ and tests/
# when the source is not a git checkout).
set -euo pipefail
cd "${KTRAIN_SOURCE:-.}"
command -v clang-format >/dev/null || { echo "FAIL: clang-format is not installed (scripts/setup installs it)"; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find cli runtime tests -name '*.cc' -o -name '*.h')
fi
[ "${#files[@]}" -gt 50 ] || { echo "FAIL: only ${#files[@]} sources found"; exit 1; }
if ! clang-format --dry-run -Werror "${files[@]}" 2>"${TMPDIR:-/tmp}/ktrain-format.$$"; then
  grep -E '^[^ ].*: error:' "${TMPDIR:-/tmp}/ktrain-format.$$" | cut -d: -f1 | sort | uniq -c
  rm -f "${TMPDIR:-/tmp}/ktrain-format.$$"
  echo "FAIL: not formatted (run clang-format -i on the files above)"
  exit 1
fi
rm -f "${TMPDIR:-/tmp}/ktrain-format.$$"
echo "ok: ${#files[@]} sources formatted as .clang-format says"
