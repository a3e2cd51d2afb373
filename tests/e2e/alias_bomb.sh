#!/usr/bin/env bash
# A project file whose YAML aliases multiply (aliases of aliases, ten at each level:
# 10^8 values in 500 bytes) is refused at once, at the alias that passes the limit,
# by validate, render and --set alike, in 512 MiB of address space: a ktrain that
# expanded it would run out of memory here (and fail) rather than take the machine's.
# A file whose aliases stay under the limit is read as written.
set -uo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }

# bomb LEVELS: a project whose patches.Job holds LEVELS levels of ten aliases each.
bomb() {
  printf 'name: bomb\nimage: python:3.12\ntrain: {command: [python, train.py]}\npatches:\n  Job:\n'
  printf '    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n'
  local i
  for ((i = 1; i < $1; i++)); do
    printf '    l%d: &l%d [%s]\n' "$i" "$i" "$(printf "*l$((i - 1)),%.0s" {1..10} | sed 's/,$//')"
  done
}

# limited CMD...: CMD under a 512 MiB address-space limit and a minute of time. Under
# AddressSanitizer, whose runtime reserves terabytes of address space up front, the
# peak resident memory is measured against the same 512 MiB instead, above what that
# build holds once started (`ktrain version`: the sanitizers' data for every source
# file, relocated at start, some 500 MiB that are not ktrain's).
asan=0
libs=$(ldd "$ktrain" 2>/dev/null || true)  # whole: grep -q would cut ldd off (pipefail)
grep -q libasan <<<"$libs" && asan=1
base_rss=0
if [ "$asan" = 1 ]; then
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=1" \
    /usr/bin/time -f %M -o "$PWD/rss" "$ktrain" version >/dev/null 2>&1
  base_rss=$(tail -n 1 "$PWD/rss")
fi
limited() {
  if [ "$asan" = 1 ]; then
    local rc=0
    # (The sanitizer's quarantine of freed memory, 256 MiB and not ktrain's, made small.)
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=1" \
      /usr/bin/time -f %M -o "$PWD/rss" timeout 60 "$@" || rc=$?
    local rss
    rss=$(tail -n 1 "$PWD/rss")
    [ $((rss - base_rss)) -le 524288 ] || {
      echo "peak resident memory ${rss} KiB, over 512 MiB above the ${base_rss} KiB of ktrain version" >&2
      return 99
    }
    return "$rc"
  fi
  (ulimit -v 524288 && exec timeout 60 "$@")
}

expected='bomb.yaml:10:42: too many alias expansions: with *l3 here, the file'"'"'s aliases make more than 100000 values; ktrain expands no more'
for levels in 8 9; do
  bomb "$levels" >bomb.yaml
  for verb in validate render; do
    limited "$ktrain" "$verb" -f bomb.yaml >out 2>err
    status=$?
    [ "$status" = 2 ] || fail "$verb of the $levels-level bomb: exit $status, expected 2; stderr: $(head -c 500 err)"
    [ -s out ] && fail "$verb of the $levels-level bomb printed on stdout: $(head -c 200 out)"
    # validate lists the file's problems; other verbs say "ktrain: error: " first.
    [ "$(sed 's/^ktrain: error: //' err)" = "$expected" ] ||
      fail "$verb of the $levels-level bomb: stderr: $(head -c 500 err)"
  done
  echo "ok: the $levels-level alias bomb is refused by validate and render"
done

# The same through --set, on a valid file.
cat >ok.yaml <<'YAML'
name: ok
image: python:3.12
train: {command: [python, train.py]}
YAML
value='[&l0 [x, x, x, x, x, x, x, x, x, x]'
for ((i = 1; i < 8; i++)); do
  value+=", &l$i [$(printf "*l$((i - 1)), %.0s" {1..10} | sed 's/, $//')]"
done
value+=']'
limited "$ktrain" validate -f ok.yaml --set "patches.Job.x=$value" >out 2>err
status=$?
[ "$status" = 2 ] || fail "--set with the bomb: exit $status, expected 2; stderr: $(head -c 500 err)"
grep -q -e '^\(ktrain: error: \)\?--set patches.Job.x=.*: patches.Job.x: too many alias expansions: with \*l3 here' err ||
  fail "--set with the bomb: stderr: $(head -c 1000 err)"
echo "ok: a --set value with the bomb is refused"

# Aliases under the limit are expanded as written.
cat >aliases.yaml <<'YAML'
name: aliases
image: python:3.12
train:
  command: [python, train.py]
  env: &env {DATA: /data, MODE: fast}
patches:
  Job:
    metadata:
      labels: &labels {team: vision, tier: batch}
      annotations: *labels
YAML
limited "$ktrain" render -f aliases.yaml -o json >out 2>err || fail "aliases under the limit: $(cat err)"
python3 - out <<'PY' || fail "aliases under the limit were not expanded as written"
import json, sys
objects = json.load(open(sys.argv[1]))
objects = objects["items"] if isinstance(objects, dict) and "items" in objects else objects
job = [o for o in objects if o["kind"] == "Job"][0]
assert job["metadata"]["annotations"]["team"] == "vision", job["metadata"]
assert job["metadata"]["labels"]["tier"] == "batch", job["metadata"]
PY
echo "ok: aliases under the limit are expanded"
