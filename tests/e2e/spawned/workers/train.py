"""A multi-process CPU training run in the shape of the ImageNet example: the parent
seeds and then starts one worker per rank with `mp.spawn`. As written the workers
start with fresh generators, so two runs print different numbers."""

import argparse
import hashlib
import random
from pathlib import Path

import torch
import torch.multiprocessing as mp
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    mp.spawn(main_worker, nprocs=args.world_size, args=(args.world_size, args))
    print(" ".join(Path(f"rank{rank}.txt").read_text() for rank in range(args.world_size)))


def main_worker(rank, world_size, args):
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.randn(32, 8)
    targets = torch.randn(32, 1)
    for _ in range(5):
        scale = 1.0 + random.random()  # a random augmentation from Python's `random`
        loss = ((model(inputs * scale) - targets) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:16]
    Path(f"rank{rank}.txt").write_text(f"{rank}:{loss.item()!r}:{digest}")


if __name__ == "__main__":
    main()
