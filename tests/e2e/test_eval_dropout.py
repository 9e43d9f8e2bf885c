"""End to end for TDL009: a model whose forward calls `F.dropout(x, 0.5)` is put in
`eval()` mode and evaluated twice on the same input in a seeded program (CPU). As
written the two outputs differ: the functional dropout ignores the module's mode
and draws a new mask each time. The linter reports the call, and
`--fix --unsafe-fixes` passes `training=self.training`; then both evaluations, and
two fresh runs, print the same outputs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import lint_json, run_cli

PROGRAM = Path(__file__).resolve().parent / "eval_dropout"
RUN_TIMEOUT = 120


def _run(directory: Path) -> tuple:
    completed = subprocess.run(
        [sys.executable, "evaluate.py"], cwd=directory, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert completed.returncode == 0, completed.stderr
    first, second = completed.stdout.split()
    return first, second


def test_evaluation_is_repeatable_after_fix(tmp_path: Path) -> None:
    program = tmp_path / "eval_dropout"
    shutil.copytree(PROGRAM, program)
    first, second = _run(program)
    assert first != second, "as written, dropout should still draw masks after model.eval()"

    source = (program / "evaluate.py").read_text(encoding="utf-8")
    call_line = next(i for i, line in enumerate(source.splitlines(), 1) if "= F.dropout(" in line)
    found = [d for d in lint_json("--unsafe-fixes", ".", cwd=program) if d["code"] == "TDL009"]
    assert [d["line"] for d in found] == [call_line], found
    assert found[0]["fix"] is not None and found[0]["fix"]["applicability"] == "unsafe", found

    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code in (0, 1), f"{out}\n{err}"
    fixed = (program / "evaluate.py").read_text(encoding="utf-8")
    assert "h = F.dropout(h, 0.5, training=self.training)\n" in fixed, fixed
    assert not [d for d in lint_json("--unsafe-fixes", ".", cwd=program) if d["code"] == "TDL009"]

    first, second = _run(program)
    assert first == second, "after the fix, two evaluations in eval() mode should agree"
    assert _run(program) == (first, second), "a fresh run should print the same outputs"
