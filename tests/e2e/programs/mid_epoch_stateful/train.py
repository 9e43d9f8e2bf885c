"""The fixed form of programs/mid_epoch (TDL010's documentation): torchdata's
`StatefulDataLoader`, its `state_dict()` saved in the checkpoint and loaded back on resume, so
the resumed run goes on where the interrupted one stopped. Prints the dataset indices the run
trained on, in order."""

import argparse

import torch
from torch import nn
from torch.utils.data import TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

BATCHES_PER_EPOCH = 8


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--stop-at", type=int, default=None)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()

    torch.manual_seed(0)
    # The order comes from torch's generator, whose state the checkpoint carries (TDL008): the
    # loader's state restores the rest of the epoch, torch's state the epochs after it.
    loader = StatefulDataLoader(TensorDataset(torch.arange(32)), batch_size=4, shuffle=True)
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    step = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        loader.load_state_dict(checkpoint["loader"])
        torch.set_rng_state(checkpoint["rng"])
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
                torch.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "loader": loader.state_dict(),
                        "rng": torch.get_rng_state(),
                        "step": step,
                    },
                    args.checkpoint,
                )
            if step == args.stop_at:
                print(",".join(map(str, seen)))
                return
    print(",".join(map(str, seen)))


if __name__ == "__main__":
    main()
