"""A dataset that owns its random generators (a common pattern for augmentation)."""
import random

import numpy as np
import torch
from torch.utils.data import Dataset


class JitteredSignals(Dataset):
    def __init__(self, count: int) -> None:
        self.rng = np.random.default_rng()
        self.coin = random.Random()
        phases = torch.linspace(0.0, 6.28, count)
        self.signals = torch.stack([torch.sin(phases * k) for k in range(1, 9)], dim=1)
        self.labels = (self.signals.sum(dim=1, keepdim=True) > 0).float()

    def __len__(self) -> int:
        return len(self.signals)

    def __getitem__(self, index: int):
        signal = self.signals[index] + torch.from_numpy(self.rng.normal(0.0, 0.1, 8).astype(np.float32))
        if self.coin.random() < 0.3:
            signal = signal.flip(0)
        return signal, self.labels[index]
