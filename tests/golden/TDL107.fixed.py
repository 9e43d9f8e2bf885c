import csv

import torch
from torch.utils.data import Dataset


class Labelled(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = list(csv.DictReader(f))
        classes = sorted(set(row["label"] for row in self.rows))
        self.class_to_idx = {c: i for i, c in enumerate(classes)}

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        row = self.rows[index]
        return torch.tensor(self.class_to_idx[row["label"]])
