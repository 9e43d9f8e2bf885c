"""A research script: everything at module level, nothing seeded.

Random: the synthetic data (torch.randn), the initial weights, dropout and
the shuffling DataLoader all draw from torch's unseeded global generator.
"""
import hashlib

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

features = torch.randn(256, 8)
targets = (features.sum(dim=1, keepdim=True) > 0).float()
loader = DataLoader(TensorDataset(features, targets), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.BCEWithLogitsLoss()
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
print(f"{loss.item()!r} {hashlib.sha256(weights).hexdigest()}")
