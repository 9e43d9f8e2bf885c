"""The wheel built from the repository, installed into a fresh virtual environment, lints with its catalogs."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

from conftest import ROOT

SOURCE = "import torch\ntorch.backends.cudnn.benchmark = True\ndef f(x, i, s):\n    return x.index_add_(0, i, s)\n"


def test_wheel_installs_and_lints_with_catalog_data(tmp_path: Path) -> None:
    # The installed wheel, not a source tree a PYTHONPATH of the caller points at.
    clean = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("torchdet_lint-*.whl"))
    environment = tmp_path / "env"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, capture_output=True)
    listing = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.resources as r; print(sorted(p.name for p "
            "in r.files('torchdet_lint').joinpath('rules').iterdir()))",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean,
    ).stdout
    assert "ops.toml" in listing
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    completed = subprocess.run(
        [str(environment / "bin" / "torchdet-lint"), "train.py", "--torch-version", "1.8", "--output-format", "concise"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean,
    )
    assert completed.returncode == 1, completed.stderr
    codes = {line.split()[1] for line in completed.stdout.splitlines() if ": TDL" in line}
    assert {"TDL301", "TDL202"} <= codes, completed.stdout
    # torch is not a run-time dependency
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True).stdout
    assert "torch" not in freeze.lower().replace("torchdet", "")
