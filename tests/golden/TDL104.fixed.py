import torch
from torch.utils.data import TensorDataset, random_split

dataset = TensorDataset(torch.arange(10))
train_set, val_set = random_split(
    dataset,
    [8, 2],
    generator=torch.Generator().manual_seed(torch.initial_seed()),
)
