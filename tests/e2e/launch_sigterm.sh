#!/usr/bin/env bash
# SIGTERM to a launcher reaches every worker; a worker that traps it and exits
# ends cleanly, one that ignores it is killed after the grace period. USR1 is
# forwarded without stopping anything.
source "$(dirname "$0")/launch_lib.bash"
worker='
trap "echo usr1-seen" USR1
if [ "$KTRAIN_RANK" = 0 ]; then
  trap "echo term-seen-exiting; exit 0" TERM
else
  trap "echo term-seen-ignoring" TERM
fi
echo $$ > "$WORK/tmp.$KTRAIN_RANK"; mv "$WORK/tmp.$KTRAIN_RANK" "$WORK/pid.$KTRAIN_RANK"  # once the traps are set
i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'
start_node n KTRAIN_NPROC_PER_NODE=2 KTRAIN_GRACE_PERIOD=2 WORK="$WORK" -- sh -c "$worker"
wait_for_file "$WORK/pid.0"
wait_for_file "$WORK/pid.1"
kill -USR1 "$(cat "$WORK/n.pid")"
for i in $(seq 100); do [ "$(grep -c usr1-seen "$WORK/n.out")" = 2 ] && break; sleep 0.1; done
grep -q "^\[rank 0\] usr1-seen$" "$WORK/n.out" || fail "USR1 did not reach rank 0"
grep -q "^\[rank 1\] usr1-seen$" "$WORK/n.out" || fail "USR1 did not reach rank 1"
kill -TERM "$(cat "$WORK/n.pid")"
expect_status n 143
grep -q "^\[rank 0\] term-seen-exiting$" "$WORK/n.out" || fail "rank 0 did not see SIGTERM"
grep -q "^\[rank 1\] term-seen-ignoring$" "$WORK/n.out" || fail "rank 1 did not see SIGTERM"
grep -q "rank 1 still running after the grace period: killing it" "$WORK/n.err" ||
  { cat "$WORK/n.err"; fail "rank 1 was not killed after the grace period"; }
! grep -q "rank 0 still running" "$WORK/n.err" || fail "rank 0 should have exited by itself"
for r in 0 1; do ! kill -0 "$(cat "$WORK/pid.$r")" 2>/dev/null || fail "rank $r still runs"; done
expect_termlog n "node 0 stopped by SIGTERM"
pass "SIGTERM forwarded to both workers; the one ignoring it was killed after the grace"
