"""Every rule's `bad` examples are reported and its `good` examples are not, through the real engine."""

from __future__ import annotations

import pytest

from torchdet_lint.checks import all_rules
from torchdet_lint.testing import lint_sources

RULES = all_rules()


def _examples(kind: str):
    for code, rule in RULES.items():
        for index, source in enumerate(getattr(rule, kind)):
            yield pytest.param(code, source, id=f"{code}-{kind}-{index}")


def test_every_rule_has_examples() -> None:
    for code, rule in RULES.items():
        assert rule.bad, f"{code} has no bad example"
        assert rule.good, f"{code} has no good example"


@pytest.mark.parametrize("code, source", list(_examples("bad")))
def test_bad_example_is_reported(code: str, source: str) -> None:
    diagnostics = lint_sources({"example.py": source}, RULES[code].example_config, select=[code])
    assert [d.code for d in diagnostics if d.code == code], f"{code} did not report:\n{source}"


@pytest.mark.parametrize("code, source", list(_examples("good")))
def test_good_example_is_not_reported(code: str, source: str) -> None:
    diagnostics = lint_sources({"example.py": source}, RULES[code].example_config, select=[code])
    assert not [d for d in diagnostics if d.code == code], diagnostics


@pytest.mark.parametrize("code", list(RULES))
def test_documentation_has_the_sections(code: str) -> None:
    rule = RULES[code]
    doc = rule.documentation()
    for section in ("Why is this bad?", "Known problems", "Options", "References"):
        assert f"## {section}" in doc, f"{code} lacks `## {section}`"
    if rule.fix_availability.value != "none":
        assert "## Fix safety" in doc, f"{code} has a fix but no `## Fix safety`"
