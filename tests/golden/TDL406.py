import torch
from torch import nn


def main():
    model = nn.Conv2d(3, 8, 3).cuda()
    return model(torch.randn(8, 3, 32, 32, device="cuda"))


if __name__ == "__main__":
    main()
