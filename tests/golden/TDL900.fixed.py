"""Training entry point whose suppressions outlived the code they were written for."""

import argparse

import torch
from torch import nn

torch.backends.cudnn.benchmark = False


def build(width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(width, width), nn.ReLU())  # noqa: E501


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build(args.width)
    print(model(torch.ones(2, args.width)).sum().item())


if __name__ == "__main__":
    main()
