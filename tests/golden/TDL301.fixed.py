import torch

torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
