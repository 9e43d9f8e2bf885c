"""fixtures/TDLnnn/<case>.py (or a <case>/ project directory) against <case>.txt.

Each case is linted with only its directory's rule selected (a `# fixture: {...}`
line can change the settings); `pytest --update-fixtures` rewrites the
expectations for review in the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from torchdet_lint.testing import concise, fixture_config, lint_tree, settings_from


def _cases():
    for rule_dir in sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]")):
        for case in sorted(rule_dir.iterdir()):
            if case.is_dir() or (case.suffix == ".py" and not case.name.endswith(".fixed.py")):
                yield pytest.param(rule_dir.name, case, id=f"{rule_dir.name}/{case.stem}")


def _config(case: Path) -> dict:
    if case.is_dir():
        header = case / "fixture.json"
        return fixture_config("# fixture: " + header.read_text()) if header.exists() else {}
    return fixture_config(case.read_text(encoding="utf-8"))


@pytest.mark.parametrize("code, case", list(_cases()))
def test_fixture(code: str, case: Path, update_fixtures: bool) -> None:
    root = case if case.is_dir() else case.parent
    settings = settings_from(_config(case), root, select=[code])
    result = lint_tree(root, settings, paths=[case])
    actual = concise(result.diagnostics)
    expected_path = case.with_suffix(".txt") if case.is_file() else case.parent / (case.name + ".txt")
    if update_fixtures:
        expected_path.write_text(actual, encoding="utf-8")
    assert expected_path.exists(), f"{expected_path} is missing: run pytest --update-fixtures"
    assert actual == expected_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("rule_dir", sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]")), ids=lambda p: p.name)
def test_each_rule_directory_shows_its_rule_firing(rule_dir: Path) -> None:
    expectations = [p.read_text(encoding="utf-8") for p in rule_dir.glob("*.txt")]
    assert any(f" {rule_dir.name} " in text for text in expectations), f"no case in {rule_dir} reports {rule_dir.name}"
