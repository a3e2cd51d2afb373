# Shared by tests/e2e/launch_*.sh: where ktrain-launch is, a scratch folder,
# free ports, and small assertions. Sourced, not run.
set -euo pipefail
BUILD=${KTRAIN_BUILD:-build}
LAUNCH=$BUILD/ktrain-launch
[ -x "$LAUNCH" ] || { echo "no $LAUNCH: build ktrain-launch first" >&2; exit 1; }
WORK=$(mktemp -d /tmp/ktrain-e2e-launch.XXXXXX)
LAUNCH_PIDS=()
cleanup() {
  for p in "${LAUNCH_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
[ -z "${KEEP_WORK:-}" ] || trap - EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_node NAME ENV... -- COMMAND...: runs a launcher in the background with the
# given environment; its stdout/stderr go to $WORK/NAME.out/.err, its pid to $WORK/NAME.pid.
start_node() {
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" KTRAIN_TERMINATION_LOG="$WORK/$name.termlog" \
    "$LAUNCH" -- "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  local pid=$!
  echo "$pid" >"$WORK/$name.pid"
  LAUNCH_PIDS+=("$pid")
}

# wait_node NAME: waits for the launcher; its exit status is left in $RC. (Not
# to be called in $(...): a subshell cannot wait for its parent's children.)
RC=0
wait_node() {
  RC=0
  wait "$(cat "$WORK/$1.pid")" || RC=$?
}

# wait_for_file PATH [SECONDS]: waits until PATH exists.
wait_for_file() {
  local i=0 limit=$(( ${2:-60} * 10 ))
  while [ ! -e "$1" ]; do
    sleep 0.1
    i=$((i + 1))
    [ $i -lt $limit ] || fail "timed out waiting for $1"
  done
}

expect_status() {  # NAME WANT
  wait_node "$1"
  [ "$RC" = "$2" ] || { cat "$WORK/$1.err" >&2; fail "$1 exited $RC, expected $2"; }
}

expect_termlog() {  # NAME TEXT
  grep -qF -- "$2" "$WORK/$1.termlog" 2>/dev/null || {
    echo "termination log of $1: $(cat "$WORK/$1.termlog" 2>/dev/null)" >&2
    fail "termination log of $1 lacks '$2'"
  }
}
