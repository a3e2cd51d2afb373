#!/usr/bin/env bash
# The fuzz targets (tests/fuzz) build with clang and run their seed corpus and then
# a fixed number of inputs grown from it with a fixed seed, without a crash, sanitizer
# report, timeout (5 s) or OOM (256 MiB). The same inputs on every machine: this check
# does not fail on one run and pass on the next; open-ended search is
# `tests/fuzz/run SECONDS`. Skipped without clang, and in the sanitizer build (the fuzz
# build has its own sanitizers, and once per suite is enough). KTRAIN_FUZZ_RUNS: inputs
# per target (default 4000); KTRAIN_FUZZ_SEED (default 1).
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
if KTRAIN_FUZZ_BUILD="$build/fuzz-build" KTRAIN_FUZZ_RUNS="${KTRAIN_FUZZ_RUNS:-4000}" \
  "$src/tests/fuzz/run"; then
  echo "ok: every fuzz target ran without a finding ($(($(date +%s) - start)) s with the build)"
else
  echo "FAIL: a fuzz target found something (reproducers above; tests/fuzz/README.md)"
  exit 1
fi
