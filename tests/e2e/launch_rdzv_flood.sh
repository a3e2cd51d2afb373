#!/usr/bin/env bash
# 300 connections to node 0's rendezvous port that never authenticate (headers
# that claim a 4 MiB or a 4 GiB frame followed by 384 KiB, or nothing at all) do
# not grow node 0's memory past a bound; node 0 closes all of them within its
# handshake time (10 s), logs a bounded number of lines about them, and a real
# node 1 still joins and the job completes.
source "$(dirname "$0")/launch_lib.bash"
PEER="$(dirname "$0")/../fixtures/rdzv/rdzv_peer.py"
PORT=$(free_port)
common=(KTRAIN_NNODES=2 KTRAIN_MASTER_ADDR=127.0.0.1 KTRAIN_RDZV_PORT="$PORT"
        KTRAIN_MASTER_PORT="$(free_port)" KTRAIN_RDZV_SECRET=s3cret KTRAIN_NPROC_PER_NODE=1
        KTRAIN_RDZV_TIMEOUT=120)
start_node node0 "${common[@]}" KTRAIN_NODE_RANK=0 -- echo node0-ran
pid0=$(cat "$WORK/node0.pid")
python3 "$PEER" flood "$PORT" "$WORK" >"$WORK/flood.out" 2>&1 &
flood=$!
LAUNCH_PIDS+=("$flood")
wait_for_file "$WORK/sent" 60
sleep 1
rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid0/status")
echo "node 0 VmRSS with 300 hostile connections: $rss_kb kB"
[ "$rss_kb" -lt 65536 ] || fail "node 0 holds $rss_kb kB (bound: 64 MiB)"
pass "node 0 stays under 64 MiB ($rss_kb kB)"
rc=0
wait "$flood" || rc=$?
cat "$WORK/flood.out"
[ "$rc" = 0 ] || fail "node 0 kept unauthenticated connections open"
pass "every unauthenticated connection closed ($(cat "$WORK/flood.out"))"
lines=$(wc -l <"$WORK/node0.err")
[ "$lines" -le 40 ] || { head -50 "$WORK/node0.err"; fail "node 0 logged $lines lines about them"; }
start_node node1 "${common[@]}" KTRAIN_NODE_RANK=1 -- echo node1-ran
expect_status node1 0
expect_status node0 0
grep -q "^\[rank 0\] node0-ran$" "$WORK/node0.out" || fail "node 0's worker did not run"
grep -q "^\[rank 1\] node1-ran$" "$WORK/node1.out" || fail "node 1's worker did not run"
pass "node 1 joined after the flood and the job completed"
