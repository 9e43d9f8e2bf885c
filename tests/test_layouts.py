"""Fixes that edit a call keep the call's own layout (issue 26): `fixtures/layouts/TDLnnn/<layout>.py`
holds one call layout for the rule, `<layout>.diff` the exact unified diff `--diff --unsafe-fixes`
prints for it. A diff never removes a line to add it back with other whitespace, the fixed file
parses, and a second run finds nothing to fix. `pytest --update-fixtures` rewrites the diffs for
review.

The layouts: a call on one line that stays on one line (`one_line`) or passes the line length
once fixed and is wrapped at its statement's indentation (`one_line_too_long`); one argument per
line with a trailing comma (`one_per_line`) or without (`no_trailing_comma`); arguments aligned
under the opening parenthesis, which closes on the last argument's line (`hugging`); several
arguments per line, closing on the last one's line (`packed`) or on a line of its own
(`packed_closing`); comments after the opening parenthesis, between the arguments and after the
last one (`comments`); calls inside a loop, a `with` and an `else:` in a function (`nested`).
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from torchdet_lint.checks import all_rules
from torchdet_lint.cli import main
from torchdet_lint.core.rule import FixAvailability

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from churn import churned, hunks  # noqa: E402  (the measure the real-repository run reports)

ALL = (
    "one_line",
    "one_line_too_long",
    "one_per_line",
    "no_trailing_comma",
    "hugging",
    "packed",
    "packed_closing",
    "comments",
    "nested",
)
# Every rule whose fix edits a call, with the layouts its call can have. TDL005's constructors
# take one argument at most (`torch.Generator(device=...)`), or none, split over two lines.
# (TDL401 renames the function of a one-argument call: no layout to keep.)
LAYOUTS = {
    "TDL005": ("one_line", "one_line_too_long", "one_per_line", "no_trailing_comma", "empty_split", "comments", "nested"),
    "TDL009": ALL,
    "TDL101": ALL,
    "TDL102": ALL,
    "TDL104": ALL,
    "TDL106": ALL,
    # TDL107 wraps a set expression, not a call's arguments: the expression keeps its lines.
    "TDL107": ("one_line", "one_line_too_long", "one_per_line", "nested"),
    "TDL402": ALL,
    "TDL403": ALL,
    "TDL405": ALL,
}
LAYOUT_FIXTURES = FIXTURES / "layouts"  # beside the rule directories: no `.txt` or `.fixed.py` of their own
PYPROJECT = "[tool.torchdet-lint]\n\n[tool.ruff]\nline-length = 88\n"


def _cases():
    for code, layouts in sorted(LAYOUTS.items()):
        for layout in layouts:
            yield pytest.param(code, layout, id=f"{code}/{layout}")


def _cli(capsys, code: str, *args: str) -> str:
    """The command line, in this process (a subprocess per run costs twenty times as much): its stdout."""
    capsys.readouterr()
    main(["--no-cache", "--unsafe-fixes", "--select", code, *args])
    return capsys.readouterr().out


def test_every_rule_whose_fix_edits_a_call_has_its_layouts() -> None:
    fixable = {code for code, rule in all_rules().items() if rule.fix_availability != FixAvailability.NONE}
    assert set(LAYOUTS) <= fixable
    assert {path.name for path in LAYOUT_FIXTURES.iterdir()} == set(LAYOUTS)
    for code, layouts in LAYOUTS.items():
        assert sorted(path.stem for path in (LAYOUT_FIXTURES / code).glob("*.py")) == sorted(layouts)


@pytest.mark.parametrize("code, layout", list(_cases()))
def test_layout_diff(code: str, layout: str, tmp_path: Path, update_fixtures: bool, capsys, monkeypatch) -> None:
    source = LAYOUT_FIXTURES / code / f"{layout}.py"
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    target = tmp_path / source.name
    shutil.copy(source, target)
    monkeypatch.chdir(tmp_path)
    diff = _cli(capsys, code, "--diff", source.name)
    expected_path = source.with_suffix(".diff")
    if update_fixtures:
        expected_path.write_text(diff, encoding="utf-8")
    assert diff, f"{code} fixed nothing in {source}"
    assert diff == expected_path.read_text(encoding="utf-8"), (
        f"the diff differs from {expected_path} (run pytest --update-fixtures and review)"
    )
    for path, removed, added in hunks(diff):
        assert churned(removed, added) == [], f"{path}: lines re-added with only their whitespace changed"
    _cli(capsys, code, "--fix", source.name)
    ast.parse(target.read_text(encoding="utf-8"))
    assert _cli(capsys, code, "--diff", source.name) == "", "a second run still fixes something"
