"""The README stays true: the generated rule table and the two set-up commands."""

from __future__ import annotations

import re

from conftest import ROOT

from torchdet_lint.docs import render_readme

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_is_current() -> None:
    assert render_readme(README) == README, "the rules table is stale: run `python -m torchdet_lint.docs`"


def test_two_setup_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README.split("## Quick start", 1)[1].split("\n## ", 1)[0], re.S)
    assert [b.strip() for b in blocks] == ["pip install . && torchdet-lint examples/", 'pip install -e ".[test]" && pytest']
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]" && pytest' in ci
