#!/usr/bin/env bash
# Output lines stay whole under heavy concurrent output: 8 workers each write
# 4000 lines of 1 KiB as fast as they can, in odd-sized writes; every output line
# is "[rank N] <complete line>", none lost or torn. A line over 64 KiB is cut into
# pieces that end in the continuation mark.
source "$(dirname "$0")/launch_lib.bash"
worker='python3 -c "
import os, sys
r = os.environ[\"KTRAIN_RANK\"]
data = \"\".join(\"R%s L%05d %s\n\" % (r, i, \"x\" * 1000) for i in range(4000)).encode()
i = 0
while i < len(data):
    n = 1 + (i * 7919) % 5000
    os.write(1, data[i:i + n]); i += n
if r == \"0\":
    os.write(2, b\"y\" * 150000 + b\"\n\")
"'
start_node n KTRAIN_NPROC_PER_NODE=8 -- sh -c "$worker"
expect_status n 0
python3 - "$WORK/n.out" <<'PY' || fail "output lines are torn, lost or out of order"
import re, sys
counts = {}
long_pieces = []
for line in open(sys.argv[1]):
    m = re.match(r"\[rank (\d)\] R(\d) L(\d{5}) x{1000}\n$", line)
    if m:
        assert m.group(1) == m.group(2), line[:80]
        r, i = int(m.group(1)), int(m.group(3))
        assert counts.get(r, 0) == i, "rank %d line %d after %d" % (r, i, counts.get(r, 0))
        counts[r] = i + 1
        continue
    m = re.match(r"\[rank 0\] (y+)(\\?)\n$", line)
    assert m, "torn line: %r" % line[:100]
    long_pieces.append((len(m.group(1)), m.group(2)))
assert counts == {r: 4000 for r in range(8)}, counts
assert long_pieces == [(65536, "\\"), (65536, "\\"), (150000 - 131072, "")], long_pieces
PY
pass "32000 lines of 8 concurrent workers whole and in order; a 150000-byte line in 3 marked pieces"
