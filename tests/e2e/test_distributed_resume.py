"""End to end (TDL008 per rank): a 2-process DDP run on CPU (gloo) where only rank 0 writes the
checkpoint, every rank loads it, and each rank draws its own streams (`seed + rank`) for dropout
and noise (tests/e2e/programs/ddp_resume/train.py). As written, a resumed run differs from an
uninterrupted one on every rank. After `--fix --unsafe-fixes` every rank's final weights and
drawn values are bit-identical to the uninterrupted run; a variant that restores rank 0's states
on every rank differs, so the test tells the per-rank fix from the one that collapses the ranks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, Tuple

from conftest import run_cli
from process_tree import last_line

PROGRAM = Path(__file__).resolve().parent / "programs" / "ddp_resume"


def _ranks(line: str) -> Dict[str, Tuple[str, str]]:
    """`rank:weights:drawn ...` -> {rank: (weights, drawn)}."""
    found = {}
    for part in line.split():
        rank, weights, drawn = part.split(":")
        found[rank] = (weights, drawn)
    assert sorted(found) == ["0", "1"], line
    return found


def _train(directory: Path, *args: str) -> Dict[str, Tuple[str, str]]:
    return _ranks(last_line(["train.py", *args], directory))


def _straight(directory: Path) -> Dict[str, Tuple[str, str]]:
    return _train(directory, "--epochs", "4", "--checkpoint", "straight.pt")


def _resumed(directory: Path, half: bool = True) -> Dict[str, Tuple[str, str]]:
    if half:
        _train(directory, "--epochs", "2", "--checkpoint", "half.pt")
    return _train(directory, "--epochs", "4", "--resume", "half.pt", "--checkpoint", "resumed.pt")


def test_each_rank_resumes_its_own_streams(tmp_path: Path) -> None:
    program = tmp_path / "ddp_resume"
    shutil.copytree(PROGRAM, program)

    straight, resumed = _straight(program), _resumed(program)
    for rank in ("0", "1"):
        assert straight[rank] != resumed[rank], f"rank {rank}: resuming should change the run as written"
    assert straight["0"][1] != straight["1"][1], "each rank draws its own noise"

    reported = json.loads(run_cli("--output-format", "json", "--no-cache", "--unsafe-fixes", ".", cwd=program)[1])
    assert [(d["code"], d["line"]) for d in reported] == [("TDL008", 55)], reported
    fix = reported[0]["fix"]
    assert fix["applicability"] == "unsafe" and "every rank" in fix["title"], fix

    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code == 0, f"{out}\n{err}"
    fixed = (program / "train.py").read_text()
    assert "all_gather_object" in fixed and "state = states[rank]" in fixed, fixed

    for checkpoint in program.glob("*.pt"):
        checkpoint.unlink()
    fixed_straight, fixed_resumed = _straight(program), _resumed(program)
    assert fixed_resumed == fixed_straight, "after --fix, each rank resumes bit-identically"
    assert fixed_straight == straight, "the fix changes nothing for an uninterrupted run"

    # Restoring rank 0's states on every rank (what a fix that is not rank-aware does) collapses the
    # ranks' streams: rank 1 then draws rank 0's noise, and the averaged gradients change.
    (program / "train.py").write_text(fixed.replace("state = states[rank]", "state = states[0]"))
    collapsed = _resumed(program, half=False)
    assert collapsed["1"] != fixed_straight["1"] and collapsed["0"][0] != fixed_straight["0"][0], collapsed
