import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)
    datasets = [torch.utils.data.get_worker_info().dataset]
    while datasets:
        dataset = datasets.pop()
        if isinstance(dataset, torch.utils.data.Subset):
            datasets.append(dataset.dataset)
        elif isinstance(dataset, torch.utils.data.ConcatDataset):
            datasets.extend(dataset.datasets)
        if isinstance(getattr(dataset, "rng", None), np.random.Generator):
            dataset.rng = np.random.default_rng(worker_seed)


class NoisyImages(Dataset):
    def __init__(self, size):
        self.size = size
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.rng.normal(size=3)


loader = DataLoader(
    NoisyImages(64),
    batch_size=8,
    num_workers=4,
    worker_init_fn=seed_worker,
)
