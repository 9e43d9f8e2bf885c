"""Data with augmentation from the global `random` and NumPy generators."""
import random

import numpy as np
import torch
from torch.utils.data import Dataset


class NoisyPoints(Dataset):
    def __init__(self, points: torch.Tensor, labels: torch.Tensor) -> None:
        self.points = points
        self.labels = labels

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, index: int):
        point = self.points[index].clone()
        if random.random() < 0.5:  # random flip
            point = -point
        point += torch.from_numpy(np.random.normal(0.0, 0.05, size=point.shape).astype(np.float32))
        return point, self.labels[index]
