"""Trains a small classifier; `--resume` continues from the last checkpoint."""

import argparse
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


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
