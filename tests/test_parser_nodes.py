"""The parser's direct node constructors build the very tree LibCST's own constructors build,
and LibCST's constructors (and their checks) are back as soon as the parse is over."""

from __future__ import annotations

import inspect
from pathlib import Path

import libcst as cst
import pytest

from torchdet_lint.engine import parser_nodes
from torchdet_lint.engine.file_pass import parse

PACKAGE = Path(parser_nodes.__file__).resolve().parents[1]

# Syntax the package's own sources may not hold.
VARIETY = """\
from __future__ import annotations
import a.b as c, d
from .x import (y as z, w,)
@decorator(1)
async def f[T: int = str](a, /, b: int = 2, *args, c, d=3, **kw) -> "T":
    global g
    async with open(x) as (p, q), other:
        pass
    async for i in range(3):
        yield i
    else:
        await h()
    x = lambda *a, k=1: a
    y = [i async for i in z if i if not i]
    s = {**a, 'k': v}; t = {1, 2,}; u = (1,); v = ()
    w = f"{a!r:>{width}} {b=}" r'raw' 'con' "cat"
    if (n := len(s)) > 1 and not x or y:
        del s[1:2:3], t
    elif y is not None:
        raise E from None
    try:
        pass
    except* (A, B) as e:
        pass
    try:
        assert x, "m"
    except A:
        pass
    else:
        pass
    finally:
        return ...
    match p:
        case {"k": [1, *rest], **kw} | Point(x=0, y=_) if rest:
            pass
        case (1 | 2) as q:
            pass
    type Alias[K] = list[K]
    x @= -y ** ~z // 2
class C(B, metaclass=M):
    a: int
    b: int = 1
    def m(self): return self.a[1, ...]
"""


def _sources():
    files = sorted(PACKAGE.rglob("*.py"))[::7]
    return [("variety", VARIETY)] + [(str(path.relative_to(PACKAGE)), path.read_text(encoding="utf-8")) for path in files]


@pytest.fixture
def direct(monkeypatch):
    """Direct constructors from the first parse on, as in a long run."""
    monkeypatch.setattr(parser_nodes, "_WORTH_BUILDING_AFTER", 0)
    parse("x = 1\n")
    yield
    assert parser_nodes._depth == 0


def _direct_classes():
    return [node_class for node_class in parser_nodes._node_classes() if hasattr(node_class.__dict__["__init__"], "__wrapped__")]


def test_the_direct_constructors_are_built_and_cover_the_node_classes(direct):
    assert parser_nodes._built, "no direct constructor built: every parse would fall back to LibCST's own"
    assert {cst.Name, cst.Call, cst.Attribute, cst.SimpleStatementLine, cst.FunctionDef} <= set(_direct_classes())


@pytest.mark.parametrize("name,text", _sources(), ids=lambda value: value if len(value) < 80 else None)
def test_a_parse_builds_the_same_tree_as_libcst(direct, name, text):
    fast = parse(text)
    plain = cst.parse_module(text)  # outside our parse: LibCST's own constructors and checks
    assert fast.code == text
    assert fast.deep_equals(plain), name


def test_outside_a_parse_libcst_constructors_and_their_checks_run(direct):
    assert parser_nodes._parsing == [False]
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # an empty name: LibCST's check refuses it
    with pytest.raises(cst.CSTValidationError):
        cst.Call(func=cst.Name("f"), lpar=[cst.LeftParen()])  # unbalanced parentheses
    with pytest.raises(TypeError):
        cst.Name()  # a required field stays required
    assert cst.Name("x", lpar=[cst.LeftParen()], rpar=[cst.RightParen()]).lpar[0].deep_equals(cst.LeftParen())


def test_the_direct_constructors_take_the_same_parameters_and_defaults(direct):
    for node_class in _direct_classes():
        constructor = node_class.__dict__["__init__"]
        ours = inspect.signature(constructor, follow_wrapped=False).parameters
        theirs = inspect.signature(constructor.__wrapped__).parameters
        assert list(ours) == list(theirs), node_class
        for name in ours:
            if theirs[name].default is inspect.Parameter.empty:
                assert ours[name].default is inspect.Parameter.empty, (node_class, name)


def test_defaults_are_the_same_values(direct):
    """A node built with only its required fields during a parse is the node LibCST builds."""
    for node_class in _direct_classes():
        signature = inspect.signature(node_class.__dict__["__init__"], follow_wrapped=False)
        if any(name != "self" and p.default is inspect.Parameter.empty for name, p in signature.parameters.items()):
            continue
        with parser_nodes.parser_nodes(0):
            ours = node_class()
        assert ours.deep_equals(node_class()), node_class


def test_a_small_run_does_not_build_them(monkeypatch):
    def refuse():
        raise AssertionError("built for a few lines")

    monkeypatch.setattr(parser_nodes, "_built", None)
    monkeypatch.setattr(parser_nodes, "_parsed_so_far", 0)
    monkeypatch.setattr(parser_nodes, "_build", refuse)
    parse("import torch\n" * 10)
    assert parser_nodes._built is None
