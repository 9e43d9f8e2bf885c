"""End to end across a process boundary: a script seeds in the parent and trains in
workers started by `mp.spawn` (2 processes, CPU). As written, two runs differ: the
workers start with fresh generators. The linter reports the spawn call (TDL001,
TDL002) and `--fix --unsafe-fixes` seeds the worker from the parent's own seed
expression; then two runs print the same numbers.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import lint_json, run_cli

PROGRAM = Path(__file__).resolve().parent / "spawned"
RUN_TIMEOUT = 180


def _run(directory: Path) -> str:
    completed = subprocess.run(
        [sys.executable, "workers/train.py", "--seed", "7"], cwd=directory, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip().splitlines()[-1]


def test_spawned_workers_reproduce_after_fix(tmp_path: Path) -> None:
    program = tmp_path / "spawned"
    shutil.copytree(PROGRAM, program)
    first, second = _run(program), _run(program)
    assert first != second, f"the workers should start unseeded as written, but printed {first} twice"

    spawn_line = next(
        i for i, line in enumerate((program / "workers/train.py").read_text().splitlines(), 1) if "mp.spawn(" in line
    )
    found = {(d["code"], d["line"]) for d in lint_json("--unsafe-fixes", ".", cwd=program)}
    assert {("TDL001", spawn_line), ("TDL002", spawn_line)} <= found, found

    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code in (0, 1), f"{out}\n{err}"
    fixed = (program / "workers/train.py").read_text()
    # The seeding lands in the worker, from the parent's own seed: the parent's seeding stays as it was.
    worker = fixed[fixed.index("def main_worker") :]
    assert "torch.manual_seed(args.seed)" in worker and "random.seed(args.seed)" in worker, fixed
    assert fixed.count("torch.manual_seed(args.seed)") == 2, fixed

    first, second = _run(program), _run(program)
    assert first == second, f"the fixed workers still differ:\n{first}\n{second}"
