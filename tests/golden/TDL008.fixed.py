"""Trains a small classifier; `--resume` continues from the last checkpoint."""

import argparse
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def rng_state_dict(*generators):
    """The random number generators' states, in types that `torch.load` reads
    with `weights_only=True` (NumPy's key array as a tensor)."""
    _, keys, pos, has_gauss, gauss = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "random": random.getstate(),
        "numpy": (torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss),
        "generators": [generator.get_state() for generator in generators],
    }


def load_rng_state_dict(state, *generators):
    """Restores the states that `rng_state_dict` saved."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(state["random"])
    keys, pos, has_gauss, gauss = state["numpy"]
    keys = keys.cpu().numpy().astype(np.uint32)
    np.random.set_state(("MT19937", keys, pos, has_gauss, gauss))
    for generator, generator_state in zip(generators, state["generators"]):
        generator.set_state(generator_state.cpu())


def build_model(width=32):
    return nn.Sequential(nn.Linear(16, width), nn.Dropout(0.2), nn.Linear(width, 2))


def train(args):
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    generator = torch.Generator()
    generator.manual_seed(args.seed)
    dataset = TensorDataset(torch.randn(256, 16), torch.randint(0, 2, (256,)))
    loader = DataLoader(dataset, batch_size=32, shuffle=True, generator=generator)
    model = build_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start_epoch = 0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        if "rng_state" in checkpoint:
            load_rng_state_dict(checkpoint["rng_state"], generator)
        start_epoch = checkpoint["epoch"] + 1
    for epoch in range(start_epoch, args.epochs):
        for inputs, labels in loader:
            if random.random() < 0.5:
                inputs = inputs.flip(1)
            inputs = inputs + torch.from_numpy(np.random.normal(0, 0.1, (16,))).float()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "epoch": epoch,
                "rng_state": rng_state_dict(generator),
            },
            args.checkpoint,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--checkpoint", default="last.pt")
    parser.add_argument("--resume")
    train(parser.parse_args())
