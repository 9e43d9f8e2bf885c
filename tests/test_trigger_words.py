"""A file rule's trigger words (`Rule.trigger_words` / `Rule.words`) only save time:
leaving a rule out of the walk of a file without its words never changes a result."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from conftest import FIXTURES, ROOT

from torchdet_lint import checks
from torchdet_lint.checks import all_rules, file_rule_classes
from torchdet_lint.core.rule import Rule
from torchdet_lint.core.settings import Settings
from torchdet_lint.testing import concise, fixture_config, lint_sources, lint_tree, settings_from

FILTERED = [rule for rule in file_rule_classes(frozenset(all_rules())) if rule.words(Settings())]


def test_most_file_rules_name_their_words() -> None:
    # The catalog-driven operation rules (TDL201-203) run everywhere; the others say what they need.
    unfiltered = {rule.code for rule in file_rule_classes(frozenset(all_rules())) if not rule.words(Settings())}
    assert unfiltered == {"TDL201", "TDL202", "TDL203"}


@pytest.mark.parametrize("rule", FILTERED, ids=lambda rule: rule.code)
def test_every_bad_example_spells_a_word(rule) -> None:
    for example in rule.bad:
        assert rule.may_report_in(example, Settings()), f"{rule.code}: {example!r} has none of {rule.words(Settings())}"


def _fixture_projects() -> List[Path]:
    cases = []
    for rule_dir in sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]")):
        for case in sorted(rule_dir.iterdir()):
            if case.name.endswith((".fixed", ".fixed.py")) or case.suffix not in ("", ".py", ".ipynb"):
                continue
            cases.append(case)
    return cases


def _lint_all(case: Path) -> str:
    root = case if case.is_dir() else case.parent
    header = case / "fixture.json" if case.is_dir() else None
    if header is not None:
        config = fixture_config("# fixture: " + header.read_text()) if header.exists() else {}
    else:
        config = fixture_config(case.read_text(encoding="utf-8", errors="replace"))
    settings = settings_from(config, root, select=["ALL"])
    return concise(lint_tree(root, settings, paths=[case]).diagnostics)


def test_filtering_by_words_changes_no_result_on_any_fixture(monkeypatch) -> None:
    """Every fixture (each rule's positives and negatives) and the examples, every rule
    selected: the same diagnostics with and without the words filter."""
    cases = _fixture_projects() + [ROOT / "examples"]
    filtered = [_lint_all(case) for case in cases]
    monkeypatch.setattr(Rule, "may_report_in", classmethod(lambda cls, text, settings: True))
    monkeypatch.setattr(checks, "may_report_in", lambda code, text, settings: True)  # the index's words too
    unfiltered = [_lint_all(case) for case in cases]
    assert sum(len(text.splitlines()) for text in unfiltered) > 300  # the comparison has substance
    for case, with_words, without in zip(cases, filtered, unfiltered):
        assert with_words == without, case


def test_words_named_in_the_config_count() -> None:
    """A seeding function from config `seed-functions` need not contain "seed": TDL004 still
    runs on a file that calls it after a draw."""
    source = "import torch\nfrom myproject.rng import init_everything\n\nmodel = torch.nn.Linear(4, 2)\ninit_everything(0)\n"
    config = {"seed-functions": {"myproject.rng.init_everything": ["torch"]}}
    diagnostics = lint_sources({"train.py": source}, config, select=["TDL004"])
    assert [(d.code, d.line) for d in diagnostics] == [("TDL004", 5)]


def test_an_alias_still_spells_the_imported_name() -> None:
    source = "import torch\nfrom torch.utils.data import DataLoader as DL\n\nloader = DL(range(8), batch_size=2, shuffle=True)\n"
    diagnostics = lint_sources({"train.py": source}, select=["TDL101"])
    assert [(d.code, d.line) for d in diagnostics] == [("TDL101", 4)]
