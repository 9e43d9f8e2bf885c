"""The analysis runs on a LibCST-shaped tree built from Python's `ast` (engine/ast_tree.py).
These tests hold it to LibCST's own tree: the same nodes in the same fields, the same ranges,
the same code for a node, and the same diagnostics and fixes from the whole file pass."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Iterator, List, Tuple

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchdet_lint.checks import all_rules
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex
from torchdet_lint.engine import file_pass
from torchdet_lint.engine.ast_tree import NeedsLibCST, ast_shaped_module

ROOT = Path(__file__).parents[1]
# Layout only: what the built tree leaves at LibCST's defaults.
_LAYOUT = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer", "encoding"}
_LAYOUT |= {"equal", "colon", "first_colon", "second_colon", "newline", "trailing_whitespace", "lbracket", "rbracket"}
_LAYOUT |= {"lbrace", "rbrace"}
_TOKENS = (cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp, cst.Dot, cst.ImportStar)
_TOKENS += (cst.Asynchronous, cst.ParamStar, cst.ParamSlash)

TRICKY = '''\
"""Docstring."""  # comment
from . import a, b as c
from ..pkg.mod import *
import os.path, numpy as np
x = 1; y = 2;
if x: y = 3
elif y:
    pass
else:
    if x: pass
def f(a, /, b=1, *args, c, d=(2), **kw) -> "int":
    return (a + b) * -c if a and b and not c else d[1:2, ::3][(1, 2)]
@decorator(arg)
async def g():
    async with a as (b, c), d:
        async for i in aiter():
            await i
    return [i async for i in x if i]
class A(B, *bases, metaclass=M):
    s = "a" "b" 'c'
    t = f"{x!r:>{width}} {y=}"
    u = rb"raw" + b'b' + u"u"
    def m(self, *, k): return {**k, 'a': 1, 'b': [*k], 'c': {1, 2}}
try:
    del a, b[0], c.d
except (ValueError, TypeError) as error:
    raise RuntimeError() from error
except Exception:
    global z
finally:
    assert x, "message"
while (n := next(it)) is not None:
    lam = lambda p, *q, r=1, **s: (p, q)
    gen = sum(v for v in range(3) if v % 2)
    gen2 = f(v for v in range(3))
    x += 1; x @= m; x //= 2
    w = {k: v for k, v in d.items()}, {k for k in d}, [0x1F, 1_000, 1.5e-3, 2j, ..., None, True]
    call(a, *b, c=1, **d)(e)[f].g
    yield
    yield from other()
'''

MATCH = """\
def f(x, command):
    match x:
        case 1, 2:
            pass
        case (a, *rest):
            pass
        case [1, (2)] | {"k": v, **kw}:
            pass
        case Point(1, y=2) if y > 0:
            return y
        case None | True | False:
            pass
        case -1 | 1+2j | a.b as z:
            pass
        case (1, 2), (3, 4):
            pass
        case (a), b:
            pass
        case () | [] | {} | [*_]:
            pass
        case "(" | b"x" | "a" "b":
            pass
        case (x):
            pass
        case _:
            pass
    match command.split():
        case [action]: print(action)
        case [action, obj]:
            print(action, (  # a comment inside the parentheses
                obj))
match (x, y):
  case (0, 0):
      print("origin")
  case _: pass
"""


def _compare(built: cst.CSTNode, parsed: cst.CSTNode, path: str, out: List[str]) -> None:
    if type(built) is not type(parsed):
        out.append(f"{path}: {type(built).__name__} where LibCST has {type(parsed).__name__}")
        return
    if isinstance(built, _TOKENS):
        return
    for field in dataclasses.fields(built):
        name = field.name
        if name in _LAYOUT or name.startswith("whitespace"):
            continue
        a, b = getattr(built, name), getattr(parsed, name)
        where = f"{path}.{type(built).__name__}.{name}"
        if isinstance(a, cst.CSTNode) or isinstance(b, cst.CSTNode):
            _compare(a, b, where, out)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                out.append(f"{where}: {len(a)} items where LibCST has {len(b)}")
                continue
            for index, (x, y) in enumerate(zip(a, b)):
                if isinstance(x, cst.CSTNode) or isinstance(y, cst.CSTNode):
                    _compare(x, y, f"{where}[{index}]", out)
                elif x != y:
                    out.append(f"{where}[{index}]: {x!r} where LibCST has {y!r}")
        elif a != b:
            out.append(f"{where}: {a!r} where LibCST has {b!r}")


def _pairs(built: cst.CSTNode, parsed: cst.CSTNode) -> Iterator[Tuple[cst.CSTNode, cst.CSTNode]]:
    stack = [(built, parsed)]
    while stack:
        a, b = stack.pop()
        yield a, b
        for field in dataclasses.fields(a):
            if field.name in _LAYOUT or field.name.startswith("whitespace"):
                continue
            x, y = getattr(a, field.name), getattr(b, field.name)
            if isinstance(x, cst.CSTNode) and isinstance(y, cst.CSTNode):
                stack.append((x, y))
            elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
                stack.extend((p, q) for p, q in zip(x, y) if isinstance(p, cst.CSTNode) and isinstance(q, cst.CSTNode))


def _check_source(text: str, name: str) -> List[str]:
    """Every difference between the built tree and LibCST's: shape, values, ranges, code."""
    parsed = cst.parse_module(text)
    try:
        built, positions = ast_shaped_module(text, ast.parse(text), LineIndex(text))
    except NeedsLibCST:
        return []  # said so: the file pass analyses it on LibCST's tree
    out: List[str] = []
    _compare(built, parsed, name, out)
    if out:
        return out
    ranges = MetadataWrapper(parsed, unsafe_skip_copy=True).resolve(PositionProvider)
    for a, b in _pairs(built, parsed):
        if not isinstance(
            a, (cst.BaseExpression, cst.BaseSmallStatement, cst.BaseStatement, cst.Arg, cst.Param, cst.MatchPattern)
        ):
            continue
        if isinstance(a, (cst.BaseExpression, cst.MatchPattern)) and not positions.is_built(a):
            continue
        want = ranges[b]
        got = positions.range(a)
        if got != (want.start.line, want.start.column, want.end.line, want.end.column):
            out.append(f"{name}: {type(a).__name__} at {got}, LibCST says {want}")
        if isinstance(a, (cst.BaseExpression, cst.MatchPattern)) and positions.code(a) != parsed.code_for_node(b):
            out.append(f"{name}: {type(a).__name__} reads {positions.code(a)!r}, LibCST {parsed.code_for_node(b)!r}")
    return out


def test_tricky_syntax_builds_as_libcst_parses_it() -> None:
    assert _check_source(TRICKY, "tricky.py") == []
    indented = "class A:\n  def f(self):\n    return 1\n  x = 2\n"
    assert _check_source(indented, "two_spaces.py") == []
    assert _check_source("x = 'é'; y = f(a='ü', b=x.attr)\n", "unicode.py") == []
    ast_shaped_module(MATCH, ast.parse(MATCH), LineIndex(MATCH))  # built, not refused
    assert _check_source(MATCH, "match.py") == []


@pytest.mark.parametrize("folder, every", [("torchdet_lint", 3), ("examples", 1), ("fixtures", 1)])
def test_real_sources_build_as_libcst_parses_them(folder: str, every: int) -> None:
    """Every fixture and example, and every third module of the package: each file costs
    LibCST's whole-module positions and a parse of each statement (the whole package took
    80 s). The torch tree was compared whole when the builder was written (docs/performance.md)."""
    differences: List[str] = []
    for path in sorted((ROOT / folder).rglob("*.py"))[::every]:
        text = path.read_text(encoding="utf-8")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        differences += _check_source(text, str(path.relative_to(ROOT)))
    assert differences == []


def test_syntax_it_does_not_build_is_said_and_the_file_is_analysed_in_full() -> None:
    # `ast` places no `case` keyword: a pattern that starts below it leaves the case's
    # indentation unknown, and the builder says so.
    match = "\nmatch mode:\n    case (\n        1\n    ):\n        pass\n"
    with pytest.raises(NeedsLibCST):
        ast_shaped_module(match, ast.parse(match), LineIndex(match))
    # A fixture with findings and fixes, that `match` statement appended: LibCST's tree gives
    # the same diagnostics and fixes as the fixture alone.
    options = file_pass.RunOptions(settings=Settings(), selected=frozenset(all_rules()), torch_version=(2, 13))
    text = (ROOT / "fixtures" / "TDL101" / "loaders.py").read_text(encoding="utf-8")
    alone = file_pass.check_text(text, "t.py", options).diagnostics
    with_match = file_pass.check_text(text + match, "t.py", options).diagnostics
    assert alone and any(d.fix is not None for d in alone)
    assert with_match == alone


def test_both_trees_give_the_same_diagnostics_and_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file pass on every fixture: built from `ast` (falling back where it says so) and on
    LibCST's tree alone give the same diagnostics, messages, ranges, fixes and summaries."""
    options = file_pass.RunOptions(settings=Settings(), selected=frozenset(all_rules()), torch_version=(2, 13))
    texts = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    fast = [file_pass.check_text(text, name, options) for name, text in texts]
    monkeypatch.setattr(file_pass, "_check_ast_built", lambda *args, **kwargs: None)
    slow = [file_pass.check_text(text, name, options) for name, text in texts]
    fixes = 0
    for (name, _), a, b in zip(texts, fast, slow):
        assert a.diagnostics == b.diagnostics, name
        assert a.summary == b.summary, name
        fixes += sum(d.fix is not None for d in a.diagnostics)
    assert fixes > 50  # the fixes are compared too, not only findings without one


def test_a_comment_among_a_conditions_parentheses_is_read_as_libcst_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """TDL405 leaves alone a deprecated AMP call under a version guard. On the built tree the
    condition's own text answers (`context.code_has`), except where a comment stands among its
    parentheses: LibCST's code of the condition holds that comment, and so must the answer."""
    source = (
        "import torch\n\n"
        "if (  # torch version check\n    torch.cuda.is_available()\n):\n    a = torch.cuda.amp.GradScaler()\n"
        "if (\n    torch.cuda.is_available()\n    and True  # a plain condition\n):\n    b = torch.cuda.amp.GradScaler()\n"
        "if (torch.cuda.is_available()):\n    c = torch.cuda.amp.GradScaler()\n"
    )
    options = file_pass.RunOptions(settings=Settings(), selected=frozenset(all_rules()), torch_version=(2, 13))
    fast = file_pass.check_text(source, "train.py", options).diagnostics
    monkeypatch.setattr(file_pass, "_check_ast_built", lambda *args, **kwargs: None)
    slow = file_pass.check_text(source, "train.py", options).diagnostics
    assert [(d.code, d.line) for d in fast] == [("TDL405", 11), ("TDL405", 13)]
    assert fast == slow
