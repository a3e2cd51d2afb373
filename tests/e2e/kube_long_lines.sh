#!/usr/bin/env bash
# A pod that writes a line of 3 MiB (no newline for that long) against the test API
# server: `ktrain logs -f` and `ktrain logs` print its first 1 MiB, marked as cut, and
# every line around it whole; the rest of the long line is dropped, not kept.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
ktrain="$KTRAIN_BUILD/ktrain"
work="$(mktemp -d /tmp/ktrain-long-lines.XXXXXX)"

python3 - "$work/script.json" <<'PY'
import json, sys
long = "[rank 0] " + "x" * (3 << 20)
script = {"pods": [{"match": {"job": "long-*"},
                    "lines": ["[rank 0] before", long, "[rank 0] after \u20ac"]}]}
json.dump(script, open(sys.argv[1], "w"))
PY
start_apiserver "$work/script.json"
trap 'stop_apiserver; rm -rf "$work"' EXIT

cat >"$work/long.yaml" <<'YAML'
name: long
image:
  ref: registry.example.com/ktrain/long:1
train:
  command: [python3, train.py]
  gpus: 0
  preflight: "off"
YAML

# check FILE WHAT: the three lines, the long one cut at 1 MiB (its timestamp included).
check() {
  python3 - "$1" <<'PY' || fail "$2: $(head -c 300 "$1")"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[-1] == "", "no newline at the end"
lines = lines[:-1]
assert len(lines) == 3, [len(l) for l in lines]
assert lines[0] == "[rank 0] before", lines[0]
assert lines[2] == "[rank 0] after \u20ac", lines[2]
cut = lines[1]
mark = " [ktrain: line cut at 1 MiB]"
assert cut.endswith(mark), cut[-80:]
body = cut[: -len(mark)]
assert body.startswith("[rank 0] xxx"), body[:20]
assert set(body[len("[rank 0] "):]) == {"x"}, "other bytes in the cut line"
# The kubelet's timestamp ("2026-11-29T17:28:40.123456789Z ", 31 bytes) was part of it.
assert (1 << 20) - 40 <= len(body.encode()) <= (1 << 20), len(body.encode())
PY
  echo "ok: $2"
}

run="$("$ktrain" submit -f "$work/long.yaml" --run-id a1)"
"$ktrain" logs -f "$run" >"$work/follow.out" 2>"$work/follow.err" || fail "logs -f: $(cat "$work/follow.err")"
check "$work/follow.out" "logs -f cuts a 3 MiB line at 1 MiB"
"$ktrain" logs "$run" >"$work/logs.out" 2>"$work/logs.err" || fail "logs: $(cat "$work/logs.err")"
check "$work/logs.out" "logs (not followed) cuts it the same way"
