"""A small resumable training run: `--epochs N` trains N epochs, saving a
checkpoint at the end of each; `--resume PATH` continues from one. Prints the
sha256 of the final weights. The checkpoint is a `dict(...)` saved through
`utils.save_on_master` (another module's save function)."""

import argparse
import hashlib
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import utils


def make_data():
    inputs = torch.randn(64, 8)
    targets = (inputs.sum(dim=1, keepdim=True) > 0).float()
    return TensorDataset(inputs, targets)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()

    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)

    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(make_data(), batch_size=8, shuffle=True, generator=g)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    start_epoch = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"]

    for epoch in range(start_epoch, args.epochs):
        model.train()
        for inputs, targets in loader:
            # Augmentation noise from Python's `random` and NumPy's global RNG.
            scale = random.uniform(0.9, 1.1)
            noise = torch.from_numpy(np.random.normal(0.0, 0.01, size=inputs.shape).astype(np.float32))
            outputs = model(inputs * scale + noise)
            loss = nn.functional.binary_cross_entropy_with_logits(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        state = dict(
            model=model.state_dict(),
            optimizer=optimizer.state_dict(),
            epoch=epoch + 1,
        )
        utils.save_on_master(state, args.checkpoint)

    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(tensor.numpy().tobytes())
    print(digest.hexdigest())


if __name__ == "__main__":
    main()
