"""TDL107's value model: what the set-order analysis knows of a value (a set and what its
elements are, what a set became once put in order, a sequence, a mapping's keys), how a
value is used, and the element kinds of sets once a whole file is read (`_Kinds`). Values
are read off annotations too (`set[str]`, `Dict[int, X]`).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

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
