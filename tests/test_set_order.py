"""TDL107 (sets of strings put in hash order): what the fixtures do not show on their own:
fix applicability, robustness on deep expressions, and that a file's result does not depend
on the order its functions are defined in."""

from __future__ import annotations

import pytest

from torchdet_lint.testing import lint_sources


def _tdl107(source: str):
    return [d for d in lint_sources({"a.py": source}, select=["TDL107"]) if d.code == "TDL107"]


@pytest.mark.parametrize(
    "source, applicability",
    [
        ("import torch\nnames = {'a', 'b'}\nitos = list(names)\nfirst = itos[0]\n", "safe"),
        # Not all elements known to be strings: sorted() may raise, so the fix is unsafe.
        ("import torch\ndef f(x):\n    s = {'a', x}\n    return list(s)\n", "unsafe"),
        ("import torch\ndef f(labels):\n    return {c: i for i, c in enumerate(set(labels))}\n", "unsafe"),
    ],
)
def test_fix_is_safe_only_for_known_strings(source: str, applicability: str) -> None:
    [diagnostic] = _tdl107(source)
    assert diagnostic.fix is not None and diagnostic.fix.applicability.value == applicability


def test_pop_is_reported_without_a_fix() -> None:
    [diagnostic] = _tdl107("import torch\ndef f(xs):\n    s = {x.lower() for x in xs}\n    return s.pop()\n")
    assert diagnostic.fix is None


def test_a_deeply_nested_expression_leaves_the_file_analysed() -> None:
    terms = " + ".join(f"a{i}" for i in range(1200))  # deeper than this reading recurses, not too deep for positions
    source = (
        f"import torch\ndef f(xs):\n    s = {{x.lower() for x in xs}}\n    t = {terms}\n    return list(s)\n\n"
        "def g(xs):\n    return list({x.strip() for x in xs})\n"
    )
    diagnostics = lint_sources({"a.py": source}, select=["TDL107", "TDL000"])
    assert [(d.code, d.line) for d in diagnostics] == [("TDL107", 8)]


def test_a_function_defined_after_its_caller_is_followed() -> None:
    source = (
        "import torch\n\n"
        "def main(rows):\n    classes = get_classes(rows)\n    return {c: i for i, c in enumerate(classes)}\n\n"
        "def get_classes(rows):\n    return {r.strip() for r in rows}\n"
    )
    assert [(d.line, d.column) for d in _tdl107(source)] == [(5, 40)]


def test_ints_and_unknown_elements_without_index_mapping_are_silent() -> None:
    source = (
        "import torch\ndef f(xs, ys):\n    a = list({int(x) for x in xs})\n    b = list(set(ys))\n"
        "    return a, b, {i: j for j, i in enumerate({1, 2})}\n"
    )
    assert _tdl107(source) == []
