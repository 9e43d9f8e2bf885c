"""What the callers of a first-party function or class pass it: the literal arguments of every call,
recorded in the file pass, and the project-wide answer to "which values can this parameter hold?"
(a parameter's default plus what each call passes, followed through callers that pass their own).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple

import libcst as cst

from torchdet_lint.core.catalog import NOT_LITERAL, Sized
from torchdet_lint.core.import_header import ast_dotted_name
from torchdet_lint.core.names import display_length, dotted_name, literal

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from torchdet_lint.model.summary import FileSummary


class Project(Protocol):
    """What the index reads of the project (the project itself asks the index: no import of it here)."""

    summaries: Dict[str, "FileSummary"]

    def resolve(self, display: str, target: str) -> List[Tuple[str, str]]: ...

    def class_node(self, display: str, target: str) -> Optional[Tuple[str, str]]: ...

    def base_classes(self, display: str, name: str, seen: Set[Tuple[str, str]]) -> List[Tuple[str, str]]: ...


# A value the file pass cannot read: a non-literal argument, a required parameter's default.
OPEN = "\x00open"
STAR = "*"  # the key of a `*args`/`**kwargs` splat: it may carry any parameter
MAX_CALLS = 24  # calls kept per target and file; past that the target's values are open
MAX_DEPTH = 3  # callers followed through parameters they pass on
MAX_VALUES = 16  # distinct values kept per parameter


@dataclass(frozen=True)
class Passed:
    """An argument that is a parameter of the calling function, never rebound there: its values
    are what that function's callers pass (`def build(mode="mean"): return Bag(mode=mode)`)."""

    name: str
    position: Optional[int]  # as the caller's own callers count it (a method's receiver left out)
    default: Any  # literal default, or OPEN


@dataclass(frozen=True)
class Among:
    """An argument that is a loop variable over a literal table (`for size, seed in [(0.2, 42),
    (0.8, 7)]:`): one of these values at each call."""

    values: Tuple[Any, ...]


# One call: (the calling function's key, ((argument key, value), ...)); an argument key is the keyword,
# "#<position>" or STAR; a value is a literal, a `Sized` display, a `Passed` or OPEN.
CallArguments = Tuple[str, Tuple[Tuple[str, Any], ...]]


_DIRECTORIES: Dict[Tuple[str, str], bool] = {}


def project_directory(root: "Path", target: str) -> bool:
    """`tricks.bag.Bag` where `tricks/` is a directory of the project without `__init__.py` (a
    namespace package, which the first-party names leave out): its calls are first-party too."""
    head = target.split(".", 1)[0]
    key = (str(root), head)
    found = _DIRECTORIES.get(key)
    if found is None:
        found = _DIRECTORIES[key] = bool(head) and (root / head).is_dir()
    return found


def plain_literal(node: Optional[cst.BaseExpression]) -> Any:
    """A literal value the summaries can keep (strings, numbers, booleans, None and tuples of them),
    else OPEN."""
    if node is None:
        return OPEN
    value = literal(node)
    if value is NOT_LITERAL or not _plain(value):
        return OPEN
    return tuple(value) if isinstance(value, list) else value


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


# Context managers that expect their block to raise: a test's `with pytest.raises(ValueError):`
# around a call with bad arguments. The call stops at the error, so what it passes is no value its
# parameters hold in a run (the default it leaves out included).
_RAISES_CONTEXTS = frozenset({"pytest.raises"})
_RAISES_METHODS = frozenset({"assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})


def _raises_context(func_name: Optional[str], dotted: Optional[str]) -> bool:
    if func_name in _RAISES_CONTEXTS:
        return True
    return dotted is not None and dotted.startswith("self.") and dotted[5:] in _RAISES_METHODS


def expected_to_raise(node: cst.With, qualified: Callable[[cst.BaseExpression], Optional[str]]) -> Optional[cst.Call]:
    """The call a `with pytest.raises(...)` (or `self.assertRaises(...)`) block expects to raise:
    the outermost call of its last statement (`f(bad)`, `x = f(bad)`). Earlier statements and the
    calls that compute its arguments run as usual. None for any other `with`."""
    if not any(
        type(item.item) is cst.Call and _raises_context(qualified(item.item.func), dotted_name(item.item.func))
        for item in node.items
    ):
        return None
    statements: Sequence[cst.CSTNode] = node.body.body  # a block's statements, a one-line suite's small ones
    if statements and type(node.body) is cst.IndentedBlock:
        statements = statements[-1].body if type(statements[-1]) is cst.SimpleStatementLine else ()
    if not statements:
        return None
    last = statements[-1]
    value = getattr(last, "value", None) if isinstance(last, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    return value if type(value) is cst.Call else None


def ast_expected_to_raise(node: "ast.AST", qualified: Callable[["ast.expr"], Optional[str]]) -> Optional["ast.Call"]:
    """`expected_to_raise` for a file the pre-filter only scanned."""
    if not isinstance(node, (ast.With, ast.AsyncWith)) or not node.body:
        return None
    if not any(
        isinstance(item.context_expr, ast.Call)
        and _raises_context(qualified(item.context_expr.func), ast_dotted_name(item.context_expr.func))
        for item in node.items
    ):
        return None
    last = node.body[-1]
    value = last.value if isinstance(last, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    return value if isinstance(value, ast.Call) else None


def parameter_table(node: cst.FunctionDef, method: bool) -> Dict[str, Tuple[Optional[int], Any]]:
    """Each parameter of a `def`: (its position as callers count it, None for keyword-only; its
    literal default, or OPEN)."""
    params = node.params
    positional = [*params.posonly_params, *params.params]
    if method and positional:
        positional = positional[1:]
    table: Dict[str, Tuple[Optional[int], Any]] = {}
    for index, param in enumerate(positional):
        table[param.name.value] = (index, plain_literal(param.default) if param.default is not None else OPEN)
    for param in params.kwonly_params:
        table[param.name.value] = (None, plain_literal(param.default) if param.default is not None else OPEN)
    return table


def call_arguments(
    call: cst.Call,
    parameters: Dict[str, Tuple[Optional[int], Any]],
    bound: Callable[[str], List[Any]],
    looped: Optional[Callable[[str], Optional[List[cst.BaseExpression]]]] = None,
    reaching: Optional[Callable[[str], Optional[cst.BaseExpression]]] = None,
) -> Tuple[Tuple[str, Any], ...]:
    """A call's arguments as the summary keeps them; `parameters` are the calling function's (a name
    among them is passed on, unless the project finds it rebound: see `Passed`). A `**name` splat of
    a name `bound` only to a dict display with string keys (`dd = {"device": device}`) passes those
    keywords; any other splat may pass anything. A tuple or list display that is no literal passes
    its length (`Sized`), also through a name whose `reaching` value is one (`pad = (0, 0, p, p)`
    just before the call)."""
    found: List[Tuple[str, Any]] = []
    position = 0
    for arg in call.args:
        if arg.star:
            keywords = _dict_keys(arg, bound)
            found.extend((key, OPEN) for key in keywords) if keywords is not None else found.append((STAR, OPEN))
            continue
        if arg.keyword is not None:
            key = arg.keyword.value
        else:
            key = f"#{position}"
            position += 1
        value = arg.value
        if type(value) is cst.Name and value.value in parameters:
            where, default = parameters[value.value]
            found.append((key, Passed(value.value, where, default)))
        elif type(value) is cst.Name and looped is not None and looped(value.value):
            values = tuple(plain_literal(one) for one in looped(value.value) or ())
            found.append((key, Among(values) if OPEN not in values else OPEN))
        else:
            passed = plain_literal(value)
            if passed == OPEN:
                passed = _sized(value, reaching)
            found.append((key, passed))
    return tuple(found)


def _sized(value: cst.BaseExpression, reaching: Optional[Callable[[str], Optional[cst.BaseExpression]]]) -> Any:
    """A display's length as a `Sized` value, else OPEN."""
    if type(value) is cst.Name and reaching is not None:
        value = reaching(value.value) or value
    length = display_length(value)
    return OPEN if length is None else Sized(length)


def _dict_keys(arg: cst.Arg, bound: Callable[[str], List[Any]]) -> Optional[List[str]]:
    if arg.star != "**" or type(arg.value) is not cst.Name:
        return None
    values = bound(arg.value.value)
    if not values:
        return None
    keys: List[str] = []
    for value in values:
        if type(value) is not cst.Dict:
            return None
        for element in value.elements:
            key = literal(element.key) if type(element) is cst.DictElement else None
            if not isinstance(key, str):
                return None
            keys.append(key)
    return keys


def ast_call_arguments(call: "ast.Call") -> Tuple[Tuple[str, Any], ...]:
    """`call_arguments` for a file the pre-filter only scanned: literals are read, every name is
    OPEN (its parameters are not followed)."""
    found: List[Tuple[str, Any]] = []
    position = 0
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            found.append((STAR, OPEN))
            continue
        found.append((f"#{position}", _ast_literal(arg)))
        position += 1
    for keyword in call.keywords:
        found.append((keyword.arg, _ast_literal(keyword.value)) if keyword.arg is not None else (STAR, OPEN))
    return tuple(found)


def _ast_literal(node: "ast.expr") -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return Sized(len(node.elts))
        return OPEN
    if not _plain(value):
        return OPEN
    return tuple(value) if isinstance(value, list) else value


def open_rebound(calls: List[Tuple[str, Any]], rebound: Set[str]) -> Tuple[Tuple[str, Any], ...]:
    return tuple((key, OPEN if isinstance(value, Passed) and value.name in rebound else value) for key, value in calls)


# -- the project's answer ------------------------------------------------------------------------

Node = Tuple[str, str]  # (file, function key)


class ArgumentIndex:
    """Every recorded call, by the first-party function it runs (a construction: the `__init__`
    that runs), and the functions and classes used otherwise than called (handed on, stored in a
    registry, named by a string, partially applied), whose callers are out of sight."""

    def __init__(self, project: "Project") -> None:
        self.project = project
        self.callers: Dict[Node, List[Tuple[str, CallArguments]]] = {}
        self.loose: Set[Node] = set()
        self.loose_classes: Set[Node] = set()
        for display, summary in project.summaries.items():
            for target, calls in summary.call_arguments.items():
                for node in self._nodes(display, target):
                    self.callers.setdefault(node, []).extend((display, call) for call in calls)
                    if len(calls) >= MAX_CALLS:
                        self.loose.add(node)
            stored = [t for members in summary.registries.values() for t in members]
            stored += list(summary.partials.values())
            for target in stored:
                self._loosen(display, target)
            for key, function in summary.functions.items():
                for target in function.references:
                    self._loosen(display, target, key)
            for target in summary.named_targets:
                self._loosen(display, target)

    def _nodes(self, display: str, target: str) -> List[Node]:
        try:
            return self.project.resolve(display, target)
        except RecursionError:  # pragma: no cover - a pathological chain of re-exports
            return []

    def _loosen(self, display: str, target: str, referrer: str = "") -> None:
        if target.startswith(".") and referrer.startswith(target[1:] + "."):
            return  # a class named in its own methods (`super(Bag, self)`, `isinstance(x, Bag)`)
        found = self.project.class_node(display, target) if not target.startswith("<") else None
        if found is not None:
            self.loose_classes.add(found)
        self.loose.update(self._nodes(display, target))

    def values(
        self,
        node: Node,
        parameter: str,
        position: Optional[int],
        default: Any,
        depth: int = 0,
        within: Optional[AbstractSet[Node]] = None,
    ) -> Optional[List[Any]]:
        """The values `parameter` of the function `node` can hold: its default where a call leaves
        it out, and what each call passes (only the calls made by the functions `within`, one run's,
        when given). None when some value is out of sight: no call seen, a non-literal argument, a
        splat, a caller used otherwise than called."""
        callers = self.callers.get(node)
        if callers and within is not None:
            callers = [call for call in callers if (call[0], call[1][0]) in within]
        if not callers or node in self.loose or depth > MAX_DEPTH:
            return None
        found: List[Any] = []
        for display, (caller, arguments) in callers:
            keyed = dict(arguments)
            if parameter in keyed:
                value = keyed[parameter]
            elif position is not None and f"#{position}" in keyed:
                value = keyed[f"#{position}"]
            elif STAR in keyed or default == OPEN:
                return None
            else:
                value = default
            if isinstance(value, Passed):
                passed = self.values((display, caller), value.name, value.position, value.default, depth + 1, within)
                if passed is None:
                    return None
                more = passed
            elif isinstance(value, Among):
                more = list(value.values)
            elif value == OPEN:
                return None
            else:
                more = [value]
            for one in more:
                if one not in found:
                    found.append(one)
            if len(found) > MAX_VALUES:
                return None
        return found


def index_of(project: "Project") -> ArgumentIndex:
    found = getattr(project, "_argument_index", None)
    if found is None:
        found = ArgumentIndex(project)
        project._argument_index = found  # type: ignore[attr-defined]
    return found


def parameter_values(project: "Project", display: str, key: str, parameter: str) -> Optional[List[Any]]:
    """The values a module-level function's parameter can hold over the whole project (see
    `ArgumentIndex.values`); None when they are not all visible."""
    summary = project.summaries.get(display)
    table = summary.parameters.get(key) if summary is not None else None
    if table is None or parameter not in table:
        return None
    position, default = table[parameter]
    return index_of(project).values((display, key), parameter, position, default)


def attribute_values(project: "Project", display: str, class_name: str, attribute: str) -> Optional[List[Any]]:
    """The values `self.<attribute>` can hold when the class's `__init__` is the only place that
    sets it, from one of its parameters: that parameter's values over every construction (set to a
    display instead: its length, a `Sized` value). None when
    another method or a subclass sets it, a subclass has its own `__init__`, or the class is used
    otherwise than constructed."""
    summary = project.summaries.get(display)
    cls = summary.classes.get(class_name) if summary is not None else None
    if cls is None or attribute in cls.reassigned_attributes:
        return None
    length = cls.attribute_lengths.get(attribute)
    if length is not None:
        # `self.padding = [p] * 4`: that length wherever it is read, unless something else sets it.
        if attribute in cls.attribute_parameters or _subclassed(project, display, class_name, attribute):
            return None
        return [Sized(length)]
    parameter = cls.attribute_parameters.get(attribute)
    init = f"{class_name}.__init__"
    table = summary.parameters.get(init)
    if parameter is None or table is None or parameter not in table:
        return None
    index = index_of(project)
    if (display, class_name) in index.loose_classes or _subclassed(project, display, class_name, attribute):
        return None
    position, default = table[parameter]
    return index.values((display, init), parameter, position, default)


def _subclassed(project: "Project", display: str, class_name: str, attribute: str) -> bool:
    """A first-party subclass that may set the attribute otherwise: it has an `__init__` of its own,
    or sets it in some method."""
    for other, summary in project.summaries.items():
        for name, cls in summary.classes.items():
            if (other, name) == (display, class_name) or not cls.bases:
                continue
            chain = project.base_classes(other, name, set())
            if (display, class_name) in chain[1:] and (
                "__init__" in cls.methods or attribute in cls.reassigned_attributes or attribute in cls.attribute_parameters
            ):
                return True
    return False
