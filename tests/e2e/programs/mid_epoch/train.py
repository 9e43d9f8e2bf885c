"""A run that checkpoints every 3 steps inside the epoch and resumes from the last checkpoint:
`--stop-at S` stops after step S (an interruption), `--resume PATH` goes on from a checkpoint.
After the resume the loop iterates the loader from the epoch's first batch. Prints the dataset
indices the run trained on, in order."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCHES_PER_EPOCH = 8


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--stop-at", type=int, default=None)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()

    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    loader = DataLoader(TensorDataset(torch.arange(32)), batch_size=4, shuffle=True, generator=generator)
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    step = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        step = checkpoint["step"]

    seen = []
    for epoch in range(step // BATCHES_PER_EPOCH, args.epochs):
        for (indices,) in loader:
            loss = model(indices.float().unsqueeze(1)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen.extend(indices.tolist())
            step += 1
            if step % 3 == 0:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, args.checkpoint)
            if step == args.stop_at:
                print(",".join(map(str, seen)))
                return
    print(",".join(map(str, seen)))


if __name__ == "__main__":
    main()
