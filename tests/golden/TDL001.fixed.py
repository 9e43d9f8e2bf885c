"""Train a small classifier."""

import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    model = nn.Linear(8, 2)
    for _ in range(args.epochs):
        loss = model(torch.randn(4, 8)).sum()
        loss.backward()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
