import torch
from torch.utils.data import DataLoader


def loaders(dataset, generator):
    loader = DataLoader(dataset, batch_size=32, num_workers=4, generator=generator)
    for batch in loader:
        batch.to("cuda")
