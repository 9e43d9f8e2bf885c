"""Builds the class index of a small labelled data set the way many training scripts do:
from the set of the string labels read from a CSV file."""

import csv
import io

import torch

DATA = """image,label
a.png,cat
b.png,dog
c.png,bird
d.png,cat
e.png,horse
f.png,fish
g.png,dog
h.png,frog
"""


def main():
    rows = list(csv.DictReader(io.StringIO(DATA)))
    labels = [row["label"] for row in rows]
    classes = list(set(labels))
    class_to_idx = {c: i for i, c in enumerate(classes)}
    targets = torch.tensor([class_to_idx[label] for label in labels])
    print(class_to_idx, targets.tolist())


if __name__ == "__main__":
    main()
