#!/usr/bin/env python3
"""hello-ddp: a distributed computation that needs no GPU and no third-party package.

Every worker holds a vector; together they compute the element-wise sum with a ring
all-reduce (reduce-scatter, then all-gather) over plain TCP, as NCCL does on GPUs.
Each worker checks the result against the known answer and exits non-zero when it
is wrong, so a broken rendezvous or network shows up as a failed job.

Environment (set by ktrain-launch; the KTRAIN_* fall-backs let it run by hand):
  RANK, WORLD_SIZE        this worker's rank and the number of workers
  MASTER_ADDR, MASTER_PORT where rank 0 collects everyone's address
  KTRAIN_POD_IP           this worker's own address (default 127.0.0.1)
  HELLO_TIMEOUT           seconds to wait for peers (default 120)
  HELLO_LENGTH            elements per worker's chunk (default 4)

Worker r listens on MASTER_PORT + 1 + r on its own address, sends to rank r+1 and
receives from rank r-1.
"""

import json
import os
import socket
import struct
import sys
import threading
import time


def env_int(names, default):
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            return int(value)
    return default


def env_str(names, default):
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            return value
    return default


RANK = env_int(["RANK", "KTRAIN_NODE_RANK", "JOB_COMPLETION_INDEX"], 0)
WORLD = env_int(["WORLD_SIZE", "KTRAIN_NNODES"], 1)
MASTER_ADDR = env_str(["MASTER_ADDR", "KTRAIN_MASTER_ADDR"], "127.0.0.1")
MASTER_PORT = env_int(["MASTER_PORT", "KTRAIN_MASTER_PORT"], 29500)
MY_ADDR = env_str(["KTRAIN_POD_IP"], "127.0.0.1")
TIMEOUT = float(env_str(["HELLO_TIMEOUT"], "120"))
CHUNK = env_int(["HELLO_LENGTH"], 4)
DEADLINE = time.monotonic() + TIMEOUT


# Under ktrain-launch every line already carries "[rank N] "; by hand, say who speaks.
PREFIX = "" if os.environ.get("KTRAIN_RANK") else f"[rank {RANK}/{WORLD}] "


def log(message):
    print(f"{PREFIX}{message}", flush=True)


def fail(message):
    log(f"FAILED: {message}")
    sys.exit(1)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            raise ConnectionError("peer closed the connection")
        data += part
    return data


def send_msg(sock, payload):
    sock.sendall(struct.pack("!I", len(payload)) + payload)


def recv_msg(sock):
    (n,) = struct.unpack("!I", recv_exact(sock, 4))
    return recv_exact(sock, n)


def connect_with_retry(host, port, what):
    """Connects to host:port, retrying while the peer is not listening yet."""
    delay = 0.05
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=5)
            sock.settimeout(max(1.0, DEADLINE - time.monotonic()))
            return sock
        except OSError as e:
            if time.monotonic() + delay > DEADLINE:
                fail(f"could not connect to {what} at {host}:{port}: {e}")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def serve_registry(listener, table, done):
    """Rank 0: collects every worker's (address, port), then sends everyone the table."""
    conns = []
    try:
        while len(conns) < WORLD:
            listener.settimeout(max(0.1, DEADLINE - time.monotonic()))
            conn, _ = listener.accept()
            conn.settimeout(max(1.0, DEADLINE - time.monotonic()))
            entry = json.loads(recv_msg(conn))
            table[int(entry["rank"])] = [entry["addr"], int(entry["port"])]
            conns.append(conn)
        if sorted(table) != list(range(WORLD)):
            raise RuntimeError(f"inconsistent ranks registered: {sorted(table)}")
        reply = json.dumps([table[r] for r in range(WORLD)]).encode()
        for conn in conns:
            send_msg(conn, reply)
    except Exception as e:  # reported by the main thread
        done["error"] = str(e)
    finally:
        for conn in conns:
            conn.close()
        listener.close()


def exchange_addresses(my_port):
    """Registers with rank 0 and returns every rank's (address, port)."""
    registry = None
    if RANK == 0:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("", MASTER_PORT))
        listener.listen(WORLD)
        done = {}
        registry = (threading.Thread(target=serve_registry, args=(listener, {}, done)), done)
        registry[0].start()
    sock = connect_with_retry(MASTER_ADDR, MASTER_PORT, "rank 0 (MASTER_ADDR:MASTER_PORT)")
    send_msg(sock, json.dumps({"rank": RANK, "addr": MY_ADDR, "port": my_port}).encode())
    try:
        table = json.loads(recv_msg(sock))
    except (OSError, ConnectionError) as e:
        fail(f"no address table from rank 0: {e}")
    sock.close()
    if registry is not None:
        registry[0].join()
        if "error" in registry[1]:
            fail(f"collecting addresses: {registry[1]['error']}")
    if len(table) != WORLD:
        fail(f"address table has {len(table)} entries, expected {WORLD}")
    return table


def pack(values):
    return struct.pack(f"!{len(values)}q", *values)


def unpack(data):
    return list(struct.unpack(f"!{len(data) // 8}q", data))


def main():
    if WORLD < 1 or not 0 <= RANK < WORLD:
        fail(f"bad RANK={RANK} / WORLD_SIZE={WORLD}")
    length = CHUNK * WORLD
    # Rank r holds (r + 1) * (i + 1); the sum over ranks is (i + 1) * W(W+1)/2.
    data = [(RANK + 1) * (i + 1) for i in range(length)]
    expected = [(i + 1) * WORLD * (WORLD + 1) // 2 for i in range(length)]
    log(f"start: {length} elements, master {MASTER_ADDR}:{MASTER_PORT}, me {MY_ADDR}")

    my_port = MASTER_PORT + 1 + RANK
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((MY_ADDR, my_port))
    listener.listen(1)
    table = exchange_addresses(my_port)

    if WORLD > 1:
        nxt = (RANK + 1) % WORLD
        to_next = connect_with_retry(table[nxt][0], table[nxt][1], f"rank {nxt}")
        listener.settimeout(max(1.0, DEADLINE - time.monotonic()))
        try:
            from_prev, _ = listener.accept()
        except OSError as e:
            fail(f"rank {(RANK - 1) % WORLD} never connected: {e}")
        from_prev.settimeout(max(1.0, DEADLINE - time.monotonic()))

        def chunk(c):
            return slice(c * CHUNK, (c + 1) * CHUNK)

        def step(phase, s, send_c, recv_c, reduce):
            payload = pack(data[chunk(send_c)])
            sender = threading.Thread(target=send_msg, args=(to_next, payload))
            sender.start()
            try:
                got = unpack(recv_msg(from_prev))
            except (OSError, ConnectionError) as e:
                fail(f"{phase} step {s}: receiving from rank {(RANK - 1) % WORLD}: {e}")
            sender.join()
            if len(got) != CHUNK:
                fail(f"{phase} step {s}: got {len(got)} elements, expected {CHUNK}")
            sl = chunk(recv_c)
            data[sl] = [a + b for a, b in zip(data[sl], got)] if reduce else got
            log(f"{phase} step {s + 1}/{WORLD - 1}: sent chunk {send_c}, received chunk {recv_c}")

        # Reduce-scatter: after W-1 steps rank r owns the full sum of chunk (r + 1) % W.
        for s in range(WORLD - 1):
            step("reduce-scatter", s, (RANK - s) % WORLD, (RANK - s - 1) % WORLD, True)
        # All-gather: pass the finished chunks around the ring.
        for s in range(WORLD - 1):
            step("all-gather", s, (RANK + 1 - s) % WORLD, (RANK - s) % WORLD, False)
        to_next.close()
        from_prev.close()
    listener.close()

    if data != expected:
        bad = [i for i in range(length) if data[i] != expected[i]]
        fail(f"wrong sum at {len(bad)} of {length} elements, e.g. [{bad[0]}] = {data[bad[0]]}, "
             f"expected {expected[bad[0]]}")
    log(f"all-reduce OK: {length} elements summed over {WORLD} workers "
        f"(checksum {sum(data)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
