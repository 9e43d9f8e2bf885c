import os

from torch.utils.data import Dataset


class Frames(Dataset):
    def __init__(self, root):
        self.files = [os.path.join(root, name) for name in sorted(os.listdir(root))]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        return self.files[index]
