"""End to end (TDL010): a run that checkpoints every 3 steps inside the epoch
(tests/e2e/programs/mid_epoch/train.py) is interrupted after step 5 and resumed from the
checkpoint of step 3. The indices it trains on after the resume repeat the epoch's start, not
what the uninterrupted run saw next; the linter reports the resume. The fixed form of the
rule's documentation (programs/mid_epoch_stateful: torchdata's `StatefulDataLoader`, its state
in the checkpoint) trains on exactly the uninterrupted run's remaining indices, and the linter
says nothing about it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import List, Tuple

from conftest import run_cli
from process_tree import last_line

PROGRAMS = Path(__file__).resolve().parent / "programs"
BATCH = 4
CHECKPOINTED_STEP = 3  # the last checkpoint before the interruption after step 5


def _indices(directory: Path, *args: str) -> List[int]:
    return [int(index) for index in last_line(["train.py", *args], directory).split(",")]


def _runs(directory: Path) -> Tuple[List[int], List[int]]:
    """(the uninterrupted run's indices, the resumed run's)."""
    uninterrupted = _indices(directory, "--checkpoint", "straight.pt")
    _indices(directory, "--stop-at", "5", "--checkpoint", "interrupted.pt")
    resumed = _indices(directory, "--resume", "interrupted.pt", "--checkpoint", "resumed.pt")
    return uninterrupted, resumed


def _line(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_mid_epoch_resume_replays_the_epoch_start(tmp_path: Path) -> None:
    program = tmp_path / "mid_epoch"
    shutil.copytree(PROGRAMS / "mid_epoch", program)
    uninterrupted, resumed = _runs(program)
    consumed = CHECKPOINTED_STEP * BATCH
    assert resumed[:BATCH] == uninterrupted[:BATCH], "after the resume the loader starts at the epoch's first batch"
    assert resumed != uninterrupted[consumed:], "the resumed run sees other data than the uninterrupted one"

    reported = json.loads(run_cli("--output-format", "json", "--no-cache", "--select", "TDL010", ".", cwd=program)[1])
    load = _line(program / "train.py", 'optimizer.load_state_dict(checkpoint["optimizer"])')
    assert [(d["code"], d["line"]) for d in reported] == [("TDL010", load)], reported
    assert "`loader`" in reported[0]["message"] and "if step % 3 == 0:" in reported[0]["message"], reported


def test_the_documented_stateful_loader_resumes_where_the_run_stopped(tmp_path: Path) -> None:
    program = tmp_path / "mid_epoch_stateful"
    shutil.copytree(PROGRAMS / "mid_epoch_stateful", program)
    uninterrupted, resumed = _runs(program)
    assert resumed == uninterrupted[CHECKPOINTED_STEP * BATCH :]

    code, out, err = run_cli("--no-cache", ".", cwd=program)
    assert code == 0, f"the documented form is reported:\n{out}\n{err}"
