#!/usr/bin/env python3
"""ResNet-50 with DistributedDataParallel: one process per GPU, started by ktrain-launch.

ktrain-launch sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, so
init_process_group's env:// default works as under torchrun. Checkpoints are
written by rank 0 at the end of each epoch (to a .tmp name, then renamed into
place); a restarted job resumes from the one ktrain-launch names in
KTRAIN_CHECKPOINT_LATEST. When the pods are stopped (preemption, ktrain stop, a
failed peer), the launcher makes KTRAIN_STOP_FILE and then sends SIGTERM: each rank
stops at the end of its step, rank 0 saves (DDP keeps every replica the same), and
they exit 0 within train.gracePeriod. Touching KTRAIN_HEARTBEAT_FILE each step tells
the hang watchdog (train.watchdog) that the rank progresses.
"""

import argparse
import os
import pathlib
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/data/imagenet")
    p.add_argument("--checkpoint-dir", default=os.environ.get("KTRAIN_CHECKPOINT_DIR", "/ckpt"))
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--batch-size", type=int, default=256, help="per GPU")
    p.add_argument("--lr", type=float, default=0.1, help="for a global batch of 256; scaled")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--synthetic", action="store_true", help="random images, no data set")
    return p.parse_args()


def datasets(args):
    if args.synthetic or not os.path.isdir(os.path.join(args.data, "train")):
        size = 256 * 50
        train = torchvision.datasets.FakeData(size, (3, 224, 224), 1000, T.ToTensor())
        return train, None
    normalize = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train = torchvision.datasets.ImageFolder(
        os.path.join(args.data, "train"),
        T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), normalize]))
    val = torchvision.datasets.ImageFolder(
        os.path.join(args.data, "val"),
        T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), normalize]))
    return train, val


def main():
    args = parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
    model = DDP(model, device_ids=[local_rank])
    lr = args.lr * args.batch_size * world / 256
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.cuda.amp.GradScaler()
    criterion = nn.CrossEntropyLoss().to(device)

    start_epoch = 0
    ckpt_path = os.path.join(args.checkpoint_dir, "last.pt")
    resume = os.environ.get("KTRAIN_CHECKPOINT_LATEST", ckpt_path)
    if os.path.isfile(resume):
        state = torch.load(resume, map_location=device)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_epoch = state["epoch"] + 1
        if rank == 0:
            print(f"resuming from epoch {start_epoch} ({resume})", flush=True)

    def save(epoch):
        if rank == 0:
            os.makedirs(args.checkpoint_dir, exist_ok=True)
            tmp = ckpt_path + ".tmp"
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epoch}, tmp)
            os.replace(tmp, ckpt_path)
        dist.barrier()

    # SIGTERM (the launcher's, after it made KTRAIN_STOP_FILE) ends the run at the end
    # of the step instead of in the middle of it.
    stop_file = os.environ.get("KTRAIN_STOP_FILE", "")
    signal.signal(signal.SIGTERM, lambda *_: None)
    heartbeat = pathlib.Path(os.environ["KTRAIN_HEARTBEAT_FILE"]) \
        if "KTRAIN_HEARTBEAT_FILE" in os.environ else None

    def stopping():
        return bool(stop_file) and os.path.exists(stop_file)

    def stop(epoch, step):
        # The epoch is not done: the checkpoint holds what it learned so far, and the
        # epoch runs again from its start. No collective: the peers may be gone.
        if rank == 0:
            os.makedirs(args.checkpoint_dir, exist_ok=True)
            tmp = ckpt_path + ".tmp"
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epoch - 1}, tmp)
            os.replace(tmp, ckpt_path)
            print(f"stopped at epoch {epoch} step {step}: saved {ckpt_path}", flush=True)
        sys.exit(0)

    train_set, val_set = datasets(args)
    sampler = DistributedSampler(train_set, shuffle=True)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, pin_memory=True, drop_last=True,
                        persistent_workers=args.workers > 0)

    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        started = time.time()
        step = 0
        batches = iter(loader)
        while True:
            try:
                images, labels = next(batches)
            except StopIteration:
                break
            except RuntimeError:
                if stopping():  # the SIGTERM ended the loader's worker processes too
                    stop(epoch, step)
                raise
            images = images.to(device, non_blocking=True, memory_format=torch.channels_last)
            labels = labels.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = criterion(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            if rank == 0 and step % 100 == 0:
                print(f"epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}", flush=True)
            if heartbeat is not None:
                heartbeat.touch()
            if stopping():
                stop(epoch, step)
            step += 1
        scheduler.step()

        if val_set is not None:
            correct = torch.zeros(2, device=device)
            model.eval()
            val_loader = DataLoader(val_set, batch_size=args.batch_size,
                                    sampler=DistributedSampler(val_set, shuffle=False),
                                    num_workers=args.workers)
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                for images, labels in val_loader:
                    out = model(images.to(device, memory_format=torch.channels_last))
                    correct[0] += (out.argmax(1) == labels.to(device)).sum()
                    correct[1] += labels.numel()
            dist.all_reduce(correct)
            if rank == 0:
                print(f"epoch {epoch} top-1 {100 * correct[0] / correct[1]:.2f}%", flush=True)

        save(epoch)
        if rank == 0:
            print(f"epoch {epoch} done in {time.time() - started:.0f}s", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
