import torch


def step(model, batch):
    with torch.cuda.amp.autocast():
        return model(batch)
