import numpy as np
import torch


def to_tensor(image: np.ndarray):
    return torch.as_tensor(image)
