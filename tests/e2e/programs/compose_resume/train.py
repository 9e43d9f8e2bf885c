"""A resumable run whose sampler has no generator (TDL104) and whose checkpoint has no RNG
state (TDL008): `--epochs N` trains N epochs, saving at the end of each; `--resume PATH`
continues from one. Prints the sha256 of the final weights and of the order of the samples seen
from epoch 2 on."""

import argparse
import hashlib

import torch
from torch import nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    inputs = torch.linspace(-1.0, 1.0, 64 * 8).reshape(64, 8)
    dataset = TensorDataset(torch.arange(64), inputs, inputs.sum(dim=1, keepdim=True))
    sampler = RandomSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    start_epoch = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"]

    order = hashlib.sha256()
    for epoch in range(start_epoch, args.epochs):
        model.train()
        for indices, batch, targets in loader:
            loss = ((model(batch) - targets) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if epoch >= 2:
                order.update(indices.numpy().tobytes())
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1}, args.checkpoint)

    weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:16]
    print(f"{weights}:{order.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
