"""End to end across a process boundary: a script seeds in the parent and trains in
workers started by `mp.spawn` (2 processes, CPU). As written, two runs differ: the
workers start with fresh generators. The linter reports the spawn call (TDL001,
TDL002) and `--fix --unsafe-fixes` seeds the worker from the parent's own seed
expression plus its rank; then two runs print the same numbers on every rank, and
the ranks differ from each other (each draws its own samples).

The program runs in a session of its own, killed whole after a timeout
(process_tree.py): a worker that outlives its parent cannot hang the test run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Dict

from conftest import lint_json, run_cli
from process_tree import last_line

PROGRAM = Path(__file__).resolve().parent / "spawned"


def _run(directory: Path) -> Dict[str, str]:
    """{rank: what it printed}."""
    ranks = {}
    for part in last_line(["workers/train.py", "--seed", "7"], directory).split():
        rank, _, rest = part.partition(":")
        ranks[rank] = rest
    assert sorted(ranks) == ["0", "1"], ranks
    return ranks


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
    # The seeding lands in the worker, from the parent's own seed plus the worker's rank (the
    # first argument `mp.spawn` passes): the parent's seeding stays as it was.
    worker = fixed[fixed.index("def main_worker") :]
    assert "torch.manual_seed(args.seed + rank)" in worker and "random.seed(args.seed + rank)" in worker, fixed
    assert fixed.count("torch.manual_seed(args.seed)") == 1, fixed

    first, second = _run(program), _run(program)
    assert first == second, f"the fixed workers still differ between runs:\n{first}\n{second}"
    assert first["0"] != first["1"], f"every rank drew the same samples: {first}"
