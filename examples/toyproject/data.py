"""A toy dataset whose augmentation draws from its own RNG object."""

import numpy as np
import torch
from torch.utils.data import Dataset


class NoisyPoints(Dataset):
    def __init__(self, size: int = 256):
        self.points = torch.linspace(-1.0, 1.0, size).unsqueeze(1)
        self.rng = np.random.default_rng()  # copied identically into every worker

    def __len__(self):
        return len(self.points)

    def __getitem__(self, index):
        noise = float(self.rng.normal(scale=0.05))
        x = self.points[index] + noise
        return x, 3.0 * x + 1.0
