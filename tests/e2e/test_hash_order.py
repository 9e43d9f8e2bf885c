"""End to end for TDL107: a script whose class index comes from `list(set(labels))` prints
a different mapping under two `PYTHONHASHSEED` values; after `torchdet-lint --fix` (the fix
is safe: the labels are strings) it prints the same mapping under both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import run_cli

PROGRAM = Path(__file__).resolve().parent / "hash_order" / "train.py"


def _run(path: Path, hash_seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    completed = subprocess.run(
        [sys.executable, str(path)], cwd=str(path.parent), capture_output=True, text=True, env=env, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_fixed_label_map_is_the_same_in_every_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    shutil.copy(PROGRAM, script)
    assert _run(script, "1") != _run(script, "2"), "the label map should follow the string hashes"

    code, out, err = run_cli("--output-format", "json", "--no-cache", "--select", "TDL107", ".", cwd=tmp_path)
    assert code == 1, err
    found = json.loads(out)
    assert [(d["code"], d["line"], d["fix"]["applicability"]) for d in found] == [("TDL107", 24, "safe")]

    code, out, err = run_cli("--fix", "--no-cache", "--select", "TDL107", ".", cwd=tmp_path)
    assert code == 0, out + err
    assert "classes = sorted(set(labels))" in script.read_text()
    first, second = _run(script, "1"), _run(script, "2")
    assert first == second
    assert first.startswith("{'bird': 0, 'cat': 1, 'dog': 2, 'fish': 3, 'frog': 4, 'horse': 5}")
