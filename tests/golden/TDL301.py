import torch

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
