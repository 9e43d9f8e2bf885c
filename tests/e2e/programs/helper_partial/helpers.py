"""A seeding helper that only covers torch."""
import torch


def set_seed(seed: int) -> None:
    torch.manual_seed(seed)
