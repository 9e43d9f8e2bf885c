"""Golden fixes: one realistic, ruff-formatted file per fixable rule (tests/golden/TDLnnn.py),
fixed by the real command line in a project formatted with ruff, must equal the reviewed
result (TDLnnn.fixed.py) and still pass `ruff check --select E,W,I` and `ruff format --check`:
the fix reads like code a person would commit. `pytest --update-fixtures` rewrites the
expectations for review in the diff."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import cli_in_process
from ruff.__main__ import find_ruff_bin

from torchdet_lint.checks import all_rules
from torchdet_lint.core.rule import FixAvailability

GOLDEN = Path(__file__).parent / "golden"
PYPROJECT = '[tool.torchdet-lint]\n{settings}\n[tool.ruff]\nline-length = 88\n\n[tool.ruff.lint]\nselect = ["E", "W", "I"]\n'
# Cases whose rule needs a setting: TDL303 reports only before torch 2.10 (cuBLAS needs the variable);
# TDL306 fixes only from 2.10 (Inductor's deterministic mode).
# TDL900 judges the directives of the rules selected with it.
SETTINGS = {
    "TDL303": 'torch-version = "2.3"\n',
    "TDL306": 'torch-version = "2.13"\n',
    "TDL900": 'extend-select = ["TDL301", "TDL304"]\n',
}
FIXABLE = sorted(code for code, rule in all_rules().items() if rule.fix_availability != FixAvailability.NONE)


# ruff's own binary, as `python -m ruff` runs it, without starting an interpreter first.
RUFF = find_ruff_bin()


def _ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, *args], cwd=cwd, capture_output=True, text=True)


def test_every_fixable_rule_has_a_golden_case() -> None:
    assert sorted(path.stem for path in GOLDEN.glob("TDL*.py") if not path.stem.endswith(".fixed")) == FIXABLE


@pytest.mark.parametrize("code", FIXABLE)
def test_golden_fix(code: str, tmp_path: Path, update_fixtures: bool) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(settings=SETTINGS.get(code, "")), encoding="utf-8")
    target = tmp_path / "train.py"
    shutil.copy(GOLDEN / f"{code}.py", target)
    for check in (("check", "--no-cache", "."), ("format", "--no-cache", "--check", ".")):
        before = _ruff(*check, cwd=tmp_path)
        assert before.returncode == 0, f"the golden input is not ruff-clean:\n{before.stdout}{before.stderr}"
    cli_in_process("--fix", "--unsafe-fixes", "--no-cache", "--select", code, "train.py", cwd=tmp_path)
    fixed = target.read_text(encoding="utf-8")
    assert fixed != (GOLDEN / f"{code}.py").read_text(encoding="utf-8"), f"{code}: nothing was fixed"
    expected_path = GOLDEN / f"{code}.fixed.py"
    if update_fixtures:
        expected_path.write_text(fixed, encoding="utf-8")
    assert fixed == expected_path.read_text(encoding="utf-8")
    for check in (("check", "--no-cache", "."), ("format", "--no-cache", "--check", "--diff", ".")):
        after = _ruff(*check, cwd=tmp_path)
        assert after.returncode == 0, f"{code}: the fixed file fails `ruff {check[0]}`:\n{after.stdout}{after.stderr}"
