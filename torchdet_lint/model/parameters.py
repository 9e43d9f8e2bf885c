"""Parameters passed on: which function and parameter an argument name is, and what every
caller in the same file passes for it. Answers whether a `generator=` argument is a generator
object of its own (the draw does not touch the global RNG) or may be None (it does), and
whether a seed parameter may keep its `None` default. Read lazily, once per file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set, Tuple
from weakref import WeakKeyDictionary

import libcst as cst

from torchdet_lint.core.names import arg_value, find_arg, literal
from torchdet_lint.core.traversal import sub_nodes

MAX_FOLLOWED = 8  # parameters followed from caller to caller


def generator_given(context, call: cst.Call, position: Optional[int] = None) -> bool:
    """`call` passes a generator that is not None: `generator=g`, not `generator=None`, and not a
    parameter of the enclosing function that defaults to None unless every caller in this
    file passes a generator for it (a caller in another file is not seen)."""
    value = arg_value(call, "generator", position)
    if value is None or literal(value) is None:
        return False
    return context is None or not none_by_default(context, value)


def none_by_default(context, value: cst.BaseExpression) -> bool:
    """`value`, an argument of a call, is a parameter of the enclosing function that defaults to
    None, is never rebound there, and may keep its default: the function has no caller in this
    file, or one that leaves it out or passes None."""
    if type(value) is cst.Name and _parameters(context).unreadable:
        return True
    passed = passed_parameter(context, value)
    if passed is None or not _defaults_to_none(*passed):
        return False
    return not every_caller_passes(context, value, lambda given: literal(given) is not None, _defaults_to_none)


def _defaults_to_none(function: "Function", parameter: str) -> bool:
    default = function.defaults.get(parameter)
    return default is not None and literal(default) is None


def passed_parameter(context, value: cst.BaseExpression) -> Optional[Tuple["Function", str]]:
    """The function and parameter that `value` (a name given as an argument of a call in that
    function) is, when the parameter is never rebound in the function's body."""
    if type(value) is not cst.Name:
        return None
    return _parameters(context).passed_on.get(id(value))


def every_caller_passes(
    context,
    value: cst.BaseExpression,
    accept: Callable[[cst.BaseExpression], bool],
    follow: Callable[["Function", str], bool] = lambda function, parameter: True,
) -> bool:
    """`value` is a parameter passed on (`passed_parameter`), its function has callers in this
    file, and each gives it something `accept`s (the parameter's default where it leaves it out;
    a parameter of the caller's own that `follow` picks is followed to its callers in turn). A
    function used otherwise than called (passed, stored) has callers out of sight: False."""
    passed = passed_parameter(context, value)
    return passed is not None and _parameters(context).every_caller(passed[0], passed[1], accept, follow, set())


@dataclass
class Function:
    name: str
    method: bool  # called as `obj.name(...)`, its first parameter bound
    positions: Dict[str, int] = field(default_factory=dict)  # positional parameters, as the caller counts them
    defaults: Dict[str, cst.BaseExpression] = field(default_factory=dict)


@dataclass
class _Parameters:
    """A file's parameters passed on as arguments (id of the `Name` -> function and parameter),
    and every call by name."""

    passed_on: Dict[int, Tuple[Function, str]] = field(default_factory=dict)
    calls: Dict[Tuple[bool, str], List[cst.Call]] = field(default_factory=dict)  # (as a method, name) -> calls
    loose: Set[Tuple[bool, str]] = field(default_factory=set)  # names also used otherwise than called
    unreadable: bool = False  # the file could not be read: any name may be a parameter that keeps `None`

    def every_caller(
        self,
        function: Function,
        parameter: str,
        accept: Callable[[cst.BaseExpression], bool],
        follow: Callable[[Function, str], bool],
        followed: Set[Tuple[str, str]],
    ) -> bool:
        key = (function.method, function.name)
        callers = self.calls.get(key)
        if not callers or key in self.loose or len(followed) >= MAX_FOLLOWED or (function.name, parameter) in followed:
            return False
        followed = followed | {(function.name, parameter)}
        for call in callers:
            found = find_arg(call, parameter, function.positions.get(parameter))
            if found is None:
                default = function.defaults.get(parameter)
                if default is None or any(arg.star for arg in call.args) or not accept(default):
                    return False
                continue
            if found.star:
                return False
            passed = self.passed_on.get(id(found.value))
            if passed is not None and follow(*passed):
                if not self.every_caller(*passed, accept, follow, followed):
                    return False
            elif not accept(found.value):
                return False
        return True


_CACHE: "WeakKeyDictionary[object, _Parameters]" = WeakKeyDictionary()


def _parameters(context) -> _Parameters:
    found = _CACHE.get(context)
    if found is None:
        try:
            found = _Scanner().scan(context.module)
        except RecursionError:
            found = _Parameters(unreadable=True)  # an expression nested too deeply to read
        _CACHE[context] = found
    return found


class _Scanner:
    def __init__(self) -> None:
        self.result = _Parameters()
        # Enclosing functions, innermost last: (the function, its parameters never rebound, every
        # name it binds).
        self.stack: List[Tuple[Function, Set[str], Set[str]]] = []
        self.callees: Set[int] = set()  # the `func` of calls, and names that are no reference

    def scan(self, module: cst.Module) -> _Parameters:
        for statement in module.body:
            self._walk(statement, None)
        return self.result

    def _walk(self, node: cst.CSTNode, class_name: Optional[str]) -> None:
        kind = type(node)
        if kind is cst.FunctionDef:
            self._function(node, class_name)
            return
        if kind is cst.ClassDef:
            self.callees.add(id(node.name))
            for child in sub_nodes(node):
                self._walk(child, node.name.value)
            return
        if kind is cst.Call:
            self._call(node)
        elif kind is cst.Name and id(node) not in self.callees:
            self.result.loose.add((False, node.value))
        elif kind is cst.Attribute and id(node) not in self.callees:
            self.result.loose.add((True, node.attr.value))
            self.callees.add(id(node.attr))
        elif kind in (cst.Param, cst.ImportAlias, cst.AsName):
            return
        for child in sub_nodes(node):
            self._walk(child, None if kind is cst.Lambda else class_name)

    def _function(self, node: cst.FunctionDef, class_name: Optional[str]) -> None:
        self.callees.add(id(node.name))
        params = node.params
        static = any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in node.decorators)
        method = class_name is not None and not static
        positional = [*params.posonly_params, *params.params]
        function = Function(node.name.value, method)
        for index, param in enumerate(positional[1:] if method else positional):
            function.positions[param.name.value] = index
        named = (*positional, *params.kwonly_params)
        function.defaults = {p.name.value: p.default for p in named if p.default is not None}
        bound = _bound_names(node.body)
        kept = {p.name.value for p in named if p.name.value not in bound}
        for decorator in node.decorators:
            self._walk(decorator, class_name)
        for param in named:
            if param.default is not None:
                self._walk(param.default, class_name)
        self.stack.append((function, kept, bound | {p.name.value for p in named}))
        self._walk(node.body, None)
        self.stack.pop()

    def _call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Name:
            self.callees.add(id(func))
            self.result.calls.setdefault((False, func.value), []).append(node)
        elif type(func) is cst.Attribute:
            self.callees.add(id(func))
            self.callees.add(id(func.attr))
            self.result.calls.setdefault((True, func.attr.value), []).append(node)
        for arg in node.args:
            if arg.keyword is not None:
                self.callees.add(id(arg.keyword))
            value = arg.value
            if type(value) is not cst.Name:
                continue
            for function, kept, bound in reversed(self.stack):
                if value.value in bound:
                    if value.value in kept:
                        self.result.passed_on[id(value)] = (function, value.value)
                    break


def _bound_names(body: cst.CSTNode) -> Set[str]:
    """The names a function body binds (not in nested functions or classes)."""
    found: Set[str] = set()
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in (cst.FunctionDef, cst.ClassDef):
            found.add(node.name.value)
            continue
        if kind is cst.Lambda:
            continue
        if kind is cst.AssignTarget or kind is cst.AugAssign or kind is cst.AnnAssign or kind is cst.NamedExpr:
            _target_names(node.target, found)
        elif kind is cst.For or kind is cst.CompFor:
            _target_names(node.target, found)
        elif kind is cst.AsName:
            _target_names(node.name, found)
        elif kind is cst.Global or kind is cst.Nonlocal:
            found.update(n.name.value for n in node.names)
        stack.extend(sub_nodes(node))
    return found


def _target_names(target: cst.CSTNode, found: Set[str]) -> None:
    if type(target) is cst.Name:
        found.add(target.value)
    elif type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            _target_names(element.value, found)
    elif type(target) is cst.StarredElement:
        _target_names(target.value, found)
