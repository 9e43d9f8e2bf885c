"""The lean batched walker visits exactly what LibCST's own traversal visits, in the same order."""

from __future__ import annotations

import libcst as cst
import pytest

from torchdet_lint.core.traversal import _TRIVIA, BatchedWalker

SOURCES = [
    "from a.b import c as d, e\nimport x.y as z\n",
    "@dec(1)\n@other\nasync def f(a, /, b: int = 2, *args, c, **kw) -> R:\n    await g(a)\n",
    "class C(B, metaclass=M):\n    x: int = 1\n    def m(self):\n        return [i for i in range(3) if i]\n",
    "y = {k: v for k, v in d.items()}\nz = lambda q, r=1: q + r\nw = (a if b else c)[1:2, ::3]\n",
    (
        "with open(p) as f, g() as (h, i):\n    pass\ntry:\n    pass\nexcept E as e:\n"
        "    raise X from e\nelse:\n    pass\nfinally:\n    del q\n"
    ),
    (
        "match cmd:\n    case [x, *rest] if x:\n        pass\n    case {'k': v, **kw}:\n"
        "        pass\n    case P(a, b=c) | None:\n        pass\n"
    ),
    "s = f'{a!r:>{w}} and {b}' 'x'\nglobal g\nfor i, (j, k) in enumerate(z):\n    continue\nwhile x := f():\n    break\n",
    "x = -a ** ~b @ c // d\nassert x, 'msg'\nx += yield_ if not a and b or c in d is not e else 0\n",
]


class _Recorder(cst.BatchableCSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.events = []


_NODE_NAMES = [
    name
    for name in dir(cst)
    if isinstance(getattr(cst, name), type)
    and issubclass(getattr(cst, name), cst.CSTNode)
    and not issubclass(getattr(cst, name), _TRIVIA)
    and not name.startswith("Base")
]


def _recording(kind: str, node_name: str):
    def method(self, node):
        self.events.append((kind, node_name, id(node)))

    method.__name__ = f"{kind}_{node_name}"  # LibCST finds visitor methods by their __name__
    return method


for _name in _NODE_NAMES:
    setattr(_Recorder, "visit_" + _name, _recording("visit", _name))
    setattr(_Recorder, "leave_" + _name, _recording("leave", _name))


@pytest.mark.parametrize("source", SOURCES)
def test_same_events_as_libcst(source: str) -> None:
    module = cst.parse_module(source)
    expected = _Recorder()
    cst.MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([expected])
    actual = _Recorder()
    BatchedWalker([actual]).walk(module)
    assert actual.events == expected.events


def test_trivia_is_visited_when_a_visitor_asks_for_it() -> None:
    class Commas(cst.BatchableCSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        def visit_Comma(self, node: cst.Comma) -> None:
            self.count += 1

    visitor = Commas()
    BatchedWalker([visitor]).walk(cst.parse_module("f(a, b, c)\n"))
    assert visitor.count == 2


def test_deep_nesting_does_not_recurse() -> None:
    source = "x = " + "(" * 900 + "1" + ")" * 900 + "\n"
    module = cst.parse_module(source)
    seen = []

    class Ints(cst.BatchableCSTVisitor):
        def visit_Integer(self, node: cst.Integer) -> None:
            seen.append(node.value)

    BatchedWalker([Ints()]).walk(module)
    assert seen == ["1"]


def test_shipped_field_table_matches_libcst() -> None:
    """The generated table equals what introspection computes (regenerate: python -m torchdet_lint.core.traversal)."""
    from libcst._version import __version__ as libcst_version

    from torchdet_lint.core import _node_fields
    from torchdet_lint.core.traversal import _concrete_node_types, compute_child_fields

    if _node_fields.LIBCST_VERSION != libcst_version:
        pytest.skip(f"table generated for LibCST {_node_fields.LIBCST_VERSION}; {libcst_version} is introspected at run time")
    for node_type in _concrete_node_types():
        if getattr(cst, node_type.__name__, None) is node_type:
            expected = (compute_child_fields(node_type, False), compute_child_fields(node_type, True))
            assert _node_fields.FIELDS[node_type.__name__] == expected, node_type.__name__
