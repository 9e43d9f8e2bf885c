"""TDL107 `unordered-set-iteration`: a set of strings put in an order that follows
string hashes. The walk only notes which functions build sets (and the names they call);
at the end of the file those functions are read statement by statement, a small local
dataflow over names, so the many files and functions without sets cost almost nothing.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.call_edits import wrapped_in
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import _BUILTIN_NAMES, canonical, dotted_name
from torchdet_lint.core.rule import FixAvailability, Rule
from torchdet_lint.core.traversal import child_fields, kept_node_types

# -- how a value is used ----------------------------------------------------------------------
_FREE = 0  # order-free: `len`, `in`, `min`, a set operation, display
_SORTED = 1  # passed through `sorted(...)` / `.sort()`
_ORDER = 2  # put in order: the order reaches data
_INDEX = 3  # put in order to build an index mapping (counts for sets of unknown elements too)
_OTHER = 4  # handed on to something unknown: what a set became is put in order, a set itself is not

# -- what an element is known to be ---------------------------------------------------------------
_STR = "str"  # a string (or bytes, or a path): hashed with PYTHONHASHSEED
_NONSTR = "nonstr"  # an int, float, bool or None: hashed the same in every run

_NOTHING = "nothing"  # the elements of an empty list, until something is appended

_PENDING, _SORTED_STATE, _FIRED = 0, 1, 2

# Last names of the calls whose qualified name the analysis needs (resolved after the walk, from
# the function's own imports and the module's final bindings); any other call is read by its
# spelling only.
_RESOLVE = frozenset(
    """set frozenset list tuple sorted reversed len min max sum any all isinstance bool hash id print repr str
    format chr int float ord round abs enumerate zip dict iter next map filter open Counter listdir glob iglob
    walk scandir basename dirname join abspath realpath relpath normpath expanduser expandvars splitext split
    splitdrive reader DictReader array asarray tensor as_tensor LongTensor Tensor unique choice choices sample
    shuffle permutation warn info debug warning error exception critical log Path PurePath PosixPath range vars""".split()
)
_STR_BUILTINS = frozenset({"builtins.str", "builtins.repr", "builtins.format", "builtins.chr"})
_NONSTR_BUILTINS = frozenset(
    {
        "builtins.len",
        "builtins.int",
        "builtins.float",
        "builtins.ord",
        "builtins.round",
        "builtins.abs",
        "builtins.hash",
        "builtins.id",
        "builtins.bool",
        "builtins.isinstance",
        "builtins.sum",
        "builtins.any",
        "builtins.all",
    }
)
_ORDER_FREE_CALLS = frozenset(
    {
        "builtins.len",
        "builtins.min",
        "builtins.max",
        "builtins.sum",
        "builtins.any",
        "builtins.all",
        "builtins.isinstance",
        "builtins.bool",
        "builtins.hash",
        "builtins.id",
        "builtins.print",
        "builtins.repr",
        "builtins.str",
        "builtins.format",
        "builtins.next",
        "collections.Counter",
        "warnings.warn",
    }
)
_LISTINGS = frozenset({"os.listdir", "glob.glob", "glob.iglob"})
_PATHS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_TO_ARRAY = frozenset({"numpy.array", "numpy.asarray", "torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.Tensor"})
_DRAWS = frozenset({"choice", "choices", "sample", "shuffle", "permutation"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_STR_METHODS = frozenset(
    {
        "lower",
        "upper",
        "strip",
        "lstrip",
        "rstrip",
        "title",
        "capitalize",
        "casefold",
        "zfill",
        "removeprefix",
        "removesuffix",
        "decode",
        "format",
        "swapcase",
        "ljust",
        "rjust",
        "center",
    }
)
_SPLITS = frozenset({"split", "rsplit", "splitlines"})
_NUMBER_METHODS = frozenset({"item", "numel"})  # a tensor's (or array's) Python number
_SET_RESULTS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_SET_UPDATES = frozenset({"update", "intersection_update", "symmetric_difference_update"})
_SET_OPERATORS = (cst.BitOr, cst.BitAnd, cst.Subtract, cst.BitXor)
# A loop over a set whose body does one of these puts the set's order into data.
_BUILDING_METHODS = frozenset({"append", "extend", "insert", "appendleft"})
_TORCH_DRAWS = frozenset(
    "torch." + name
    for name in (
        "rand",
        "randn",
        "randint",
        "randperm",
        "normal",
        "bernoulli",
        "multinomial",
        "rand_like",
        "randn_like",
        "randint_like",
    )
)
_LOOP_DRAWS = frozenset(
    {
        "choice",
        "choices",
        "sample",
        "shuffle",
        "permutation",
        "randint",
        "integers",
        "randrange",
        "rand",
        "randn",
        "randperm",
        "normal_",
        "uniform_",
    }
)


class _Set:
    """A set object: what its elements are, as a list of parts (an element kind, or another
    `_Set` whose elements it shares). A function's return slot is a `_Set` too."""

    __slots__ = ("parts", "slot", "singleton", "declared", "elements", "owner", "filled_elsewhere", "meet")

    def __init__(self, parts: Optional[list] = None, slot: bool = False) -> None:
        self.parts = parts if parts is not None else []
        self.slot = slot
        self.singleton = False  # checked to hold one element (`len(s) == 1`): its order is fixed
        # What its annotation states: False (none), `_STR` / `_NONSTR` (`set[str]`), None (`set[Node]`).
        self.declared: object = False
        self.elements: Optional["_Set"] = None  # a call's result: what iterating it gives, set or not
        self.owner: Optional[cst.FunctionDef] = None  # the function whose returned elements these are
        self.filled_elsewhere = False  # handed, still empty, to a call that may fill it
        # An intersection (`a & b`, `a.intersection(b)`): its elements are in every part, so they
        # are strings when one part holds only strings.
        self.meet = False


class _Ordered:
    """What a set became once put in order (`list(s)`, a comprehension over it, `",".join(s)`):
    reported when used in an order-dependent way before it is sorted."""

    __slots__ = ("set", "node", "item", "state", "how")

    def __init__(self, set_: _Set, node: Optional[cst.BaseExpression], item: object) -> None:
        self.set = set_
        self.node = node
        self.item = item
        self.state = _PENDING
        self.how = _FREE  # the use that put it in order


class _Seq:
    """An iterable in a fixed order whose elements are `item` (a file's lines, `x.split()`)."""

    __slots__ = ("item",)

    def __init__(self, item: object) -> None:
        self.item = item


class _Elem:
    """An element of a set (a loop variable over it)."""

    __slots__ = ("set",)

    def __init__(self, set_: _Set) -> None:
        self.set = set_


class _Mapping:
    """A dict whose keys are `key` (`_STR`, `_NONSTR`, or None when unknown): what its
    `.keys()` view holds. Anything else done with it is not followed."""

    __slots__ = ("key",)

    def __init__(self, key: object) -> None:
        self.key = key


class _KeysView:
    """`d.keys()`: iterated in insertion order, but a set operation on it (`d.keys() - other`)
    makes a set of its keys."""

    __slots__ = ("key",)

    def __init__(self, key: object) -> None:
        self.key = key


class _TupleValue:
    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items


class _Frame:
    """A function (or the module's own code) as the walk saw it."""

    __slots__ = ("node", "class_name", "builds_set", "calls", "self_calls")

    def __init__(self, node: Optional[cst.CSTNode], class_name: Optional[str]) -> None:
        self.node = node
        self.class_name = class_name  # the class a method is defined in
        self.builds_set = False
        self.calls: Set[str] = set()
        self.self_calls: Set[str] = set()


_SET_TYPES = frozenset({"set", "Set", "frozenset", "FrozenSet", "AbstractSet", "MutableSet"})


def _annotated_set(annotation: Optional[cst.Annotation]) -> object:
    """`set[str]`, `Set[int]`, `frozenset[str]`: the element kind the annotation gives
    (`_STR`, `_NONSTR`, or None for another element type); False when it is no set type."""
    if annotation is None:
        return False
    node = annotation.annotation
    if type(node) is not cst.Subscript or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return False
    base = node.value
    name = base.value if type(base) is cst.Name else (base.attr.value if type(base) is cst.Attribute else None)
    if name not in _SET_TYPES:
        return False
    element = node.slice[0].slice.value
    if type(element) is cst.Name:
        if element.value in ("str", "bytes"):
            return _STR
        if element.value in ("int", "bool", "float"):
            return _NONSTR
    return None


_SEQUENCE_TYPES = frozenset(
    {"list", "List", "tuple", "Tuple", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection"}
)
_MAPPING_TYPES = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "DefaultDict", "defaultdict"})
_NUMBER_NAMES = frozenset({"int", "bool", "float"})


def _subscripted(annotation: Optional[cst.Annotation]) -> Optional[Tuple[str, List[cst.BaseExpression]]]:
    """`List[int]` -> ("List", [int]); `Optional[X]` is read as `X`; None for anything else."""
    node = annotation.annotation if annotation is not None else None
    while node is not None:
        if type(node) is not cst.Subscript or not all(type(e.slice) is cst.Index for e in node.slice):
            return None
        base = node.value
        name = base.value if type(base) is cst.Name else (base.attr.value if type(base) is cst.Attribute else None)
        arguments = [e.slice.value for e in node.slice]
        if name == "Optional" and len(arguments) == 1:
            node = arguments[0]
            continue
        return (name, arguments) if name is not None else None
    return None


def _annotated_numbers(annotation: Optional[cst.Annotation]) -> bool:
    """`List[int]`, `Sequence[int]`, `Tuple[int, ...]`, `Optional[Iterable[float]]`: a sequence
    of numbers, whose set iterates the same in every run."""
    found = _subscripted(annotation)
    if found is None or found[0] not in _SEQUENCE_TYPES:
        return False
    elements = [a for a in found[1] if type(a) is not cst.Ellipsis]
    return bool(elements) and all(type(a) is cst.Name and a.value in _NUMBER_NAMES for a in elements)


def _annotated_keys(annotation: Optional[cst.Annotation]) -> object:
    """`Dict[str, X]`, `Mapping[int, X]`: the kind of the keys (`_STR`, `_NONSTR`), None for
    other keys; False when it is no mapping type."""
    found = _subscripted(annotation)
    if found is None or found[0] not in _MAPPING_TYPES or len(found[1]) != 2:
        return False
    key = found[1][0]
    if type(key) is cst.Name and key.value in ("str", "bytes"):
        return _STR
    if type(key) is cst.Name and key.value in _NUMBER_NAMES:
        return _NONSTR
    return None


def _annotated_value(annotation: Optional[cst.Annotation]) -> object:
    """What an annotated name holds, as far as the annotation says: a sequence of numbers, or
    a mapping with known keys; None otherwise."""
    if _annotated_numbers(annotation):
        return _Seq(_NONSTR)
    keys = _annotated_keys(annotation)
    return _Mapping(keys) if keys is not False else None


def _one_element_display(node: cst.CSTNode) -> bool:
    """`{"a"}`: a set display of one element (an intersection with it holds at most one)."""
    return type(node) is cst.Set and len(node.elements) == 1 and type(node.elements[0]) is not cst.StarredElement


def _declared_set(declared: object) -> "_Set":
    found = _Set([declared])
    found.declared = declared
    return found


def _element_kind(value: object) -> object:
    """What an element with this value is: `_STR`, `_NONSTR`, a `_Set` (an element of it) or None."""
    if value is _STR or value is _NONSTR:
        return value
    if type(value) is _Elem:
        return value.set
    if type(value) is _TupleValue:
        # A tuple hashes its items: it follows string hashes when one of them does.
        return _Set([_element_kind(item) for item in value.items]) if value.items else _NONSTR
    return None


def _item(value: object) -> object:
    """What iterating over a value gives."""
    kind = type(value)
    if kind is _Seq:
        return None if value.item is _NOTHING else value.item
    if kind is _Set:
        return _Elem(value if value.elements is None else value.elements)
    if kind is _Ordered:
        return value.item
    if kind is _KeysView:
        return value.key
    if value is _STR:
        return _STR
    return None


class _Kinds:
    """The element kinds of sets, once the whole file is read: (some strings, only strings,
    only non-strings, is a set at all)."""

    def __init__(self, analysed: Optional[Set[int]] = None, unreadable: Optional[Set[int]] = None) -> None:
        self.memo: Dict[int, Tuple[bool, bool, bool, bool]] = {}
        self.analysed = analysed
        self.unreadable = unreadable or set()
        self.wanted: List[cst.FunctionDef] = []  # functions whose results hold elements of unknown kind, unread

    def of(self, set_: _Set) -> Tuple[bool, bool, bool, bool]:
        key = id(set_)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = (False, False, False, False)  # a cycle adds nothing
        owner = set_.owner
        if owner is not None and self.analysed is not None:
            if id(owner) not in self.analysed and owner not in self.wanted:
                self.wanted.append(owner)
            if id(owner) not in self.analysed or id(owner) in self.unreadable:
                answer = self.memo[key] = (False, False, False, True)  # what an unread function returns
                return answer
        declared = set_.declared
        if declared is _STR or declared is _NONSTR:  # the annotation says it all
            answer = self.memo[key] = (declared is _STR, declared is _STR, declared is _NONSTR, True)
            return answer
        # A function's return slot (or a call of it) is a set only if the function returns one
        # (or is annotated so); any other set is one.
        real = not set_.slot or declared is not False
        if set_.meet:
            answers = [
                self.of(part) if type(part) is _Set else (part is _STR, part is _STR, part is _NONSTR, True)
                for part in set_.parts
            ]
            if any(p_all and p_some and p_real for p_some, p_all, _, p_real in answers):
                answer = self.memo[key] = (True, True, False, real)
                return answer
        some_str, all_str, all_nonstr, known = False, True, True, declared is None
        if declared is None:
            all_str = all_nonstr = False  # `set[Node]`: elements of another type
        for part in set_.parts:
            if type(part) is _Set:
                p_some, p_all, p_nonstr, p_real = self.of(part)
                if not p_real:
                    if set_.slot:
                        continue  # a return that is not a set
                    p_some = p_all = p_nonstr = False  # elements of something that is not a set
                else:
                    real = True
                    if p_all and p_nonstr:
                        continue  # an empty set
                some_str |= p_some
                all_str &= p_all
                all_nonstr &= p_nonstr
                known = True
            elif part is _STR:
                some_str, all_nonstr, known = True, False, True
            elif part is _NONSTR:
                all_str, known = False, True
            else:
                all_str = all_nonstr = False
                known = True
        if not known:
            answer = (False, True, True, real)  # no elements seen
        else:
            answer = (some_str, all_str and some_str, all_nonstr, real)
        self.memo[key] = answer
        return answer


class _Analysis:
    """Reads one function's statements in source order, following sets through names."""

    def __init__(self, rule: "UnorderedSetIteration", frame: _Frame, module_env: Optional[Dict[str, object]]) -> None:
        self.rule = rule
        self.frame = frame
        self.env: Dict[str, object] = {}
        self.module_env = module_env
        self.events = rule.events
        self.imports: Dict[str, Optional[str]] = {}  # names imported in this function (or module code)
        self.probing = False
        self.final = rule.context.resolver.module_final

    def resolve(self, func: cst.BaseExpression) -> Optional[str]:
        """The qualified name of a called name or attribute chain, after the walk: the function's
        own imports, then the module's final bindings, then the builtins; a local name is None."""
        dotted = dotted_name(func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.imports:
            bound = self.imports[head]
        elif head in self.env:
            return None
        elif head in self.final:
            bound = self.final[head]
        elif not rest and head in _BUILTIN_NAMES:
            bound = "builtins." + head
        else:
            return None
        if bound is None:
            return None
        return canonical(f"{bound}.{rest}" if rest else bound)

    # -- uses -------------------------------------------------------------------------------
    def use(self, value: object, node: cst.CSTNode, how: int) -> None:
        kind = type(value)
        if kind is _Set:
            if how == _ORDER or how == _INDEX:
                self.events.append((value, node, how == _INDEX))
            elif how == _OTHER and not value.parts:
                value.filled_elsewhere = True
        elif kind is _Ordered:
            if value.state == _PENDING:
                if how == _SORTED:
                    value.state = _SORTED_STATE
                elif how >= _ORDER:
                    value.state = _FIRED
                    value.how = how
                    self.events.append((value.set, value.node, how == _INDEX))
            elif value.state == _FIRED and how == _INDEX:
                value.how = how
                self.events.append((value.set, value.node, True))
        elif kind is _TupleValue and how >= _ORDER:
            for item in value.items:
                self.use(item, node, _OTHER)

    def probe(self, function: cst.FunctionDef) -> Dict[str, _Ordered]:
        """Read the function with each parameter holding a stand-in for a list made from a set:
        how the function uses each parameter (see `UnorderedSetIteration.parameter_use`)."""
        params = function.params
        stand_ins = {}
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            stand_in = _Ordered(_Set(slot=True), None, None)  # never a set: reports nothing itself
            stand_ins[param.name.value] = self.env[param.name.value] = stand_in
        self.block(function.body)
        return stand_ins

    def parameters(self, function: cst.FunctionDef) -> None:
        """Parameters and a return value annotated as sets (`names: set[str]`, `-> Set[str]`)."""
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            declared = _annotated_set(param.annotation)
            if declared is not False:
                self.env[param.name.value] = _declared_set(declared)
            else:
                value = _annotated_value(param.annotation)
                if value is not None:
                    self.env[param.name.value] = value
        if type(params.star_kwarg) is cst.Param:
            self.env[params.star_kwarg.name.value] = _Mapping(_STR)  # keyword names
        declared = _annotated_set(function.returns)
        if declared is not False:
            self.rule.slot(function).declared = declared

    def consume(self, node: cst.BaseExpression, how: int) -> object:
        value = self.expr(node)
        self.use(value, node, how)
        return value

    # -- statements -------------------------------------------------------------------------
    def block(self, body: cst.CSTNode) -> None:
        if type(body) is cst.IndentedBlock:
            for statement in body.body:
                self.statement(statement)
        elif type(body) is cst.SimpleStatementSuite:
            for small in body.body:
                self.small(small)

    def statements(self, statements) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            for small in node.body:
                self.small(small)
        elif kind is cst.If:
            self.consume(node.test, _FREE)
            self.block(node.body)
            orelse = node.orelse
            if type(orelse) is cst.If:
                self.statement(orelse)
            elif orelse is not None:
                self.block(orelse.body)
        elif kind is cst.For:
            self.loop(node)
        elif kind is cst.While:
            self.consume(node.test, _FREE)
            self.block(node.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
        elif kind is cst.With:
            for item in node.items:
                value = self.consume(item.item, _FREE)
                if item.asname is not None:
                    self.bind(item.asname.name, value, item.item)
            self.block(node.body)
        elif kind is cst.Try or kind is cst.TryStar:
            self.block(node.body)
            for handler in node.handlers:
                if handler.name is not None:
                    self.bind(handler.name.name, None, None)
                self.block(handler.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
            if node.finalbody is not None:
                self.block(node.finalbody.body)
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            self.env[node.name.value] = None
        elif kind is cst.Match:
            self.consume(node.subject, _FREE)
            for case in node.cases:
                self.block(case.body)

    def small(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.Expr:
            self.expr(node.value)
        elif kind is cst.Assign:
            value = self.expr(node.value)
            for target in node.targets:
                self.bind(target.target, value, node.value)
        elif kind is cst.AnnAssign:
            declared = _annotated_set(node.annotation)
            if node.value is not None:
                value = self.expr(node.value)
                if declared is not False:
                    if type(value) is not _Set:
                        value = _Set()
                    value.declared = declared
                elif value is None or (type(value) is _Seq and value.item is _NOTHING):
                    value = _annotated_value(node.annotation) or value
                self.bind(node.target, value, node.value)
        elif kind is cst.AugAssign:
            self.augmented(node)
        elif kind is cst.Return:
            if node.value is not None:
                value = self.expr(node.value)
                function = None if self.probing else self.frame.node
                if function is not None and value is not _NONSTR:
                    elements = self.rule.returned_elements.get(id(function))
                    if elements is None:
                        elements = self.rule.returned_elements[id(function)] = _Set()
                        elements.owner = function
                    elements.parts.append(_element_kind(_item(value)))
                if type(value) is _Set and function is not None:
                    self.rule.slot(function).parts.append(value)
                elif self.frame.node is None or self.frame.node.name.value != "__dir__":  # `dir()` sorts it
                    self.use(value, node.value, _OTHER)
        elif kind is cst.Del:
            target = node.target
            if type(target) is cst.Name:
                self.env.pop(target.value, None)
        elif kind is cst.Import or kind is cst.ImportFrom:
            for name, qualified in self.rule.context.resolver._import_bindings(node):
                self.imports[name] = qualified
                self.env.pop(name, None)
        elif kind is cst.Assert and type(node.test) is cst.Comparison:
            self.singleton_check(node.test)
        # `raise` and `assert` only build messages; `global`, `pass`, ... bind nothing.

    def augmented(self, node: cst.AugAssign) -> None:
        target, operator = node.target, type(node.operator)
        current = self.env.get(target.value) if type(target) is cst.Name else None
        if type(current) is _Set and operator in (cst.BitOrAssign, cst.BitAndAssign, cst.BitXorAssign, cst.SubtractAssign):
            value = self.consume(node.value, _FREE)
            if operator is not cst.SubtractAssign:
                current.parts.append(_element_kind(_item(value)))
            return
        value = self.expr(node.value)
        if operator is cst.AddAssign and type(value) in (_Ordered, _Set):
            if type(target) is cst.Name and target.value in self.env:
                # `names += list(s)` on a list of this function: it now holds the set's order.
                if type(value) is _Set:
                    value = _Ordered(value, node.value, _Elem(value))
                self.env[target.value] = value
            else:
                # A list from elsewhere (a parameter, a module-level list, an attribute) is
                # extended in place: the caller's list holds the order.
                self.use(value, node.value, _ORDER)
                if type(target) is not cst.Name:
                    self.expr(target)
            return
        self.use(value, node.value, _OTHER)
        if type(target) is not cst.Name:
            self.expr(target)

    def bind(self, target: cst.CSTNode, value: object, value_node: Optional[cst.CSTNode]) -> None:
        kind = type(target)
        if kind is cst.Name:
            self.env[target.value] = value
            self.imports.pop(target.value, None)
        elif kind is cst.Tuple or kind is cst.List:
            elements = target.elements
            if type(value) is _TupleValue and len(value.items) == len(elements):
                items = value.items
            else:
                if value_node is not None and type(value) in (_Set, _Ordered):
                    self.use(value, value_node, _ORDER)  # `a, b = s`: unpacked in set order
                items = [_item(value)] * len(elements)
            for element, item in zip(elements, items):
                if type(element) is cst.StarredElement:
                    self.bind(element.value, None, None)
                else:
                    self.bind(element.value, item, None)
        elif kind is cst.Attribute or kind is cst.Subscript:
            if value_node is not None:
                self.use(value, value_node, _OTHER)  # stored where this function cannot follow it
            if kind is cst.Subscript:
                self.expr(target)
            else:
                dotted = dotted_name(target)
                if dotted is not None:
                    self.env[dotted] = value  # `self.rows = ...` read back in the same function
        elif kind is cst.StarredElement:
            self.bind(target.value, None, None)

    def loop(self, node: cst.For) -> None:
        iterated = self.expr(node.iter)
        kind = type(iterated)
        if kind is _Set or kind is _Ordered:
            building = _loop_builds(node, self.resolve)
            if building is not None:
                if building:
                    # The loop's lists are what the set became: sorted later, nothing is reported.
                    ordered = iterated if kind is _Ordered else _Ordered(iterated, node.iter, _Elem(iterated))
                    for name in building:
                        self.env[name] = ordered
                else:
                    self.use(iterated, node.iter, _ORDER)
        self.bind(node.target, _item(iterated), None)
        self.block(node.body)
        if node.orelse is not None:
            self.block(node.orelse.body)

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node: cst.CSTNode) -> object:
        kind = type(node)
        if kind is cst.Name:
            name = node.value
            if name in self.env:
                return self.env[name]
            if name == "None" or name == "True" or name == "False":
                return _NONSTR
            if self.module_env is not None:
                value = self.module_env.get(name)
                if type(value) is _Set:
                    return value
            return None
        if kind is cst.Call:
            return self.call(node)
        if kind is cst.SimpleString or kind is cst.ConcatenatedString:
            return _STR
        if kind is cst.FormattedString:
            for part in node.parts:
                if type(part) is cst.FormattedStringExpression:
                    self.consume(part.expression, _FREE)
            return _STR
        if kind is cst.Integer or kind is cst.Float or kind is cst.Imaginary:
            return _NONSTR
        if kind is cst.Attribute:
            dotted = dotted_name(node)
            if dotted is not None and dotted in self.env:
                return self.env[dotted]
            value = self.expr(node.value)
            attribute = node.attr.value
            if attribute == "stem" or attribute == "suffix" or (attribute in ("name", "parent") and value is _STR):
                return _STR
            return None
        if kind is cst.Subscript:
            return self.subscript(node)
        if kind is cst.BinaryOperation:
            return self.binary(node)
        if kind is cst.Set:
            parts = []
            for element in node.elements:
                if type(element) is cst.StarredElement:
                    parts.append(_element_kind(_item(self.consume(element.value, _FREE))))
                else:
                    parts.append(_element_kind(self.consume(element.value, _FREE)))
            return _Set(parts)
        if kind is cst.List or kind is cst.Tuple:
            return self.display(node)
        if kind is cst.ListComp or kind is cst.GeneratorExp or kind is cst.SetComp or kind is cst.DictComp:
            return self.comprehension(node)
        if kind is cst.Comparison:
            left = node.left
            self.consume(left, _FREE)
            for target in node.comparisons:
                self.consume(target.comparator, _FREE)
            self.singleton_check(node)
            return _NONSTR
        if kind is cst.BooleanOperation or kind is cst.IfExp:
            if kind is cst.IfExp:
                self.consume(node.test, _FREE)
                left, right = self.expr(node.body), self.expr(node.orelse)
            else:
                left, right = self.expr(node.left), self.expr(node.right)
            return left if type(left) in (_Set, _Ordered) or right is None else right
        if kind is cst.UnaryOperation:
            value = self.consume(node.expression, _FREE)
            return _NONSTR if type(node.operator) is cst.Not else value
        if kind is cst.Dict:
            keys = set()
            for element in node.elements:
                if type(element) is cst.DictElement:
                    key = self.consume(element.key, _OTHER)
                    keys.add(key if key is _STR or key is _NONSTR else None)
                    self.consume(element.value, _OTHER)
                else:
                    self.consume(element.value, _FREE)
                    keys.add(None)
            return _Mapping(keys.pop() if len(keys) == 1 else None)
        if kind is cst.NamedExpr:
            value = self.expr(node.value)
            self.bind(node.target, value, node.value)
            return value
        if kind is cst.Await:
            return self.expr(node.expression)
        if kind is cst.Yield:
            if node.value is not None and type(node.value) is not cst.From:
                self.consume(node.value, _OTHER)
            return None
        return None

    def singleton_check(self, node: cst.Comparison) -> None:
        """`len(s) == 1` (or `!= 1`, `<= 1`, `< 2`, `> 1`, `>= 2`) on a set or what it became:
        whatever branch follows (`if len(s) > 1: raise ...` then `s.pop()`), the order of a
        set that is put in order there is fixed."""
        left = node.left
        if len(node.comparisons) != 1 or type(left) is not cst.Call or len(left.args) != 1:
            return
        if type(left.func) is not cst.Name or left.func.value != "len" or type(left.args[0].value) is not cst.Name:
            return
        comparator = node.comparisons[0].comparator
        if type(comparator) is not cst.Integer or comparator.value not in ("1", "2"):
            return
        operator = type(node.comparisons[0].operator)
        if comparator.value == "1" and operator not in (cst.Equal, cst.NotEqual, cst.LessThanEqual, cst.GreaterThan):
            return
        if comparator.value == "2" and operator not in (cst.LessThan, cst.GreaterThanEqual):
            return
        value = self.env.get(left.args[0].value.value)
        if type(value) is _Ordered:
            value = value.set
        if type(value) is _Set:
            value.singleton = True

    def display(self, node: cst.CSTNode) -> object:
        items = []
        for element in node.elements:
            if type(element) is cst.StarredElement:
                value = self.expr(element.value)
                if type(value) is _Set and len(node.elements) == 1:
                    return _Ordered(value, element.value, _Elem(value))  # `[*s]` is `list(s)`
                self.use(value, element.value, _ORDER)
                items.append(None)
            else:
                items.append(self.expr(element.value))
        if type(node) is cst.Tuple:
            return _TupleValue(items)
        if not items:
            return _Seq(_NOTHING)
        for item, element in zip(items, node.elements):
            self.use(item, element.value, _OTHER)
        kinds = {item for item in items if item is _STR or item is _NONSTR}
        return _Seq(kinds.pop() if len(kinds) == 1 and all(item in (_STR, _NONSTR) for item in items) else None)

    def subscript(self, node: cst.Subscript) -> object:
        value = self.expr(node.value)
        elements = node.slice
        index_only = len(elements) == 1 and type(elements[0].slice) is cst.Index
        for element in elements:
            part = element.slice
            if type(part) is cst.Index:
                self.consume(part.value, _OTHER)
            else:
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None:
                        self.consume(bound, _FREE)
        kind = type(value)
        if kind is _Ordered:
            self.use(value, node.value, _ORDER)
            return value.item if index_only else _Seq(value.item)
        if kind is _Seq:
            return _item(value) if index_only else value
        if kind is _TupleValue and index_only:
            position = elements[0].slice.value
            if type(position) is cst.Integer:
                number = int(position.value, 0)
                if -len(value.items) <= number < len(value.items):
                    return value.items[number]
            return None
        if value is _STR:
            return _STR
        return None

    def binary(self, node: cst.BinaryOperation) -> object:
        left, right = self.expr(node.left), self.expr(node.right)
        operator = type(node.operator)
        if operator in _SET_OPERATORS and (type(left) in (_Set, _KeysView) or type(right) in (_Set, _KeysView)):
            self.use(left, node.left, _FREE)
            self.use(right, node.right, _FREE)
            parts = [left if type(left) is _Set else _element_kind(_item(left))]
            if operator is not cst.Subtract:
                parts.append(right if type(right) is _Set else _element_kind(_item(right)))
            result = _Set(parts)
            result.meet = operator is cst.BitAnd
            # `({"a"} & s).pop()`: at most one element, one order.
            result.singleton = operator is cst.BitAnd and (_one_element_display(node.left) or _one_element_display(node.right))
            return result
        if operator is cst.Add:
            if type(left) is _Ordered:
                self.use(right, node.right, _OTHER)
                return left
            if type(right) is _Ordered:
                self.use(left, node.left, _OTHER)
                return right
            if left is _STR or right is _STR:
                return _STR
            if type(left) is _Seq:
                return left
        if operator is cst.Modulo and left is _STR:
            self.use(right, node.right, _FREE)  # `"%s" % (names,)` formats a message
            return _STR
        self.use(left, node.left, _OTHER)
        self.use(right, node.right, _OTHER)
        return _NONSTR if left is _NONSTR and right is _NONSTR else None

    def comprehension(self, node: cst.CSTNode) -> object:
        saved: Dict[str, object] = {}
        missing = object()
        iterated: List[Tuple[cst.BaseExpression, object]] = []
        step = node.for_in
        while step is not None:
            value = self.expr(step.iter)
            iterated.append((step.iter, value))
            for name in _target_names(step.target):
                if name not in saved:
                    saved[name] = self.env.get(name, missing)
            self.bind(step.target, _item(value), None)
            for condition in step.ifs:
                self.consume(condition.test, _FREE)
            step = step.inner_for_in
        kind = type(node)
        if kind is cst.DictComp:
            # Keys and values can only come from the elements (an index comes from `enumerate` or
            # `zip`, reported there): the same mapping whatever the order, only its own order varies.
            key = self.consume(node.key, _OTHER)
            self.consume(node.value, _OTHER)
            result: object = _Mapping(key if key is _STR or key is _NONSTR else None)
        else:
            element = self.consume(node.elt, _FREE)
            if kind is cst.SetComp:
                result = _Set([_element_kind(element)])
            else:
                result = _Seq(element)
                for iter_node, value in iterated:
                    if type(value) is _Ordered:
                        value.item = element if value.item is None else value.item
                        result = value
                        break
                    if type(value) is _Set:
                        result = _Ordered(value, iter_node, element)
                        break
        for name, value in saved.items():
            if value is missing:
                self.env.pop(name, None)
            else:
                self.env[name] = value
        return result

    def arguments(self, call: cst.Call, how: int) -> None:
        for arg in call.args:
            if arg.star == "*":
                self.consume(arg.value, _FREE if how == _FREE else _ORDER)
            else:
                self.consume(arg.value, how if arg.star == "" else _FREE)

    def passed(self, node: cst.Call, function: cst.FunctionDef, method: bool) -> None:
        """Arguments of a call of a function of this file: a set or what it became is put in order
        there only if that function puts the parameter in order (read once per function)."""
        params = function.params
        positional = [param.name.value for param in (*params.posonly_params, *params.params)][1 if method else 0 :]
        keywords = {param.name.value for param in (*params.params, *params.kwonly_params)}
        for index, arg in enumerate(node.args):
            value = self.expr(arg.value)
            kind = type(value)
            if kind is not _Set and kind is not _Ordered:
                continue
            if kind is _Set and not value.parts:
                value.filled_elsewhere = True
            if not _Kinds().of(value if kind is _Set else value.set)[0]:
                # Not (yet) known to hold strings: the function is not read for it (a list made from
                # a set of unknown elements counts only in an index mapping, which `_OTHER` is not).
                self.use(value, arg.value, _OTHER)
                continue
            name = None
            if arg.star == "" and arg.keyword is None and index < len(positional):
                name = positional[index]
            elif arg.star == "" and arg.keyword is not None and arg.keyword.value in keywords:
                name = arg.keyword.value
            how = self.rule.parameter_use(function, name) if name is not None else _OTHER
            if kind is _Set and how == _OTHER:
                continue  # a set handed on is not put in order by that alone
            self.use(value, arg.value, how)

    def call(self, node: cst.Call) -> object:
        func = node.func
        kind = type(func)
        args = node.args
        first = args[0].value if args and args[0].keyword is None and args[0].star == "" else None
        if kind is cst.Name:
            spelled = func.value
            name = self.resolve(func) if spelled in _RESOLVE else (None if spelled in self.env else self.final.get(spelled))
            if name is None:
                target = self.rule.first_party(spelled, None)
                if target is not None:
                    self.passed(node, target, False)
                    return self.rule.call_result(target)
                self.arguments(node, _OTHER)
                return None
        elif kind is cst.Attribute:
            attribute = func.attr.value
            receiver_node = func.value
            name = self.resolve(func) if attribute in _RESOLVE else None
            if name is None or not name.startswith(
                (
                    "os.",
                    "glob.",
                    "numpy.",
                    "torch.",
                    "random.",
                    "csv.",
                    "logging.",
                    "warnings.",
                    "json.",
                    "pathlib.",
                    "collections.",
                )
            ):
                return self.method(node, attribute, receiver_node, first)
        else:
            self.expr(func)
            self.arguments(node, _OTHER)
            return None
        return self.known_call(node, name, first)

    def known_call(self, node: cst.Call, name: str, first: Optional[cst.BaseExpression]) -> object:
        if name == "builtins.set" or name == "builtins.frozenset":
            if first is None:
                self.arguments(node, _FREE)
                return _Set()
            value = self.consume(first, _FREE)
            return _Set([_element_kind(_item(value))])
        if name == "builtins.list" or name == "builtins.tuple" or name == "builtins.reversed" or name == "builtins.iter":
            if first is None:
                self.arguments(node, _OTHER)
                return _Seq(None)
            value = self.expr(first)
            if type(value) is _Set:
                if name == "builtins.iter":
                    return value
                if name == "builtins.list" and len(node.args) == 1:
                    self.rule.list_of[id(first)] = node
                return _Ordered(value, first, _Elem(value))
            return value if type(value) in (_Ordered, _Seq) else None
        if name == "builtins.sorted" or name == "numpy.unique":
            value = self.consume(first, _SORTED) if first is not None else None
            for arg in node.args[1:]:
                self.consume(arg.value, _FREE)
            return _Seq(_item(value))
        if name == "builtins.enumerate" or name == "builtins.zip":
            items = [] if name == "builtins.zip" else [_NONSTR]
            for arg in node.args:
                if arg.keyword is None:
                    items.append(_item(self.consume(arg.value, _INDEX)))
            return _Seq(_TupleValue(items))
        if name == "builtins.map" or name == "builtins.filter":
            values = [self.expr(arg.value) for arg in node.args]
            source = values[-1] if values else None
            if type(source) is _Set:
                return _Ordered(source, node.args[-1].value, _Elem(source) if name == "builtins.filter" else None)
            if type(source) is _Ordered:
                return source
            return None
        if name in _ORDER_FREE_CALLS or name.startswith("logging."):
            self.arguments(node, _FREE)
            if name in _STR_BUILTINS:
                return _STR
            if name in _NONSTR_BUILTINS:
                return _NONSTR
            return None
        if name in _STR_BUILTINS:
            self.arguments(node, _FREE)
            return _STR
        if name in _NONSTR_BUILTINS:
            self.arguments(node, _FREE)
            return _NONSTR
        if name == "builtins.open":
            self.arguments(node, _FREE)
            return _Seq(_STR)
        if name == "builtins.range":
            self.arguments(node, _FREE)
            return _Seq(_NONSTR)
        if name == "builtins.vars":
            self.arguments(node, _OTHER)
            return _Mapping(_STR)
        if name in _LISTINGS:
            self.arguments(node, _FREE)
            return _Seq(_STR)
        if name == "os.walk":
            self.arguments(node, _FREE)
            return _Seq(_TupleValue([_STR, _Seq(_STR), _Seq(_STR)]))
        if name in ("os.path.splitext", "os.path.split", "os.path.splitdrive"):
            self.arguments(node, _FREE)
            return _TupleValue([_STR, _STR])
        if name.startswith("os.path.") or name in _PATHS:
            self.arguments(node, _FREE)
            return (
                _STR
                if name.rsplit(".", 1)[-1] not in ("exists", "isfile", "isdir", "getsize", "getmtime", "islink", "isabs")
                else _NONSTR
            )
        if name == "csv.reader" or name == "csv.DictReader":
            self.arguments(node, _FREE)
            return _Seq(_Seq(_STR))
        if name in _TO_ARRAY:
            self.arguments(node, _ORDER)
            return None
        last = name.rsplit(".", 1)[-1]
        if last in _DRAWS and name.startswith(("random.", "numpy.random.")):
            self.arguments(node, _ORDER)
            return None
        if name == "warnings.warn" or name == "builtins.print":
            self.arguments(node, _FREE)
            return None
        self.arguments(node, _OTHER)
        return None

    def method(self, node: cst.Call, attribute: str, receiver_node: cst.BaseExpression, first) -> object:
        receiver = self.expr(receiver_node)
        kind = type(receiver)
        if kind is _Set:
            if attribute == "add" and first is not None:
                receiver.parts.append(_element_kind(self.consume(first, _FREE)))
                return None
            if attribute in _SET_UPDATES:
                for arg in node.args:
                    value = self.consume(arg.value, _FREE)
                    receiver.parts.append(value if type(value) is _Set else _element_kind(_item(value)))
                return None
            if attribute in _SET_RESULTS:
                parts: list = [receiver]
                for arg in node.args:
                    value = self.consume(arg.value, _FREE)
                    if attribute != "difference":
                        parts.append(value if type(value) is _Set else _element_kind(_item(value)))
                result = _Set(parts)
                result.meet = attribute == "intersection"
                result.singleton = result.meet and (
                    _one_element_display(receiver_node) or any(_one_element_display(arg.value) for arg in node.args)
                )
                return result
            if attribute == "pop" and not node.args:
                self.rule.no_fix.add(id(receiver_node))  # `sorted(s).pop()` would leave `s` whole
                if not (receiver.filled_elsewhere and not receiver.parts):
                    # (an out-parameter filled by a helper is usually one reason or one name)
                    self.use(receiver, receiver_node, _ORDER)
                return _Elem(receiver)
            self.arguments(node, _FREE)
            return None
        if kind is _Ordered:
            if attribute == "sort":
                self.use(receiver, receiver_node, _SORTED)
            elif attribute == "index":
                self.use(receiver, receiver_node, _INDEX)
            elif attribute == "pop":
                self.use(receiver, receiver_node, _ORDER)
            elif attribute in ("copy", "count", "remove", "append", "insert", "extend", "reverse", "clear"):
                self.arguments(node, _OTHER)
                return receiver if attribute == "copy" else None
            else:
                self.use(receiver, receiver_node, _OTHER)
            self.arguments(node, _FREE)
            return receiver.item if attribute == "pop" else (_NONSTR if attribute == "index" else None)
        if attribute == "join" and first is not None and len(node.args) == 1:
            value = self.expr(first)
            if type(value) is _Set:
                return _Ordered(value, first, _STR)  # a string: used as data or only displayed?
            if type(value) is _Ordered:
                return value
            return _STR
        if attribute in _STR_METHODS:
            self.arguments(node, _FREE)
            return _STR
        if attribute in _NUMBER_METHODS and not node.args:
            return _NONSTR
        if attribute == "keys" and not node.args and type(receiver) is _Mapping:
            return _KeysView(receiver.key)
        if attribute == "keys" and not node.args and not (type(receiver_node) is cst.Name and receiver_node.value == "self"):
            return _KeysView(None)
        if attribute == "state_dict" and not node.args:
            return _Mapping(_STR)  # parameter and buffer names
        if attribute in _SPLITS:
            self.arguments(node, _FREE)
            return _Seq(_STR)
        if attribute == "replace" and receiver is _STR:
            self.arguments(node, _FREE)
            return _STR
        if kind is _Seq and attribute == "append" and first is not None:
            value = self.consume(first, _OTHER)
            known = value if value is _STR or value is _NONSTR else None
            receiver.item = known if receiver.item is _NOTHING or receiver.item is known else None
            return None
        if type(receiver) is _Seq and receiver.item is _STR:
            if attribute == "read":
                return _STR
            if attribute == "readlines":
                return _Seq(_STR)
            if attribute == "get":
                self.arguments(node, _FREE)
                return _STR
        if attribute in ("glob", "rglob", "iterdir"):
            self.arguments(node, _FREE)
            return _Seq(_STR)
        if attribute in _LOG_METHODS:
            self.arguments(node, _FREE)
            return None
        if attribute in _DRAWS:
            self.arguments(node, _ORDER)
            return None
        if attribute == "extend":
            self.arguments(node, _ORDER)
            return None
        if type(receiver_node) is cst.Name and receiver_node.value == "self":
            target = self.rule.first_party(attribute, self.frame.class_name)
            if target is not None:
                self.passed(node, target, True)
                return self.rule.call_result(target)
        self.arguments(node, _OTHER)
        return None


def _read(method, body, events: list) -> bool:
    """Run one part of the analysis; an expression nested too deeply for this recursive reading
    (a 1,000-term sum) leaves that function unreported rather than the file unanalysed."""
    before = len(events)
    try:
        method(body)
    except RecursionError:
        del events[before:]  # what follows could have sorted them
        return False
    return True


def _keys_call(node: cst.CSTNode) -> bool:
    return type(node) is cst.Call and not node.args and type(node.func) is cst.Attribute and node.func.attr.value == "keys"


def _singleton(set_: _Set) -> bool:
    return set_.singleton or (len(set_.parts) == 1 and type(set_.parts[0]) is _Set and set_.parts[0].singleton)


def _target_names(target: cst.CSTNode) -> List[str]:
    kind = type(target)
    if kind is cst.Name:
        return [target.value]
    if kind is cst.Tuple or kind is cst.List:
        return [name for element in target.elements for name in _target_names(element.value)]
    if kind is cst.StarredElement:
        return _target_names(target.value)
    return []


def _nodes(root: cst.CSTNode) -> List[cst.CSTNode]:
    """Every node under `root` (trivia left out), not entering nested functions, classes and lambdas."""
    keep = kept_node_types(frozenset())
    found: List[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
            continue
        found.append(node)
        for field_name in child_fields(kind):
            value = getattr(node, field_name)
            if type(value) in keep:
                stack.append(value)
            elif type(value) is tuple or type(value) is list:
                stack.extend(item for item in value if type(item) in keep)
    return found


def _names_any(function: cst.FunctionDef, names: frozenset) -> bool:
    return any(type(node) is cst.Name and node.value in names for node in _nodes(function.body))


def _ordered_in_text(name: str, text: str) -> bool:
    """Whether the file spells `name` anywhere it could be put in order (`for x in NAME`, a call
    on it, `*NAME`, `NAME.pop()`, a set operation, an alias `x = NAME`): a cheap test before the
    functions are searched for a module-level set (most such sets only answer `in` tests)."""
    for match in re.finditer(rf"\b{re.escape(name)}\b", text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[line_start : match.start()].rstrip()
        after = text[match.end() : match.end() + 3].lstrip()
        if before.endswith(("(", "*", ",", "=", "[")) or after[:1] in (".", "|", "&", "^", "-", ")", ","):
            return True
        if before.endswith(" in") and " for " in f" {before}":
            return True
    return False


def _position_dependent(value: cst.CSTNode, counters: Set[str], elements: Set[str]) -> bool:
    """A value stored per element that depends on how many came before: `len(d)`, `next(ids)`,
    or a counter the loop increments. `len(history[x])` measures the element's own entry."""
    for node in _nodes(value):
        kind = type(node)
        if kind is cst.Call and type(node.func) is cst.Name and node.func.value in ("len", "next"):
            if not (node.func.value == "len" and node.args and _mentions(node.args[0].value, elements)):
                return True
        if kind is cst.Name and node.value in counters:
            return True
    return False


def _mentions(value: cst.CSTNode, names: Set[str]) -> bool:
    return any(type(part) is cst.Name and part.value in names for part in _nodes(value))


def _keyed_by(node: cst.CSTNode, elements: Set[str]) -> bool:
    """`d[x]`, `d[x.lower()]`: a subscript whose one key is computed from the element."""
    if type(node) is not cst.Subscript:
        return False
    keys = node.slice
    return len(keys) == 1 and type(keys[0].slice) is cst.Index and _mentions(keys[0].slice.value, elements)


def _draws(name: Optional[str]) -> bool:
    """A call that draws from an RNG: `random.*`, `numpy.random.*`, torch's samplers, and
    building a `torch.nn` module or calling `torch.nn.init` (initialisation draws)."""
    if name is None:
        return False
    if name.startswith(("random.", "numpy.random.")):
        return not name.endswith(("seed", "get_state", "set_state", "getstate", "setstate"))
    if name.startswith("torch.nn."):
        last = name.rsplit(".", 1)[-1]
        return last[:1].isupper() or name.startswith("torch.nn.init.") or "dropout" in last
    return name in _TORCH_DRAWS


def _loop_builds(loop: cst.For, resolve) -> Optional[List[str]]:
    """How a loop over a set puts its order into data: the names of the lists it appends to
    (what the set became, followed further), an empty list for anything else that keeps the
    order (a position stored by subscript, `yield`, a draw, building an `nn` module, which
    draws its initial weights, an append to an attribute), None
    when it does neither. Containers made in the body are per element, and `d[x] = f(x)`
    keyed by the element (`d[x.lower()]`, `d["f1-" + x]` through a local, or what an inner
    loop takes from it) fills the same mapping in any order; so do `d[x] += 1` and
    `d[x].append(v)`, which touch only the element's own entry."""
    nodes = _nodes(loop.body)
    local: Set[str] = set()
    counters: Set[str] = set()
    elements = set(_target_names(loop.target))  # the element, and what inner loops take from it
    derived: List[Tuple[List[str], cst.CSTNode]] = []  # `key = "f1-" + x`: names computed in the body
    for node in nodes:
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                local.update(_target_names(target.target))
                if type(target.target) is cst.Name:
                    derived.append(([target.target.value], node.value))
        elif kind is cst.AugAssign and type(node.target) is cst.Name:
            counters.add(node.target.value)
        elif kind is cst.For:
            elements.update(_target_names(node.target))
    # A name computed from the element keys by the element too; two passes follow one chain
    # (`stem = x.lower()`, `key = stem + "_f1"`) without a fixpoint loop over long bodies.
    for _ in range(2):
        for names, value in derived:
            if names[0] not in counters and _mentions(value, elements):
                elements.update(names)
    appended: List[str] = []
    for node in nodes:
        kind = type(node)
        if kind is cst.Call:
            func = node.func
            if type(func) is cst.Attribute:
                attribute = func.attr.value
                if attribute in _BUILDING_METHODS:
                    if _keyed_by(func.value, elements):
                        continue  # `d[x].append(v)`: the element's own list
                    if type(func.value) is not cst.Name:
                        return []
                    name = func.value.value
                    if name not in local and name not in appended:
                        appended.append(name)
                elif attribute in _LOOP_DRAWS:
                    return []
            elif type(func) is cst.Name and func.value in _LOOP_DRAWS:
                return []
            if _draws(resolve(func)):
                return []
        elif kind is cst.Assign or kind is cst.AugAssign or kind is cst.AnnAssign:
            targets = [target.target for target in node.targets] if kind is cst.Assign else [node.target]
            for target in targets:
                if type(target) is not cst.Subscript:
                    continue
                if type(target.value) is cst.Name and target.value.value in local:
                    continue
                if not _keyed_by(target, elements) or node.value is None or _position_dependent(node.value, counters, elements):
                    return []
        elif kind is cst.Yield:
            return []
    return appended or None


class UnorderedSetIteration(Rule):
    """
    ## Why is this bad?
    A set iterates in the order of its elements' hashes, and the hash of a
    `str` (and of `bytes`, of a path, of a tuple holding one) changes with
    every interpreter: Python salts it at start-up (`PYTHONHASHSEED`). A set
    of strings put in an order therefore gives a different order in every run,
    with every RNG seeded: a label map `{c: i for i, c in enumerate(set(labels))}`
    gives class 0 to another label, a vocabulary gives tokens other ids, and a
    train/validation split over `list(set(patient_ids))` puts other patients in
    each part. A checkpoint trained in one run is then evaluated against
    another run's labels.

    Reported, in any file, at the set expression that is put in order:
    `list(s)`, `tuple(s)`, `[*s]`, `enumerate(s)`, `zip(s, ...)`,
    `np.array(list(s))`, `torch.tensor(list(s))`, `"".join(s)` when the string
    is used as data (not only printed, logged or formatted into a message), a
    `for` loop over it that appends to a list, stores a position
    (`d[x] = len(d)`, `out[i] = x`), yields or draws (`random.choice` /
    `shuffle` / `sample`, `torch.randn`, building an `nn` module, whose
    initial weights are drawn), a list comprehension over it, `s.pop()`, and
    indexing or slicing of what it became. The set is one of strings when its
    elements are string literals, f-strings, results of `str` methods
    (`.lower()`, `.strip()`, `.split()` parts, ...), `str(...)`, `os.path`
    functions, file listings, lines of a file, fields of `csv.reader` /
    `csv.DictReader` rows, or when it is annotated `set[str]` / `Set[str]`
    (a variable, a parameter, a function's return). It is built by
    `set(...)`, `frozenset(...)`, a set display or comprehension, `.add` /
    `.update`, `|`, `&`, `-`, `^` and the set methods, and followed through
    names in the same function (and what the function itself stores on
    `self.<attr>` and reads back), from module level into the functions that
    name it, and through the return value of a function defined in the same
    file (a module-level function, or a method called on `self`), which also
    tells what the elements of a set built from its result are
    (`set(read_labels(path))` with a helper returning stripped lines). A set,
    or what it became, handed to such a function counts as put in order only
    where that function puts the parameter in order (it is read once with
    stand-ins for its parameters): a helper that only checks each name is
    order-free, one that enumerates its argument is reported at the caller's
    set. A set whose
    elements are unknown (a parameter, a JSON or pandas field) is reported
    only when its order builds an index mapping: `enumerate`, `zip`,
    `.index(...)`. Sets of ints, floats, bools or `None` iterate in the same
    order in every run, and dicts keep insertion order: neither is reported.

    Not reported (order-free): `sorted(...)`, `len`, `in`, `min` / `max` /
    `sum` / `any` / `all`, set operations, `Counter`, updating another set,
    comparisons, `print`, logging, `warnings.warn`, f-strings and `%` /
    `.format` messages, what `__dir__` returns (`dir()` sorts it); `raise` and
    `assert` statements are not read. A dict comprehension over a set, or a
    loop that stores `d[f(x)] = g(x)` keyed by the element, builds the same
    mapping in any order: not reported. A set checked to hold one element
    (`len(s) == 1`, `!= 1` before a `raise`, `assert len(s) == 1`), or an
    intersection with a one-element set display (`({"spawn"} & s).pop()`,
    `s.intersection({"fork"})`), has one order, and so, as a rule, has one that was handed empty to a function
    that fills it and is then `.pop()`ed (an out-parameter of reasons). What the set became (a list, a
    comprehension, a list a loop appended to) is followed through names in the same function: sorted
    (`names.sort()`, `names = sorted(names)`, `np.unique(...)`) before any
    order-dependent use, or only ever used in order-free ways, it is not
    reported.

    ## Fix safety
    Wraps the set expression in `sorted(...)`, in place (`tuple(set(x))`
    becomes `tuple(sorted(set(x)))`, `for c in s:` becomes
    `for c in sorted(s):`); nothing else is re-indented. When the set is the
    whole argument of `list(...)`, the call becomes `sorted(...)` instead
    (`list(s)` becomes `sorted(s)`, not `list(sorted(s))`: `sorted` already
    returns a list, and ruff's C414 flags the double call). Safe when every
    element is known to be a string (an intersection with a set of strings,
    `methods & {"spawn", "fork"}`, holds only strings): the program keeps
    its meaning and loses
    only the run-to-run variation of the order. Unsafe when the elements are
    not all known to be strings (the index-mapping case, or a set that also
    holds values of unknown type): `sorted` raises `TypeError` on elements
    that do not compare (`None` next to a string, objects without `<`). No fix
    for `s.pop()`: `sorted(s).pop()` would no longer remove the element from
    the set.

    ## Known problems
    Local dataflow in one file. A set stored on `self` and put in order in
    another method, and a set handed to or returned by a function of another
    module, are not followed; a function of this file that returns its
    argument hands the order back unseen.
    Branches are read in source order (the last binding wins). Not reported
    although they depend on the order: `next(iter(s))`, a loop that returns or
    breaks at its first match, `max(s, key=len)` with ties, a loop that only
    accumulates with `+=`, and the iteration order of a dict filled from a set.
    Reported although the order does not matter in the end: a list made from a
    set and handed to a function of another module that only checks it or
    sorts it itself, returned or stored (sort it at the source, or use
    `# noqa: TDL107`); `s.pop()` on a set that holds one element by
    construction elsewhere (returned by a helper that builds one-element
    sets); a string of
    characters joined from a set and used as a character set; and, for sets
    of unknown elements that build an index mapping, elements that turn out to
    be numbers. JSON and pandas fields are of unknown type (they are often int
    ids). Files that mention none of the words the pre-filter looks for
    (`torch`, `random`, `numpy`, `seed`, `Dataset`, ...) and show no set
    (`set(`, `set[`, `Set[`, a set comprehension or a display of string
    literals) are not parsed at all: a set that only arrives through another
    module's return is not seen in such a file.

    ## Options
    None.

    ## References
    - Python, `object.__hash__` and `PYTHONHASHSEED`: <https://docs.python.org/3/reference/datamodel.html#object.__hash__>
    - Python, command line, `PYTHONHASHSEED`: <https://docs.python.org/3/using/cmdline.html#envvar-PYTHONHASHSEED>
    - PyTorch, reproducibility notes: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL107"
    name = "unordered-set-iteration"
    summary = "a set of strings is put in an order that follows string hashes, which change with every run"
    # A set visibly built in the file spells `set` (`set(...)`, `frozenset(...)`, `set[str]`),
    # `Set` (`typing.Set[str]`) or a brace (displays, comprehensions). Almost every file does,
    # so the words save little: the walk itself is kept lean (see `visit_Call`).
    trigger_words = ("set", "Set", "{")
    fix_availability = FixAvailability.SOMETIMES
    bad = (
        "import csv\n\nimport torch\n\ndef label_map(path):\n    with open(path) "
        "as f:\n        labels = [row['label'] for row in csv.DictReader(f)]\n"
        "    classes = list(set(labels))\n    return {c: i for i, c in enumerate(classes)}\n",
        "import torch\nwords = set(open('vocab.txt').read().split())\nvocab = {w: i for i, w in enumerate(words)}\n",
        (
            "import random\n\ndef split(ids):\n    patients = list({i.strip() for i in ids})\n"
            "    return patients[:80], patients[80:]\n"
        ),
    )
    good = (
        "import csv\n\nimport torch\n\ndef label_map(path):\n    with open(path) "
        "as f:\n        labels = [row['label'] for row in csv.DictReader(f)]\n"
        "    classes = sorted(set(labels))\n    return {c: i for i, c in enumerate(classes)}\n",
        (
            "import torch\nwords = list(set(open('vocab.txt').read().split()))\nwords.sort()\n"
            "vocab = {w: i for i, w in enumerate(words)}\n"
        ),
        "import torch\nids = list({int(x) for x in open('ids.txt')})\nfirst = ids[:10]\n",
        "import torch\nnames = {'a', 'b'}\nprint(', '.join(names), len(names), 'a' in names)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.frames: List[_Frame] = [_Frame(None, None)]
        self.done: List[_Frame] = []
        self.class_names: List[Optional[str]] = [None]
        self.events: List[Tuple[_Set, cst.CSTNode, bool]] = []
        self.slots: Dict[int, _Set] = {}
        self.no_fix: Set[int] = set()
        # A set that is the whole argument of `list(...)` -> that call: the fix renames it `sorted`
        # (`list(sorted(s))` is `sorted(s)` spelled twice, ruff C414).
        self.list_of: Dict[int, cst.Call] = {}
        self.returned_elements: Dict[int, _Set] = {}  # function -> the elements of what it returns
        self.parameter_uses: Dict[int, Dict[str, int]] = {}
        self.frame_of: Dict[int, _Frame] = {}
        self.analysed: Set[int] = set()
        self.unreadable: Set[int] = set()
        self.module_env: Optional[Dict[str, object]] = None
        self.functions: Dict[Tuple[Optional[str], str], cst.FunctionDef] = {}

    # -- the walk: which functions build sets, and the names of the calls they make -------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_names.append(node.name.value if len(self.frames) == 1 else None)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        class_name = self.class_names[-1] if len(self.frames) == 1 else None
        self.frames.append(_Frame(node, class_name))
        if len(self.frames) == 2:
            self.functions[(class_name, node.name.value)] = node
        self.class_names.append(None)
        # `-> set[str]`, `names: Set[str]`: a subscripted annotation (rare) is looked at closer.
        returns = node.returns
        if returns is not None and type(returns.annotation) is cst.Subscript and _annotated_set(returns) is not False:
            self.frames[-1].builds_set = True
        for param in node.params.params:
            annotation = param.annotation
            if (
                annotation is not None
                and type(annotation.annotation) is cst.Subscript
                and _annotated_set(annotation) is not False
            ):
                self.frames[-1].builds_set = True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.done.append(self.frames.pop())
        self.class_names.pop()

    def visit_Set(self, node: cst.Set) -> None:
        self.frames[-1].builds_set = True

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self.frames[-1].builds_set = True

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) in _SET_OPERATORS and (_keys_call(node.left) or _keys_call(node.right)):
            self.frames[-1].builds_set = True  # `d.keys() - other` is a set

    def visit_Call(self, node: cst.Call) -> None:
        # Every call of the file comes here: note only what decides which functions to read.
        func = node.func
        kind = type(func)
        if kind is cst.Name:
            spelled = func.value
            frame = self.frames[-1]
            frame.calls.add(spelled)
            if spelled == "set" or spelled == "frozenset":
                frame.builds_set = True
        elif kind is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            self.frames[-1].self_calls.add(func.attr.value)

    # -- after the walk --------------------------------------------------------------------------
    def first_party(self, name: str, class_name: Optional[str]) -> Optional[cst.FunctionDef]:
        return self.functions.get((class_name, name))

    def parameter_use(self, function: cst.FunctionDef, name: str) -> int:
        """How a function of this file uses a parameter: `_SORTED` or `_FREE` (order-free),
        `_ORDER` / `_INDEX` (puts it in order), `_OTHER` (hands it on, returns or stores it)."""
        uses = self.parameter_uses.get(id(function))
        if uses is None:
            self.parameter_uses[id(function)] = {}  # a recursive call learns nothing
            frame = self.frame_of.get(id(function))
            uses = {}
            if frame is not None:
                analysis = _Analysis(self, frame, self.module_env)
                analysis.probing = True
                before = len(self.events)
                try:
                    stand_ins = analysis.probe(function)
                    uses = {param: (stand_in.how if stand_in.state == _FIRED else _FREE) for param, stand_in in stand_ins.items()}
                except RecursionError:
                    uses = {}
                del self.events[before:]  # the function's own findings come from its own reading
            self.parameter_uses[id(function)] = uses
        return uses.get(name, _OTHER)

    def call_result(self, function: cst.FunctionDef) -> _Set:
        """A call of a function of this file: a set if the function returns one; iterating it
        gives the elements of whatever the function returns (a list of strings, too)."""
        result = _Set([self.slot(function)], slot=True)
        result.elements = self.returned_elements.get(id(function))
        if result.elements is None:
            result.elements = self.returned_elements[id(function)] = _Set()
            result.elements.owner = function
        return result

    def slot(self, function: cst.FunctionDef) -> _Set:
        found = self.slots.get(id(function))
        if found is None:
            found = self.slots[id(function)] = _Set(slot=True)
        return found

    def leave_Module(self, original_node: cst.Module) -> None:
        module_frame = self.frames[0]
        if not module_frame.builds_set and not any(frame.builds_set for frame in self.done):
            return
        # Functions that may return a set: they build one, or call one that may (same file).
        frame_of = self.frame_of = {id(frame.node): frame for frame in self.done}
        returning: Set[Tuple[Optional[str], str]] = set()
        waiting = []
        for key, function in self.functions.items():
            frame = frame_of[id(function)]
            if frame.builds_set:
                returning.add(key)
            else:
                waiting.append((key, frame))
        changed = bool(returning)
        while changed and waiting:
            changed = False
            for item in list(waiting):
                if self._calls_returning(item[1], returning):
                    returning.add(item[0])
                    waiting.remove(item)
                    changed = True
        module_env: Optional[Dict[str, object]] = None
        if module_frame.builds_set or self._calls_returning(module_frame, returning):
            analysis = _Analysis(self, module_frame, None)
            self.module_env = analysis.env  # what the functions read meanwhile see (as at run time)
            if _read(analysis.statements, original_node.body, self.events):
                module_env = analysis.env
        self.module_env = module_env
        # Module-level sets of strings (`LABELS = {"cat", "dog"}`) are read in every function
        # that names them.
        kinds = _Kinds()
        shared = frozenset(
            name
            for name, value in (module_env or {}).items()
            if type(value) is _Set and kinds.of(value)[0] and _ordered_in_text(name, self.context.text)
        )
        chosen = [
            frame
            for frame in self.done
            if frame.builds_set or self._calls_returning(frame, returning) or (shared and _names_any(frame.node, shared))
        ]
        for frame in chosen:
            self._analyse(frame)
        # A function of this file whose result fills a set that is put in order is read too, for
        # what it returns (`set(load_labels(path))`); only then are the kinds final.
        for _ in range(3):
            kinds = _Kinds(self.analysed, self.unreadable)
            for set_, _node, _index in self.events:
                kinds.of(set_)
            if not kinds.wanted:
                break
            for function in kinds.wanted:
                self._analyse(self.frame_of[id(function)])
        self._report(_Kinds(self.analysed, self.unreadable))

    def _analyse(self, frame: _Frame) -> None:
        function = frame.node
        if id(function) in self.analysed:
            return
        self.analysed.add(id(function))
        analysis = _Analysis(self, frame, self.module_env)
        analysis.parameters(function)
        if not _read(analysis.block, function.body, self.events):
            self.unreadable.add(id(function))  # what it returns is of unknown kind

    def _calls_returning(self, frame: _Frame, returning: Set[Tuple[Optional[str], str]]) -> bool:
        if not returning:
            return False
        if any((None, name) in returning for name in frame.calls):
            return True
        return frame.class_name is not None and any((frame.class_name, name) in returning for name in frame.self_calls)

    def _report(self, kinds: "_Kinds") -> None:
        found: Dict[int, Tuple[cst.CSTNode, bool, bool]] = {}  # node -> (node, some strings, only strings)
        for set_, node, index in self.events:
            some_str, all_str, all_nonstr, real = kinds.of(set_)
            if not real or (all_nonstr and not some_str) or _singleton(set_):
                continue
            if not some_str and not index:
                continue
            previous = found.get(id(node))
            if previous is None or (some_str and not previous[1]):
                found[id(node)] = (node, some_str, all_str)
        for node, some_str, all_str in found.values():
            fix = None
            if id(node) not in self.no_fix:
                bare = node.with_changes(lpar=(), rpar=()) if getattr(node, "lpar", None) else node
                applicability = Applicability.SAFE if all_str else Applicability.UNSAFE
                listed = self.list_of.get(id(node))
                if listed is not None:
                    fix = FixBuilder("Replace `list(...)` by `sorted(...)`", applicability).replace(
                        listed.func, cst.Name("sorted")
                    )
                else:
                    fix = FixBuilder("Wrap the set in `sorted(...)`", applicability).replace(node, wrapped_in("sorted", bare))
            if some_str:
                message = (
                    "a set of strings is put in an order that follows string hashes, which change with every run "
                    "(PYTHONHASHSEED): wrap it in `sorted(...)`"
                )
            else:
                message = (
                    "a set's iteration order builds an index mapping; if its elements are strings (or hold one), "
                    "that order changes with every run (PYTHONHASHSEED): wrap it in `sorted(...)`"
                )
            self.report(node, message, fix)
