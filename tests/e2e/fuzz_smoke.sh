#!/usr/bin/env bash
# The fuzz targets (tests/fuzz) build with clang and run for a few seconds each on
# their seed corpus without a crash, sanitizer report, timeout (1 s) or OOM (256 MiB).
# Skipped without clang, and in the sanitizer build (the fuzz build has its own
# sanitizers, and once per suite is enough). KTRAIN_FUZZ_SECONDS: seconds per target
# (default 5).
set -euo pipefail
src=$(cd "${KTRAIN_SOURCE:-.}" && pwd)
build=${KTRAIN_BUILD:-build}
if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  echo "SKIP: clang is not installed (scripts/setup installs it); the fuzz targets need it"
  exit 77
fi
if grep -q '^KTRAIN_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "SKIP: a sanitizer build; the fuzz targets run once, from the normal build"
  exit 77
fi
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
start=$(date +%s)
if KTRAIN_FUZZ_BUILD="$build/fuzz-build" "$src/tests/fuzz/run" "${KTRAIN_FUZZ_SECONDS:-5}"; then
  echo "ok: every fuzz target ran without a finding ($(($(date +%s) - start)) s with the build)"
else
  echo "FAIL: a fuzz target found something (reproducers above; tests/fuzz/README.md)"
  exit 1
fi
