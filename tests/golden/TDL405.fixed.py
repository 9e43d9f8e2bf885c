import torch


def step(model, batch):
    with torch.amp.autocast("cuda"):
        return model(batch)
