#!/usr/bin/env bash
# Orphans are reaped: a worker double-forks a short sleeper, which is re-parented
# to the launcher (a child subreaper, or PID 1 in its own PID namespace); once it
# exits no zombie is left under the launcher.
source "$(dirname "$0")/launch_lib.bash"
worker='
( sleep 1 & )            # the middle shell exits at once: the sleeper is orphaned
sleep 0.3
echo "adopted: $(ps -o pid= --ppid $PPID | wc -l)"
sleep 1.7                # the sleeper has exited by now
echo "zombies: $(ps -o stat= --ppid $PPID | grep -c "^Z" || true)"'
check() {
  local name=$1
  expect_status "$name" 0
  grep -q "^\[rank 0\] adopted: 2$" "$WORK/$name.out" ||
    { cat "$WORK/$name.out"; fail "$name: the orphan was not re-parented to the launcher"; }
  grep -q "^\[rank 0\] zombies: 0$" "$WORK/$name.out" ||
    { cat "$WORK/$name.out"; fail "$name: a zombie is left"; }
}
start_node sub KTRAIN_NPROC_PER_NODE=1 -- sh -c "$worker"
check sub
pass "subreaper: the orphan was adopted and reaped"

if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
  env KTRAIN_NPROC_PER_NODE=1 KTRAIN_TERMINATION_LOG="$WORK/pid1.termlog" \
    unshare --pid --fork --mount-proc "$LAUNCH" -- sh -c "$worker" >"$WORK/pid1.out" 2>"$WORK/pid1.err" &
  echo $! >"$WORK/pid1.pid"
  check pid1
  pass "PID 1: the orphan was adopted and reaped"
else
  echo "skip: PID-1 variant needs root and unshare --pid"
fi
