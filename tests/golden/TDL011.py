"""Length-bucketed batches for a distributed language-model run."""

import argparse
import random

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Sampler


class BucketBatchSampler(Sampler):
    """Batches of similar lengths, each rank taking every world-size-th batch."""

    def __init__(self, lengths, batch_size):
        self.lengths = lengths
        self.batch_size = batch_size

    def __iter__(self):
        order = sorted(range(len(self.lengths)), key=self.lengths.__getitem__)
        batches = [
            order[i : i + self.batch_size]
            for i in range(0, len(order), self.batch_size)
        ]
        random.shuffle(batches)
        yield from batches[dist.get_rank() :: dist.get_world_size()]

    def __len__(self):
        return len(self.lengths) // self.batch_size // dist.get_world_size()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    local_rank = dist.get_rank() % torch.cuda.device_count()
    torch.cuda.set_device(local_rank)
    random.seed(args.seed + dist.get_rank())
    torch.manual_seed(args.seed + dist.get_rank())
    dataset = [torch.ones(n) for n in range(1, 1025)]
    sampler = BucketBatchSampler([len(x) for x in dataset], batch_size=16)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=list)
    for batch in loader:
        print(len(batch))


if __name__ == "__main__":
    main()
