#!/usr/bin/env python3
"""Fits y = 3x - 2 with mini-batch SGD; the learning rate and batch size come from the
command line (or KTRAIN_PARAM_LR / KTRAIN_PARAM_BATCH) so that a sweep compares them."""

import argparse
import os
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=float(os.environ.get("KTRAIN_PARAM_LR", "0.1")))
    p.add_argument("--batch", type=int, default=int(os.environ.get("KTRAIN_PARAM_BATCH", "32")))
    p.add_argument("--epochs", type=int, default=20)
    args = p.parse_args()

    rng = random.Random(0)
    data = [(x, 3 * x - 2 + rng.gauss(0, 0.1)) for x in (rng.uniform(-1, 1) for _ in range(4096))]
    w = b = 0.0
    for epoch in range(args.epochs):
        rng.shuffle(data)
        for i in range(0, len(data), args.batch):
            batch = data[i:i + args.batch]
            gw = sum(2 * (w * x + b - y) * x for x, y in batch) / len(batch)
            gb = sum(2 * (w * x + b - y) for x, y in batch) / len(batch)
            w -= args.lr * gw
            b -= args.lr * gb
        loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
        print(f"lr={args.lr} batch={args.batch} epoch={epoch} loss={loss:.5f}", flush=True)
    print(f"final: lr={args.lr} batch={args.batch} w={w:.3f} b={b:.3f} loss={loss:.5f}", flush=True)


if __name__ == "__main__":
    main()
