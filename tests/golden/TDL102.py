import numpy as np
from torch.utils.data import DataLoader, Dataset


class NoisyImages(Dataset):
    def __init__(self, size):
        self.size = size
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.rng.normal(size=3)


loader = DataLoader(NoisyImages(64), batch_size=8, num_workers=4)
