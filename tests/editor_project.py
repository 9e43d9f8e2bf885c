"""A small project for the real-editor tests: `train.py` is seeded through a helper
module (`utils/seeding.py` seeds torch and `random`, not NumPy), so what an
editor shows for it depends on the project phase seeing the other file.

The expected diagnostics are what `torchdet-lint check train.py` reports at the
project root, as editors show them: 0-based lines, character ranges (the text is
ASCII, so UTF-16, UTF-8 and code points agree), a point finding widened to the
rest of its line.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple

HAZARD = "torch.backends.cudnn.benchmark = True"

TRAIN = f"""\
import numpy as np
import torch

from utils.seeding import fix_seed

fix_seed(0)
{HAZARD}
noise = np.random.rand(2)
loader = torch.utils.data.DataLoader(range(8), batch_size=2, shuffle=True)
for batch in loader:
    print(batch, noise)
"""

SEEDING = '''\
"""Seeds torch and Python's random module (not NumPy's: train.py forgets it)."""
import random

import torch


def fix_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)
'''

# (code, start line, start character, end line, end character), 0-based.
Range = Tuple[str, int, int, int, int]
EXPECTED: List[Range] = [
    ("TDL003", 0, 0, 0, len("import numpy as np")),  # a project finding: NumPy is never seeded
    ("TDL301", 6, 0, 6, len(HAZARD)),
    ("TDL101", 8, 9, 8, len("loader = torch.utils.data.DataLoader(range(8), batch_size=2, shuffle=True)")),
]
# The TDL301 quick fix, applied and saved.
FIXED = TRAIN.replace(HAZARD, HAZARD.replace("True", "False"))
# A line typed at the end of the fixed file, and what it brings.
NEW_LINE = "parts = torch.utils.data.random_split(range(8), [4, 4])"
NEW_PROBLEM: Range = ("TDL104", 11, 8, 11, len(NEW_LINE))


@dataclass
class Project:
    root: Path
    train: Path
    bin: Path  # holds a `torchdet-lint` that runs this interpreter's torchdet_lint


def seed_project(directory: Path) -> Project:
    """Write the project under `directory`, and a `torchdet-lint` command for editors to find on PATH."""
    root = directory / "project"
    (root / "utils").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n\n[tool.torchdet-lint]\n', encoding="utf-8")
    (root / "utils" / "__init__.py").write_text("", encoding="utf-8")
    (root / "utils" / "seeding.py").write_text(SEEDING, encoding="utf-8")
    train = root / "train.py"
    train.write_text(TRAIN, encoding="utf-8")
    # The editor configurations run `torchdet-lint server` from PATH: make it the code under test.
    bin_directory = directory / "bin"
    bin_directory.mkdir()
    command = bin_directory / "torchdet-lint"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchdet_lint "$@"\n', encoding="utf-8")
    command.chmod(0o755)
    return Project(root, train, bin_directory)


def path_with(project: Project) -> str:
    return f"{project.bin}{os.pathsep}{os.environ.get('PATH', '')}"
