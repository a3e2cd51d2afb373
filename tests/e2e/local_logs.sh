#!/usr/bin/env bash
# `ktrain logs` filters and saves, on a local run of 2 nodes x 2 workers through the real
# ktrain-launch: --grep (repeatable: any) and --exclude on each line's text after the
# "[rank R]" prefix, with --rank and --tail; matches highlighted only on a terminal;
# --save DIR writes rank-R.log per worker (the prefix dropped), filters applied, and
# refuses a folder that holds files; a regular expression that does not compile is exit 2
# with nothing printed and no folder made.
set -euo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
export HOME="$work/home"
unset KUBECONFIG KUBERNETES_SERVICE_HOST KTRAIN_LOCAL
mkdir -p "$HOME"
trap '"$ktrain" delete --local logs-a >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }

mkdir "$work/proj" && cd "$work/proj"
cat >work.sh <<'SH'
for s in 1 2 3; do
  echo "step $s loss 0.$KTRAIN_RANK$s"
  echo "DEBUG rank $KTRAIN_RANK tick $s"
done
echo "done on rank $KTRAIN_RANK"
SH
cat >logs.yaml <<'YAML'
name: logs
image: registry.example.com/logs:1
train:
  command: [sh, work.sh]
  framework: none
  nodes: 2
  gpus: 0
  processesPerNode: 2
YAML
"$ktrain" submit --local -f logs.yaml --run-id a --wait >/dev/null 2>"$work/err" ||
  { cat "$work/err"; fail "the local run"; }

echo "== --grep, --exclude, --rank, --tail"
out=$("$ktrain" logs --local logs-a --grep 'loss' --rank 2)
expect_eq "$out" "[rank 2] step 1 loss 0.21
[rank 2] step 2 loss 0.22
[rank 2] step 3 loss 0.23" "--grep loss --rank 2"
# ^ anchors at the text after the prefix; two --grep: either.
n=$("$ktrain" logs --local logs-a --grep '^done' --grep '^step 3' | wc -l)
expect_eq "$n" 8 "--grep '^done' --grep '^step 3': two lines of each of 4 ranks"
out=$("$ktrain" logs --local logs-a --exclude '^DEBUG' --exclude loss --exclude '^ktrain-launch')
expect_eq "$(sort <<<"$out")" "[rank 0] done on rank 0
[rank 1] done on rank 1
[rank 2] done on rank 2
[rank 3] done on rank 3" "--exclude three times (the launcher's own lines too)"
out=$("$ktrain" logs --local logs-a --grep 'tick' --exclude 'tick 1' --rank 0)
expect_eq "$out" "[rank 0] DEBUG rank 0 tick 2
[rank 0] DEBUG rank 0 tick 3" "--grep with --exclude"
# Not a terminal: no colour codes, whatever is matched.
if "$ktrain" logs --local logs-a --grep loss | grep -q $'\033'; then fail "colour codes on a pipe"; fi
# On a terminal, matches in bold red.
if command -v script >/dev/null; then
  script -qec "'$ktrain' logs --local logs-a --grep 'loss 0\.1[0-9]' --rank 1" /dev/null >"$work/tty" </dev/null
  grep -q $'\033\\[1;31mloss 0.11\033\\[0m' "$work/tty" || fail "no highlight on a terminal: $(cat -v "$work/tty")"
fi
echo "ok: filters"

echo "== --save DIR"
"$ktrain" logs --local logs-a --save "$work/saved/a" 2>"$work/err" >"$work/out"
[ ! -s "$work/out" ] || fail "--save printed on stdout: $(cat "$work/out")"
grep -q "ktrain: saved 30 lines in 6 files under $work/saved/a" "$work/err" || fail "--save's summary: $(cat "$work/err")"
expect_eq "$(ls "$work/saved/a" | tr '\n' ' ')" "node-0.log node-1.log rank-0.log rank-1.log rank-2.log rank-3.log " \
  "a file per rank, and per node for the launcher's lines"
expect_eq "$(cat "$work/saved/a/node-1.log")" "$("$ktrain" logs --local logs-a --node 1 | sed -n 's/^\[node 1\] //p')" \
  "node 1's own lines"
expect_eq "$(head -1 "$work/saved/a/rank-3.log")" "step 1 loss 0.31" "rank 3's file, the prefix dropped"
expect_eq "$(wc -l <"$work/saved/a/rank-3.log")" 7 "rank 3's seven lines"
"$ktrain" logs --local logs-a --save "$work/saved/b" --grep loss --rank 1 2>/dev/null
expect_eq "$(cat "$work/saved/b/rank-1.log")" "step 1 loss 0.11
step 2 loss 0.12
step 3 loss 0.13" "--save with --grep and --rank"
expect_eq "$(ls "$work/saved/b")" "rank-1.log" "only rank 1's file"
set +e
"$ktrain" logs --local logs-a --save "$work/saved/a" >"$work/out" 2>"$work/err"; rc=$?
set -e
expect_eq "$rc" 2 "--save into a folder that holds files"
grep -q "holds files already" "$work/err" || fail "the message: $(cat "$work/err")"
expect_eq "$(wc -l <"$work/saved/a/rank-3.log")" 7 "nothing overwritten"
echo "ok: --save"

echo "== bad input: exit 2, nothing printed, no folder"
for args in "--grep loss(" "--exclude [a-" "--grep ok --exclude (("; do
  set +e
  # shellcheck disable=SC2086
  "$ktrain" logs --local logs-a $args --save "$work/saved/c" >"$work/out" 2>"$work/err"; rc=$?
  set -e
  expect_eq "$rc" 2 "$args"
  [ ! -s "$work/out" ] || fail "$args printed: $(cat "$work/out")"
  grep -q "not a regular expression" "$work/err" || fail "$args: $(cat "$work/err")"
  [ ! -e "$work/saved/c" ] || fail "$args made the --save folder"
done
set +e
"$ktrain" logs --local nosuch-a --save "$work/saved/d" >"$work/out" 2>"$work/err"; rc=$?
set -e
[ "$rc" != 0 ] || fail "logs of a run that does not exist succeeded"
[ ! -e "$work/saved/d" ] || fail "a run not found left the --save folder"
echo "ok: bad input"
