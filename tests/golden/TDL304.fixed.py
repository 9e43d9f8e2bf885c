import torch

torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
