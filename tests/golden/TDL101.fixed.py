import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.arange(100, dtype=torch.float32).unsqueeze(1))
train_loader = DataLoader(
    dataset,
    batch_size=16,
    shuffle=True,
    drop_last=True,
    generator=torch.Generator().manual_seed(torch.initial_seed()),
)
