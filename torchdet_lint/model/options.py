"""Command-line options an entry point's parser defines, and the evidence that needs one.

A draw or loader reached only under `if args.<option>:` (or `... if args.<option> else ...`) cannot
run where `args` is the namespace of a parser that never defines `<option>`: reading a missing
attribute of an `argparse.Namespace` raises before the branch is taken. This holds only where the
whole parser is visible: every `add_argument` literal, no parent parsers, groups or subparsers, no
`parse_known_args`, no `set_defaults(**...)`, the parser and the namespace bound once; and where no
reached code sets the attribute (`args.x = ...`, `setattr`, `vars(args).update`). Anything else
keeps the evidence.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.names import literal
from torchdet_lint.core.traversal import BatchedWalker

OPTION_SEPARATOR = ";"  # between the conditions of one `Site.option`
MAX_OPTION_CONDITIONS = 4  # options on parameters kept per site: the tests of its enclosing branches

# Parser methods that neither add nor hide an option.
_PARSER_READS = frozenset({"add_argument", "set_defaults", "parse_args", "print_help", "print_usage", "format_help", "error"})
_RECEIVERS_NOT_NAMESPACES = frozenset({"self", "cls"})


def evaluated_reads(test: cst.BaseExpression, outcome: Optional[bool]) -> List[Tuple[str, str]]:
    """(name, attribute) reads `<name>.<attribute>` a test certainly evaluates when its truth value is
    `outcome` (None: either): the left operand of `and`/`or` always, the right one of `and` when the
    test held, of `or` when it failed."""
    kind = type(test)
    if kind is cst.Attribute:
        if type(test.value) is cst.Name:
            return [(test.value.value, test.attr.value)]
        return evaluated_reads(test.value, None)
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
        return evaluated_reads(test.expression, None if outcome is None else not outcome)
    if kind is cst.BooleanOperation:
        both = outcome is (type(test.operator) is cst.And)
        found = evaluated_reads(test.left, outcome if both else None)
        return found + evaluated_reads(test.right, outcome) if both else found
    if kind is cst.Comparison:
        return evaluated_reads(test.left, None) + evaluated_reads(test.comparisons[0].comparator, None)
    if kind is cst.Subscript:
        return evaluated_reads(test.value, None)
    return []


def _dest(node: cst.Call) -> Optional[str]:
    """The destination an `add_argument` call defines, or None when it cannot be read."""
    names: List[str] = []
    dest = None
    for arg in node.args:
        if arg.star:
            return None
        value = literal(arg.value)
        if arg.keyword is None:
            if not isinstance(value, str):
                return None
            names.append(value)
        elif arg.keyword.value == "dest":
            if not isinstance(value, str):
                return None
            dest = value
        elif arg.keyword.value == "action" and not isinstance(value, str):
            return None  # an `Action` class may set any attribute
    if dest is not None:
        return dest
    long = [name for name in names if name.startswith("--")]
    short = [name for name in names if name.startswith("-")]
    chosen = long[0][2:] if long else short[0][1:] if short else names[0] if names else None
    return chosen.replace("-", "_") if chosen else None


class _Uses(cst.BatchableCSTVisitor):
    """How a scope binds and uses a parser name and a namespace name (one lean walk of the scope)."""

    def __init__(self, scope: cst.CSTNode, parser: str, namespace: str, is_parser: Callable[[cst.Call], bool]) -> None:
        super().__init__()
        self.parser, self.namespace, self.is_parser = parser, namespace, is_parser
        self.dests: Optional[Set[str]] = set()
        self.parser_bindings = 0
        self.namespace_bindings = 0
        self.handled: Set[int] = set()
        self.root = scope
        self.depth = 0  # enclosing functions below the scope: their bindings are other variables

    def _enter(self, node: cst.CSTNode) -> None:
        if node is not self.root:
            self.depth += 1

    def _leave(self, node: cst.CSTNode) -> None:
        if node is not self.root:
            self.depth -= 1

    visit_FunctionDef = visit_Lambda = _enter
    leave_FunctionDef = leave_Lambda = _leave

    def _bound(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        for name in _names(target):
            if self.depth:
                if name.value == self.parser:
                    self.handled.add(id(name))
                continue
            if name.value == self.parser:
                self.parser_bindings += 1
                self.handled.add(id(name))
                if value is None or not (type(value) is cst.Call and self.is_parser(value)):
                    self.dests = None
            elif name.value == self.namespace:
                self.namespace_bindings += 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bound(target.target, node.value if len(node.targets) == 1 and type(target.target) is cst.Name else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bound(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bound(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bound(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bound(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bound(node.target, None)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name or func.value.value != self.parser:
            return
        self.handled.add(id(func.value))
        method = func.attr.value
        if method not in _PARSER_READS:
            self.dests = None  # groups, subparsers, `parse_known_args`: options this scope cannot list
        elif self.dests is None:
            return
        elif method == "add_argument":
            dest = _dest(node)
            if dest is None:
                self.dests = None
            else:
                self.dests.add(dest)
        elif method == "set_defaults":
            for arg in node.args:
                if arg.keyword is None:
                    self.dests = None
                    return
                self.dests.add(arg.keyword.value)
        elif method == "parse_args" and any(
            arg.star or (arg.keyword is not None and arg.keyword.value == "namespace") or (arg.keyword is None and index > 0)
            for index, arg in enumerate(node.args)
        ):
            self.dests = None  # `parse_args(namespace=obj)` fills an object that may hold anything

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.parser and id(node) not in self.handled:
            self.dests = None  # handed on (`add_options(parser)`), or used otherwise


def _names(target: cst.BaseExpression) -> List[cst.Name]:
    if type(target) is cst.Name:
        return [target]
    if type(target) in (cst.Tuple, cst.List):
        return [name for element in target.elements for name in _names(element.value)]
    if type(target) is cst.StarredElement:
        return _names(target.value)
    return []


def parsed_options(scope: cst.CSTNode, namespace: str, value: cst.BaseExpression, is_parser) -> Optional[List[str]]:
    """For `<namespace> = <parser>.parse_args()` in `scope` (a function, or the module): the options
    the parser defines, when the scope shows them all; else None."""
    if type(value) is not cst.Call:
        return None
    func = value.func
    if type(func) is not cst.Attribute or func.attr.value != "parse_args" or type(func.value) is not cst.Name:
        return None
    uses = _Uses(scope, func.value.value, namespace, is_parser)
    BatchedWalker([uses]).walk(scope)
    if uses.dests is None or uses.parser_bindings != 1 or uses.namespace_bindings != 1:
        return None
    return sorted(uses.dests)


def attribute_writes(node: cst.CSTNode) -> List[str]:
    """Attributes an assignment target or a call sets on an object other than `self`/`cls`; "*" for
    writes it cannot name."""
    kind = type(node)
    if kind is cst.Attribute:
        if type(node.value) is cst.Name and node.value.value not in _RECEIVERS_NOT_NAMESPACES:
            return ["*"] if node.attr.value == "__dict__" else [node.attr.value]
        return []
    if kind is cst.Subscript:
        holder = node.value
        if _vars_of(holder):
            return ["*"]
        return []
    if kind in (cst.Tuple, cst.List):
        return [name for element in node.elements for name in attribute_writes(element.value)]
    if kind is cst.Call:
        func = node.func
        if type(func) is cst.Name and func.value == "setattr" and node.args:
            receiver = node.args[0].value
            if type(receiver) is cst.Name and receiver.value in _RECEIVERS_NOT_NAMESPACES:
                return []
            name = literal(node.args[1].value) if len(node.args) > 1 else None
            return [name] if isinstance(name, str) else ["*"]
        if type(func) is cst.Attribute and func.attr.value in ("update", "setdefault", "__setitem__") and _vars_of(func.value):
            return ["*"]
    return []


def _vars_of(node: cst.BaseExpression) -> bool:
    """`vars(x)` or `x.__dict__` of an object other than `self`/`cls`."""
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "vars" and node.args:
        receiver = node.args[0].value
        return not (type(receiver) is cst.Name and receiver.value in _RECEIVERS_NOT_NAMESPACES)
    if type(node) is cst.Attribute and node.attr.value == "__dict__":
        return not (type(node.value) is cst.Name and node.value.value in _RECEIVERS_NOT_NAMESPACES)
    return False
