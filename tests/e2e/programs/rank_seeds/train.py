"""Two ranks (spawned, gloo on CPU) that each draw their own seed from an unseeded `random` and
hand it to a `DistributedSampler`: the ranks' permutations differ, so their shares of one epoch
overlap. Prints each rank's indices of one epoch, `rank:i,j,...` per rank."""

import os
import random
import tempfile
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DistributedSampler

# A process group that cannot form fails after this, never hangs.
GROUP_TIMEOUT = timedelta(seconds=60)
WORLD_SIZE = 2


def worker(rank, store):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD_SIZE, timeout=GROUP_TIMEOUT)
    seed = random.randint(0, 2**31 - 1)
    sampler = DistributedSampler(range(20), num_replicas=WORLD_SIZE, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(0)
    Path(f"indices.rank{rank}").write_text(",".join(str(index) for index in sampler))
    dist.barrier()
    dist.destroy_process_group()


def main():
    store = os.path.join(tempfile.mkdtemp(), "store")
    mp.spawn(worker, args=(store,), nprocs=WORLD_SIZE)
    print(" ".join(f"{rank}:" + Path(f"indices.rank{rank}").read_text() for rank in range(WORLD_SIZE)))


if __name__ == "__main__":
    main()
