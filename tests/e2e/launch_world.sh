#!/usr/bin/env bash
# 8 nodes x 4 processes rendezvous on loopback, started in random order and some
# late; every worker reports its environment; ranks 0..31 are unique and consistent.
source "$(dirname "$0")/launch_lib.bash"
PORT=$(free_port)
MPORT=$(free_port)
worker='echo "W rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE node=$GROUP_RANK lws=$LOCAL_WORLD_SIZE \
master=$MASTER_ADDR:$MASTER_PORT k=$KTRAIN_RANK/$KTRAIN_LOCAL_RANK/$KTRAIN_WORLD_SIZE/$KTRAIN_NODE_RANK/$KTRAIN_NNODES \
ep=$KTRAIN_WORKER_ENDPOINT run=$TORCHELASTIC_RUN_ID"'
for n in $(shuf -e 0 1 2 3 4 5 6 7); do
  # A late node: up to 1.5 s after the others.
  [ $((RANDOM % 3)) = 0 ] && sleep "0.$((RANDOM % 15))"
  start_node "node$n" KTRAIN_RUN=world-1 KTRAIN_NNODES=8 KTRAIN_NODE_RANK="$n" \
    KTRAIN_NPROC_PER_NODE=4 KTRAIN_MASTER_ADDR=localhost KTRAIN_RDZV_PORT="$PORT" \
    KTRAIN_MASTER_PORT="$MPORT" KTRAIN_RDZV_SECRET=e2e-secret KTRAIN_FRAMEWORK=pytorch \
    KTRAIN_RDZV_TIMEOUT=120 KTRAIN_POD_IP=127.0.0.1 -- sh -c "$worker"
done
for n in 0 1 2 3 4 5 6 7; do expect_status "node$n" 0; done
pass "8 launchers exited 0"

cat "$WORK"/node*.out >"$WORK/all"
[ "$(grep -c '^\[rank [0-9]*\] W ' "$WORK/all")" = 32 ] || fail "expected 32 worker lines"
python3 - "$WORK/all" "$MPORT" <<'PY' || fail "worker environments are inconsistent"
import re, sys
port = int(sys.argv[2])
seen = set()
for line in open(sys.argv[1]):
    m = re.match(r"\[rank (\d+)\] W rank=(\d+) local=(\d+) world=(\d+) node=(\d+) lws=(\d+) "
                 r"master=(\S+):(\d+) k=(\d+)/(\d+)/(\d+)/(\d+)/(\d+) ep=(\S+) run=(\S+)$", line)
    if not m:
        continue
    v = m.groups()
    prefix, rank, local, world, node, lws = map(int, v[:6])
    assert prefix == rank, line
    assert world == 32 and lws == 4, line
    assert local == rank % 4 and node == rank // 4, line
    assert v[6] == "127.0.0.1" and int(v[7]) == port, line
    assert tuple(map(int, v[8:13])) == (rank, local, 32, node, 8), line
    assert v[13] == "127.0.0.1:%d" % (port + 1 + rank), line
    assert v[14] == "world-1", line
    seen.add(rank)
assert seen == set(range(32)), sorted(seen)
PY
pass "ranks 0..31 unique, consistent with LOCAL_RANK, GROUP_RANK, KTRAIN_* and endpoints"
