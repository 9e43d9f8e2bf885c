"""Two spawned ranks (gloo on CPU) that never seed torch build a model and split the data with
`random_split` and no generator. Prints each rank's training split, `rank:i,j,...` per rank."""

import argparse
import os
import tempfile
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import random_split

# A process group that cannot form fails after this, never hangs.
GROUP_TIMEOUT = timedelta(seconds=60)
WORLD_SIZE = 2


def worker(rank, args):
    dist.init_process_group("gloo", init_method=f"file://{args.store}", rank=rank, world_size=WORLD_SIZE, timeout=GROUP_TIMEOUT)
    model = nn.Linear(4, 1)
    train, val = random_split(range(20), [0.5, 0.5])
    Path(f"split.rank{rank}").write_text(",".join(str(index) for index in train))
    print(rank, model.weight.sum().item())
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    args.store = os.path.join(tempfile.mkdtemp(), "store")
    mp.spawn(worker, args=(args,), nprocs=WORLD_SIZE)
    print(" ".join(f"{rank}:" + Path(f"split.rank{rank}").read_text() for rank in range(WORLD_SIZE)))


if __name__ == "__main__":
    main()
