"""One read-only batched traversal of a LibCST tree for many visitors.

LibCST's own `visit_batched` rebuilds every node as it goes (its visitor
shares the transformer machinery), which costs more than half a parse. This
walker follows the same source order and calls the same `visit_<Node>` /
`leave_<Node>` methods, but only reads the tree, skips whitespace and
punctuation nodes no visitor asks for, and uses an explicit stack (no
recursion limit on deeply nested code).
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from dataclasses import fields
from typing import Callable, Dict, List, Sequence, Tuple, Type

import libcst as cst

# Token and trivia nodes: never interesting to a rule unless it says so.
_TRIVIA: Tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.TrailingWhitespace,
    cst.Comment,
    cst.Comma,
    cst.Dot,
    cst.Colon,
    cst.Semicolon,
    cst.AssignEqual,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.BaseAugOp,
    cst.ImportStar,
    cst.Asynchronous,
)
_VISITED_FIELD = re.compile(r"visit_\w+\(\s*self,\s*\"(\w+)\"")
_FIELD_ORDER: Dict[Tuple[type, bool], Tuple[str, ...]] = {}


def child_fields(node_type: type, with_trivia: bool = False) -> Tuple[str, ...]:
    """The fields of a node class that can hold child nodes, in source order.

    LibCST visits children in the order its `_visit_and_replace_children`
    names them (decorators before the name of a def, ...), which is not always
    the dataclass field order; read that order from the method once per class.
    """
    order = _FIELD_ORDER.get((node_type, with_trivia))
    if order is not None:
        return order
    declared = [f.name for f in fields(node_type) if _may_hold_nodes(node_type, f.name, with_trivia)]
    try:
        source = inspect.getsource(node_type._visit_and_replace_children)
        named = []
        for name in _VISITED_FIELD.findall(source):
            if name in declared and name not in named:
                named.append(name)
        order = tuple(named + [n for n in declared if n not in named])
    except (OSError, TypeError):
        order = tuple(declared)
    _FIELD_ORDER[(node_type, with_trivia)] = order
    return order


class BatchedWalker:
    def __init__(self, visitors: Sequence[cst.BatchableCSTVisitor]) -> None:
        self.visit: Dict[str, List[Callable]] = {}
        self.leave: Dict[str, List[Callable]] = {}
        for visitor in visitors:
            for name in _visitor_method_names(type(visitor)):
                kind, _, node_name = name.partition("_")
                table = self.visit if kind == "visit" else self.leave
                table.setdefault(node_name, []).append(getattr(visitor, name))
        wanted = frozenset(self.visit) | frozenset(self.leave)
        self.keep = kept_node_types(wanted)
        self.with_trivia = _wants_trivia(wanted)

    def walk(self, root: cst.CSTNode) -> None:
        visit, leave, keep, with_trivia = self.visit, self.leave, self.keep, self.with_trivia
        stack: List[Tuple[cst.CSTNode, bool]] = [(root, False)]
        pop, push = stack.pop, stack.append
        while stack:
            node, leaving = pop()
            name = type(node).__name__
            if leaving:
                for method in leave.get(name, ()):
                    method(node)
                continue
            for method in visit.get(name, ()):
                method(node)
            push((node, True))
            children: List[cst.CSTNode] = []
            for field_name in child_fields(type(node), with_trivia):
                value = getattr(node, field_name)
                value_type = type(value)
                if value_type in keep:
                    children.append(value)
                elif value_type is tuple or value_type is list:
                    for item in value:
                        if type(item) in keep:
                            children.append(item)
            for child in reversed(children):
                push((child, False))


@functools.lru_cache(maxsize=None)
def _visitor_method_names(visitor_type: type) -> Tuple[str, ...]:
    """`visit_<Node>` / `leave_<Node>` methods a visitor class defines (cached: inspecting is slow)."""
    names = []
    for name in dir(visitor_type):
        kind, _, node_name = name.partition("_")
        if (
            kind in ("visit", "leave")
            and isinstance(getattr(cst, node_name, None), type)
            and getattr(visitor_type, name) is not getattr(cst.BatchableCSTVisitor, name, None)
        ):
            names.append(name)
    return tuple(names)


@functools.lru_cache(maxsize=None)
def kept_node_types(wanted: frozenset) -> frozenset:
    skip = tuple(t for t in _TRIVIA if not any(_subclass_named(t, n) for n in wanted))
    # Exact-type set membership: isinstance() against LibCST's abstract
    # classes goes through ABC machinery and dominated the walk's cost.
    return frozenset(t for t in _concrete_node_types() if not issubclass(t, skip))


@functools.lru_cache(maxsize=None)
def _wants_trivia(wanted: frozenset) -> bool:
    return any(issubclass(t, _TRIVIA) for t in kept_node_types(wanted))


@functools.lru_cache(maxsize=None)
def _concrete_node_types() -> Tuple[type, ...]:
    result, pending = [], [cst.CSTNode]
    while pending:
        node_type = pending.pop()
        pending.extend(node_type.__subclasses__())
        if not inspect.isabstract(node_type):
            result.append(node_type)
    return tuple(result)


def _annotation_types(annotation) -> List[type]:
    """The classes an annotation admits, through Union/Optional/Sequence."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation] if isinstance(annotation, type) else []
    result = []
    for argument in typing.get_args(annotation):
        result.extend(_annotation_types(argument))
    return result


def _may_hold_nodes(node_type: type, field_name: str, with_trivia: bool) -> bool:
    """False for fields that only ever hold trivia (whitespace, punctuation) or plain values."""
    try:
        hints = typing.get_type_hints(node_type)
    except Exception:  # unresolvable annotation: be safe and visit the field
        return True
    annotation = hints.get(field_name)
    if annotation is None:
        return True
    types = [t for t in _annotation_types(annotation) if isinstance(t, type) and issubclass(t, cst.CSTNode)]
    return any(with_trivia or not issubclass(t, _TRIVIA) for t in types)


def _subclass_named(node_type: type, name: str) -> bool:
    """Does a visitor method for `name` concern nodes of `node_type` (or a subclass)?"""
    candidate = getattr(cst, name, None)
    return isinstance(candidate, type) and (issubclass(candidate, node_type) or issubclass(node_type, candidate))
