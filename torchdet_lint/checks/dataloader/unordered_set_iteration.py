"""TDL107 `unordered-set-iteration`: a set of strings put in an order that follows
string hashes. The walk only notes which functions build sets (and the names they call);
at the end of the file those functions are read statement by statement, a small local
dataflow over names (`set_order_analysis`, over the value model of `set_order_values`
and the known calls of `set_order_calls`), so the many files and functions without sets
cost almost nothing. This module holds the rule, its walk and its fix.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.set_order_analysis import _Analysis, _Frame, _nodes
from torchdet_lint.checks.dataloader.set_order_calls import _SET_OPERATORS
from torchdet_lint.checks.dataloader.set_order_values import _FIRED, _FREE, _OTHER, _annotated_set, _Kinds, _Set
from torchdet_lint.core.call_edits import wrapped_in
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.rule import FixAvailability, Rule


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
    # A data helper that builds a label map from `set(labels)` often mentions no word of the
    # summary's: `set(`/`set[`/`Set[`, a set comprehension (over several lines too), or a set
    # display of string literals lets its file into the parse.
    prefilter_patterns = (r"\bset[(\[]", r"\bSet\[", r"\{[^{}:]*\bfor\b[^{}:]*\}", r"\{\s*(?:'[^'\n]*'|\"[^\"\n]*\")\s*,")
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
                written = self.context.written(node)
                bare = written.with_changes(lpar=(), rpar=()) if getattr(written, "lpar", None) else written
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
