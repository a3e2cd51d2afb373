#!/usr/bin/env bash
# Out of file descriptors (ulimit -n), connections waiting in the accept queue do
# not make node 0 spin: a failed accept (EMFILE) waits before it tries again, and
# the oldest unauthenticated connections give way to new ones, so a real node
# still joins. CPU time is read from /proc/PID/stat (utime + stime, in ticks).
source "$(dirname "$0")/launch_lib.bash"
PEER="$(dirname "$0")/../fixtures/rdzv/rdzv_peer.py"
# The launcher under a descriptor limit of $KTRAIN_TEST_NOFILE, with only 0, 1 and 2
# open (whatever the test runner leaves open is closed first).
REAL=$(realpath "$LAUNCH")
cat >"$WORK/limited" <<PY
#!/usr/bin/env python3
import os, resource, sys
try:
    os.fstat(0)
except OSError:
    os.open("/dev/null", os.O_RDONLY)
os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
n = int(os.environ["KTRAIN_TEST_NOFILE"])
resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
os.execv("$REAL", ["$REAL"] + sys.argv[1:])
PY
chmod +x "$WORK/limited"
TICKS=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# cpu_over_2s PID: CPU ticks the process used over 2 s.
cpu_over_2s() {
  local a b
  a=$(cpu_ticks "$1")
  sleep 2
  b=$(cpu_ticks "$1")
  echo $((b - a))
}

# 1. No descriptor left at all (0, 1, 2 and the listening socket): every accept fails.
# Not under AddressSanitizer: its runtime checks memory through a pipe of its own,
# which a process without a free descriptor cannot make (it then reports good objects
# as bad), so this case says nothing about the launcher there.
libs=$(ldd "$REAL" 2>/dev/null || true)  # whole: grep -q would cut ldd off (pipefail)
if grep -q libasan <<<"$libs"; then
  echo "skip: no free descriptor at all, under AddressSanitizer (its runtime needs one)"
else
  PORT=$(free_port)
  common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
          KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s KTRAIN_NPROC_PER_NODE=1)
  LAUNCH="$WORK/limited" start_node node0 "${common[@]}" KTRAIN_NODE_RANK=0 KTRAIN_TEST_NOFILE=4 \
    KTRAIN_RDZV_TIMEOUT=8 -- echo ran
  python3 "$PEER" idle "$PORT" 20 "$WORK" &
  idle=$!
  LAUNCH_PIDS+=("$idle")
  wait_for_file "$WORK/sent" 30
  sleep 0.5
  used=$(cpu_over_2s "$(cat "$WORK/node0.pid")")
  echo "node 0 used $used ticks ($TICKS a second) over 2 s with every accept failing"
  [ "$used" -lt $((TICKS / 2)) ] || fail "node 0 spins on a failing accept ($used ticks in 2 s)"
  touch "$WORK/release"
  wait "$idle"
  expect_status node0 76
  expect_termlog node0 "node 1 never arrived"
  n=$(grep -c "Too many open files" "$WORK/node0.err" || true)
  [ "$n" -le 2 ] || fail "node 0 logged the accept failure $n times"
  pass "a failing accept does not spin ($used ticks in 2 s) and is logged once"
fi

# 2. Room for 8 connections, 50 unauthenticated ones queued: node 1 still joins.
rm -f "$WORK/sent" "$WORK/release"
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
        KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s KTRAIN_NPROC_PER_NODE=1
        KTRAIN_RDZV_TIMEOUT=60)
LAUNCH="$WORK/limited" start_node node0 "${common[@]}" KTRAIN_NODE_RANK=0 KTRAIN_TEST_NOFILE=12 \
  -- echo node0-ran
python3 "$PEER" idle "$PORT" 50 "$WORK" &
idle=$!
LAUNCH_PIDS+=("$idle")
wait_for_file "$WORK/sent" 30
sleep 0.5
used=$(cpu_over_2s "$(cat "$WORK/node0.pid")")
echo "node 0 used $used ticks over 2 s with 50 connections for 8 descriptors"
[ "$used" -lt $((TICKS / 2)) ] || fail "node 0 spins when out of descriptors ($used ticks in 2 s)"
start_node node1 "${common[@]}" KTRAIN_NODE_RANK=1 KTRAIN_RDZV_TIMEOUT=30 -- echo node1-ran
expect_status node1 0
expect_status node0 0
touch "$WORK/release"
wait "$idle"
grep -q "^\[rank 0\] node0-ran$" "$WORK/node0.out" || fail "node 0's worker did not run"
pass "out of descriptors, node 0 does not spin ($used ticks in 2 s) and node 1 still joins"
