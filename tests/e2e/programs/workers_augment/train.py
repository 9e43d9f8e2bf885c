"""Training with a shuffling two-worker DataLoader; nothing is seeded.

Random: the train/validation split (`random.shuffle`), label noise
(`np.random.rand`), the weights, and the loader's order and worker seeds.
"""
import hashlib
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from data import NoisyPoints


def make_data(count: int):
    grid = torch.linspace(-1.0, 1.0, count).unsqueeze(1)
    points = torch.cat([grid, grid.flip(0) * 0.5], dim=1)
    labels = (points[:, 0] * points[:, 1] > 0).float().unsqueeze(1)
    flip = torch.from_numpy(np.random.rand(count) < 0.05).unsqueeze(1)
    labels = torch.where(flip, 1.0 - labels, labels)
    order = list(range(count))
    random.shuffle(order)
    return points[order[:240]], labels[order[:240]]


def main() -> None:
    points, labels = make_data(300)
    loader = DataLoader(NoisyPoints(points, labels), batch_size=24, shuffle=True, num_workers=2, persistent_workers=True)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    print(f"{loss.item()!r} {hashlib.sha256(weights).hexdigest()}")


if __name__ == "__main__":
    main()
