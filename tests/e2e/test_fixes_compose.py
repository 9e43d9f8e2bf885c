"""End to end: fixes that depend on each other compose.

TDL104 + TDL008 (tests/e2e/programs/compose_resume/train.py): a resumable run whose sampler has
no generator and whose checkpoint has no RNG state. TDL104's fix gives the sampler a generator of
its own, which the checkpoint must then carry, else a resumed run replays epoch 0's order. After
every fix (applied together, or TDL104's first), a re-lint reports nothing and a resumed run ends
bit-identical to an uninterrupted one, in weights and in the order of the samples it saw.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Tuple

import pytest
from conftest import run_cli
from process_tree import last_line

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _both_ways(directory: Path) -> Tuple[str, str]:
    for checkpoint in directory.glob("*.pt"):
        checkpoint.unlink()
    straight = last_line(["train.py", "--epochs", "4", "--checkpoint", "straight.pt"], directory)
    last_line(["train.py", "--epochs", "2", "--checkpoint", "half.pt"], directory)
    resumed = last_line(["train.py", "--epochs", "4", "--resume", "half.pt", "--checkpoint", "resumed.pt"], directory)
    return straight, resumed


@pytest.mark.parametrize("order", ["together", "sampler first"])
def test_sampler_generator_and_checkpoint_fixes_compose(tmp_path: Path, order: str) -> None:
    program = tmp_path / "compose_resume"
    shutil.copytree(PROGRAMS / "compose_resume", program)
    straight, resumed = _both_ways(program)
    assert straight != resumed, "as written, a resumed run draws other dropout masks and another order"

    reported = json.loads(run_cli("--output-format", "json", "--no-cache", ".", cwd=program)[1])
    assert sorted(d["code"] for d in reported) == ["TDL008", "TDL104"], reported

    if order == "sampler first":
        code, out, err = run_cli("--fix", "--no-cache", "--select", "TDL104", ".", cwd=program)
        assert code == 0, f"{out}\n{err}"
    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code == 0, f"{out}\n{err}"
    fixed = (program / "train.py").read_text()
    assert "generator=torch.Generator()" in fixed and "sampler.generator" in fixed, fixed

    code, out, err = run_cli("--no-cache", "--unsafe-fixes", ".", cwd=program)
    assert code == 0, f"a re-lint of the fixed program still reports:\n{out}\n{err}"

    fixed_straight, fixed_resumed = _both_ways(program)
    assert fixed_resumed == fixed_straight, f"after every fix, resuming still changes the run:\n{fixed}"
