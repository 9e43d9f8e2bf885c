"""Fuzzing: generated programs never crash the linter, and their fixes parse and converge.

Bounded for CI; set TORCHDET_FUZZ_EXAMPLES for a longer run, e.g.
`TORCHDET_FUZZ_EXAMPLES=2000 pytest tests/test_fuzz.py`.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdet_lint.checks import all_rules
from torchdet_lint.core.source import SourceText
from torchdet_lint.engine.config import Settings
from torchdet_lint.engine.file_pass import check_text
from torchdet_lint.engine.fixer import fix_text
from torchdet_lint.engine.runner import make_options

EXAMPLES = int(os.environ.get("TORCHDET_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    derandomize=not os.environ.get("TORCHDET_FUZZ_EXAMPLES"),
)
OPTIONS = make_options(Settings(select=("ALL",), root=Path.cwd()))
SNIPPETS = sorted({source for rule in all_rules().values() for source in (*rule.bad, *rule.good)})
PRELUDE = "import os\nimport random\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\n"


def _check(source: str) -> None:
    """Lint and fix one program: no exception; every fix result parses; a second pass changes nothing."""
    result = check_text(source, "fuzz.py", OPTIONS)
    for diagnostic in result.diagnostics:
        assert diagnostic.line >= 1 and diagnostic.column >= 1
        if diagnostic.fix is not None:
            for edit in diagnostic.fix.edits:
                assert 0 <= edit.start <= edit.end <= len(source)
    path = Path("fuzz.py")
    fixed, _, _ = fix_text(SourceText(source), path, "fuzz.py", OPTIONS, unsafe=True, on_error=lambda message: None)
    fixed_text = fixed.decode("utf-8")
    ast.parse(fixed_text)
    again, _, count = fix_text(SourceText(fixed_text), path, "fuzz.py", OPTIONS, unsafe=True, on_error=lambda message: None)
    assert again.decode("utf-8") == fixed_text and count == 0


@FUZZ
@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles its odd programs itself
@given(hypothesmith.from_grammar())
def test_grammar_generated_programs(program: str) -> None:
    _check(PRELUDE + program)


@st.composite
def _training_programs(draw) -> str:
    """Random mixes of every rule's examples, at module level, in functions and under a main guard."""
    pieces = draw(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=6))
    layout = draw(st.sampled_from(["module", "function", "main"]))
    body = "\n".join(pieces)
    if layout == "module":
        return body
    indented = "".join("    " + line + "\n" if line.strip() else "\n" for line in body.splitlines())
    if layout == "function":
        return f"{PRELUDE}\ndef train():\n{indented}\n\nif __name__ == '__main__':\n    train()\n"
    return f"{PRELUDE}\nif __name__ == '__main__':\n{indented}"


@FUZZ
@given(_training_programs())
def test_mixed_rule_examples(program: str) -> None:
    try:
        ast.parse(program)
    except SyntaxError:
        return  # examples joined at module level may clash (e.g. a __future__ import); not a linter input
    _check(program)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("torch.()[]{}=:,\n #'\"\\-+*x01\r\t")), max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    result = check_text("import torch\n" + text, "fuzz.py", OPTIONS)
    assert all(d.line >= 1 for d in result.diagnostics)
