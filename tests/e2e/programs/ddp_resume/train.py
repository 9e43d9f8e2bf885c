"""A 2-process DDP training run on CPU (gloo) that resumes: `--epochs N` trains N epochs,
rank 0 writes a checkpoint at the end of each and every rank loads it on `--resume PATH`.
Each rank draws its own streams (seeded `seed + rank`): dropout masks and input noise.
Each rank writes the sha256 of its final weights and of the values it drew from `--record-from`
on; the parent prints them, one `rank:digest` per rank."""

import argparse
import hashlib
import os
import tempfile
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

# A process group that cannot form (a dead peer) fails after this, never hangs.
GROUP_TIMEOUT = timedelta(seconds=60)


def worker(rank, args):
    dist.init_process_group(
        "gloo", init_method=f"file://{args.store}", rank=rank, world_size=args.world_size, timeout=GROUP_TIMEOUT
    )
    torch.set_num_threads(1)
    torch.manual_seed(args.seed + rank)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    inputs = torch.linspace(-1.0, 1.0, 64 * 8).reshape(64, 8)
    targets = inputs.sum(dim=1, keepdim=True)

    start_epoch = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"]

    drawn = hashlib.sha256()
    for epoch in range(start_epoch, args.epochs):
        model.train()
        for step in range(4):
            batch = inputs[rank * 32 + step * 8 : rank * 32 + step * 8 + 8]
            noise = torch.randn(batch.shape) * 0.01
            loss = ((model(batch + noise) - targets[rank * 32 + step * 8 : rank * 32 + step * 8 + 8]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if epoch >= args.record_from:
                drawn.update(noise.numpy().tobytes())
        if rank == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1}, args.checkpoint)
        dist.barrier()

    weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:16]
    Path(f"out.rank{rank}").write_text(f"{rank}:{weights}:{drawn.hexdigest()[:16]}")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    parser.add_argument("--record-from", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    args.store = os.path.join(tempfile.mkdtemp(), "store")
    mp.spawn(worker, args=(args,), nprocs=args.world_size)
    print(" ".join(Path(f"out.rank{rank}").read_text() for rank in range(args.world_size)))


if __name__ == "__main__":
    main()
