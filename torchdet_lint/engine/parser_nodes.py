"""Node constructors for LibCST's parser: unchecked, and direct while it builds a tree.

LibCST's node classes are frozen dataclasses with slots. Their generated
`__init__` stores each field through `object.__setattr__` (a frozen class
refuses plain assignment) and then calls `__post_init__`, which validates the
node: whitespace patterns, parentheses, operator spacing. Those checks are
there for trees built by hand; nodes made by the parser are valid by
construction, and the checks cost about 15% of a parse (LibCST's own comment
there says as much).

While the parser builds a tree, nothing is validated, and every node class's
constructor stores each field straight through its slot: the same fields,
the same defaults, the same node (`tests/test_parser_nodes.py` compares the
trees). That saves another 7% of a parse over skipping the checks alone.
Outside a parse the constructor calls LibCST's own, checks included.
Building the constructors costs about as much as parsing 600 KB, so they are
built once per process, and only after the process has parsed enough source
to repay that (a one-file run never does); until then, and wherever LibCST's classes are
laid out differently, the parser runs with the checks skipped only.

A node another thread builds meanwhile goes unchecked too; every fix is
verified by parsing its output, so an invalid one is still never written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
from typing import Callable, Dict, Iterator, List, Optional

import libcst as cst
from libcst._nodes.base import CSTNode

# Source parsed before building the direct constructors is worth it. Measured in instructions
# (valgrind): building them costs 231 M, and they save 370 per byte parsed, so the build is
# repaid after ~620 KB; a run that parses twice this much comes out ahead.
_WORTH_BUILDING_AFTER = 1_000_000

_VALIDATE = CSTNode.__dict__.get("__post_init__")
_lock = threading.Lock()
_depth = 0
_parsing = [False]  # read by the direct constructors: true while a parse runs
_parsed_so_far = 0
_built: Optional[bool] = None  # whether the direct constructors are in place; None until tried


def _skip_validation(self: CSTNode) -> None:
    pass


def _node_classes() -> List[type]:
    """The concrete node classes LibCST exports: the ones its parser instantiates."""
    found = []
    for name in dir(cst):
        value = getattr(cst, name)
        if isinstance(value, type) and issubclass(value, CSTNode) and "__init__" in value.__dict__:
            if dataclasses.is_dataclass(value) and not inspect.isabstract(value):
                found.append(value)
    return found


def _slot(node_class: type, name: str):
    for owner in node_class.__mro__:
        if name in owner.__dict__:
            found = owner.__dict__[name]
            return found if type(found).__name__ == "member_descriptor" else None
    return None


def _direct_constructor(node_class: type, original: Callable[..., None]) -> Optional[Callable[..., None]]:
    """An `__init__` with the dataclass's parameters and defaults that sets each slot directly
    while the parser runs and calls LibCST's own `__init__` otherwise, or None when the class
    is not laid out as expected (no slot for a field, keyword-only fields)."""
    parameters: List[str] = []
    stores: List[str] = []
    passed: List[str] = []
    names: Dict[str, object] = {"_parsing": _parsing, "_original": original}
    for index, field in enumerate(dataclasses.fields(node_class)):
        slot = _slot(node_class, field.name)
        if slot is None or field.kw_only:
            return None
        names[f"_set{index}"] = slot.__set__
        if field.default is not dataclasses.MISSING:
            names[f"_default{index}"] = field.default
            value = field.name if field.init else f"_default{index}"
            default = f"=_default{index}"
        elif field.default_factory is not dataclasses.MISSING:
            names[f"_factory{index}"] = field.default_factory
            names["_unset"] = dataclasses.MISSING
            value = f"_factory{index}() if {field.name} is _unset else {field.name}" if field.init else f"_factory{index}()"
            default = "=_unset"
        else:
            if not field.init:
                return None
            value, default = field.name, ""
        if field.init:
            parameters.append(field.name + default)
            passed.append(value)
        stores.append(f"_set{index}(self, {value})")
    source = (
        f"def _make({', '.join(names)}):\n"
        f"  def __init__(self{''.join(', ' + parameter for parameter in parameters)}):\n"
        "    if _parsing[0]:\n"
        + "".join(f"      {store}\n" for store in stores or ["pass"])
        + "    else:\n"
        + f"      _original(self{''.join(', ' + value for value in passed)})\n"
        + "  return __init__\n"
    )
    namespace: Dict[str, object] = {}
    exec(compile(source, f"<direct constructor of {node_class.__name__}>", "exec"), namespace)
    constructor = namespace["_make"](**names)  # type: ignore[operator]
    constructor.__qualname__ = f"{node_class.__name__}.__init__"
    constructor.__wrapped__ = original
    return constructor


def _build() -> bool:
    """Give every node class its direct constructor for the rest of the process. (Swapping a
    class's `__init__` makes Python update the class and all its subclasses: done around every
    parse, that cost more than the constructors save.)"""
    built: Dict[type, Callable[..., None]] = {}
    try:
        for node_class in _node_classes():
            constructor = _direct_constructor(node_class, node_class.__dict__["__init__"])
            if constructor is not None:
                built[node_class] = constructor
    except Exception:  # another LibCST layout: its own constructors, the checks skipped
        return False
    for node_class, constructor in built.items():
        type.__setattr__(node_class, "__init__", constructor)
    return bool(built)


def _begin(size: int) -> None:
    global _built, _parsed_so_far
    _parsed_so_far += size
    if _built is None and _parsed_so_far >= _WORTH_BUILDING_AFTER:
        _built = _build()
    if _VALIDATE is not None and not _built:
        CSTNode.__post_init__ = _skip_validation
    _parsing[0] = True


def _end() -> None:
    _parsing[0] = False
    if CSTNode.__dict__.get("__post_init__") is not _VALIDATE:
        CSTNode.__post_init__ = _VALIDATE


@contextlib.contextmanager
def parser_nodes(size: int) -> Iterator[None]:
    """Direct, unchecked node constructors while the parser builds a tree of `size` characters."""
    global _depth
    with _lock:
        if _depth == 0:
            _begin(size)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _end()
