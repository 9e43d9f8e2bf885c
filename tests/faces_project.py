"""A small project whose findings need the rest of the project: `train.py` seeds through
`utils/seeding.py` (torch and `random`, not NumPy) and loads `data.py`'s dataset, whose RNG
object every worker copies; the notebook `explore.ipynb` does the same in its cells, its
dataset in a cell of its own, behind markdown cells that count in the cell numbering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Tuple

SEEDING = '''\
"""Seeds torch and Python's random module (not NumPy's)."""
import random

import torch


def fix_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)
'''

DATA = """\
import numpy as np
from torch.utils.data import Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 8

    def __getitem__(self, index):
        return self.rng.random()
"""

TRAIN = """\
import numpy as np
import torch
from torch.utils.data import DataLoader

from data import Noisy
from utils.seeding import fix_seed

fix_seed(0)
torch.backends.cudnn.benchmark = True
noise = np.random.rand(2)
loader = DataLoader(Noisy(), batch_size=2, shuffle=True, num_workers=2)
for batch in loader:
    print(batch, noise)  # noqa: TDL101
"""

# (language, text) of each cell; "markdown" is a markup cell.
NOTEBOOK_CELLS: List[Tuple[str, str]] = [
    ("markdown", "# Exploring the noisy data\n\nThe dataset is defined below."),
    (
        "python",
        "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "from utils.seeding import fix_seed",
    ),
    (
        "python",
        "class Local(Dataset):\n    def __init__(self):\n        self.rng = np.random.RandomState(1)\n\n"
        "    def __len__(self):\n        return 4\n\n    def __getitem__(self, index):\n        return self.rng.rand()",
    ),
    ("markdown", "Workers:"),
    ("python", "fix_seed(0)\nloader = DataLoader(Local(), shuffle=True, num_workers=2)\nprint(np.random.rand())"),
]


def notebook_json(cells: List[Tuple[str, str]]) -> str:
    entries = []
    for language, text in cells:
        entry = {"cell_type": "markdown" if language == "markdown" else "code", "metadata": {}, "source": text}
        if language != "markdown":
            entry.update(outputs=[], execution_count=None)
        entries.append(entry)
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    return json.dumps({"cells": entries, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def seed_faces_project(directory: Path) -> Path:
    """Write the project under `directory/project`; its root."""
    root = directory / "project"
    (root / "utils").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "faces"\nversion = "0"\n', encoding="utf-8")
    (root / "utils" / "__init__.py").write_text("", encoding="utf-8")
    (root / "utils" / "seeding.py").write_text(SEEDING, encoding="utf-8")
    (root / "data.py").write_text(DATA, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "explore.ipynb").write_text(notebook_json(NOTEBOOK_CELLS), encoding="utf-8")
    return root
