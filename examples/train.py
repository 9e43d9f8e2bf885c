"""Train the toy regressor: run `python examples/train.py`."""

import torch
from torch.backends import cudnn
from torch.utils.data import DataLoader

from toyproject.data import NoisyPoints
from toyproject.model import Regressor


def main():
    cudnn.benchmark = True
    torch.use_deterministic_algorithms(True, warn_only=True)

    model = Regressor()
    loader = DataLoader(NoisyPoints(), batch_size=32, shuffle=True, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(f"final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
