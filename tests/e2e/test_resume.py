"""End to end (TDL008): a resumable training program trained 4 epochs in one go,
and 2 epochs then resumed from the checkpoint to 4, ends with different weights
as written (the resumed run starts its generators afresh). After
`torchdet-lint --fix --unsafe-fixes`, the checkpoint carries the RNG states and
the resume restores them: both ways give bit-identical weights.

The program (tests/e2e/programs/resume/train.py) seeds torch, `random` and
NumPy at the start, trains a model with dropout on data augmented with `random`
and NumPy noise, shuffles with a DataLoader that has its own named generator,
saves `{"model", "optimizer", "epoch"}` at each epoch's end, and prints the
sha256 of the final weights. Its twin (programs/resume_wrapper/) builds the
checkpoint with `dict(...)` and saves it through `utils.save_on_master` of
another module.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest
from conftest import run_cli

PROGRAMS = Path(__file__).resolve().parent / "programs"
RUN_TIMEOUT = 120


def _train(directory: Path, *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, "train.py", *args], cwd=directory, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert completed.returncode == 0, f"train.py {' '.join(args)} failed:\n{completed.stderr}"
    return completed.stdout.strip().splitlines()[-1]


def _both_ways(directory: Path) -> Tuple[str, str]:
    """(4 epochs in one go, 2 epochs then a resume to 4): the hashes of the final weights."""
    straight = _train(directory, "--epochs", "4", "--checkpoint", "straight.pt")
    _train(directory, "--epochs", "2", "--checkpoint", "half.pt")
    resumed = _train(directory, "--epochs", "4", "--resume", "half.pt", "--checkpoint", "resumed.pt")
    return straight, resumed


@pytest.mark.parametrize("name", ["resume", "resume_wrapper"])
def test_fixed_checkpoint_resumes_bit_identically(tmp_path: Path, name: str) -> None:
    program = tmp_path / name
    shutil.copytree(PROGRAMS / name, program)

    straight, resumed = _both_ways(program)
    assert straight != resumed, f"resuming should change the result as written, but both ways gave {straight}"

    code, out, err = run_cli("--select", "TDL008", "--output-format", "json", "--no-cache", "--unsafe-fixes", ".", cwd=program)
    assert code == 1, err
    reported = json.loads(out)
    assert [(d["code"], d["path"]) for d in reported] == [("TDL008", "train.py")]
    assert reported[0]["fix"] is not None and reported[0]["fix"]["applicability"] == "unsafe"
    for state in ("torch.get_rng_state()", "random.getstate()", "np.random.get_state()", "g.get_state()"):
        assert state in reported[0]["message"], reported[0]["message"]

    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--show-fixes", ".", cwd=program)
    assert code in (0, 1), f"--fix failed ({code}):\n{out}\n{err}"
    assert "TDL008" in err, err  # --show-fixes lists what was fixed
    code, out, err = run_cli("--select", "TDL008", "--output-format", "json", "--no-cache", ".", cwd=program)
    assert code == 0 and json.loads(out) == [], f"TDL008 still reported after --fix:\n{out}{err}"
    code, diff, err = run_cli("--diff", "--unsafe-fixes", "--no-cache", "--select", "TDL008", ".", cwd=program)
    assert code == 0 and diff == "", f"a second --fix would change:\n{diff}\n{err}"

    for checkpoint in program.glob("*.pt"):
        checkpoint.unlink()
    fixed_straight, fixed_resumed = _both_ways(program)
    assert fixed_straight == fixed_resumed, (
        f"after --fix, resuming still changes the result:\n{_changes(PROGRAMS / name, program)}"
    )
    # The fix changes nothing for a run that is never interrupted.
    assert fixed_straight == straight


def _changes(original: Path, program: Path) -> str:
    completed = subprocess.run(
        ["diff", "-u", str(original / "train.py"), str(program / "train.py")], capture_output=True, text=True
    )
    return completed.stdout
