"""The operation catalog: loads and validates `rules/*.toml` (once) into frozen
dataclasses, evaluates argument conditions on literal values, and compares the
catalog with the installed torch's `use_deterministic_algorithms` docstring.
"""

from __future__ import annotations

import ast
import enum
import hashlib
import inspect
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from torchdet_lint.core.data import TOMLDecodeError, load_toml, rules_directory  # noqa: F401  (rules_directory is public here)
from torchdet_lint.core.names import NOT_LITERAL

# (major, minor), or (major, minor, patch) for a library still in its 0.0.x releases
# (a `[library.x]` table with `version-parts = 3`, as xformers 0.0.21 versus 0.0.22).
Version = Tuple[int, ...]

RAISES = "raises"
DETERMINISTIC_ALTERNATIVE = "deterministic-alternative"
DETERMINISTIC = "deterministic"
NOT_LISTED = "not-listed"
IGNORES_FLAG = "ignores-flag"
STATUSES = (RAISES, DETERMINISTIC_ALTERNATIVE, DETERMINISTIC, NOT_LISTED)
# Statuses that make an operation a finding (the others mean "nothing to report").
ACTIVE_STATUSES = (RAISES, DETERMINISTIC_ALTERNATIVE)

TORCH_KIND = "torch"
THIRD_PARTY_KIND = "third-party"
# Statuses a third-party entry's `versions` may use: its own kernels may ignore the flag.
THIRD_PARTY_STATUSES = STATUSES + (IGNORES_FLAG,)

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_ANY_NEWER_VERSION = (10**6, 0)  # later than every version a catalog names


class CatalogError(Exception):
    """The catalog is malformed; the message names the file, the entry and the key."""


class Truth(enum.IntEnum):
    """How far a call meets a condition: for sure, perhaps (a non-literal argument), or not."""

    NO = 0
    MAYBE = 1
    YES = 2


@dataclass(frozen=True)
class Symbol:
    """An argument spelled as a qualified name (`dtype=torch.long`): not a literal."""

    name: str


@dataclass(frozen=True)
class Calls:
    """An argument that is not a literal but visibly calls functions (`fn.sum("m", "h")`,
    a dict of such calls): their qualified names, for a `calls` condition."""

    names: FrozenSet[str]


@dataclass(frozen=True)
class Sized:
    """A tuple or list whose elements are not literals but whose length is visible
    (`F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), "reflect")`)."""

    length: int

    def __bool__(self) -> bool:
        # what `if padding:` sees in a parameter a caller passed `[p] * n`
        return self.length > 0


@dataclass(frozen=True)
class Pattern:
    """A string known only by its literal ends: `f"a{reduce[-3:]}"` is some string starting
    with "a" (a literal that rules the condition out means no diagnostic)."""

    prefix: str = ""
    suffix: str = ""

    def may_be(self, value: Any) -> bool:
        return (
            isinstance(value, str)
            and len(value) >= len(self.prefix) + len(self.suffix)
            and value.startswith(self.prefix)
            and value.endswith(self.suffix)
        )


@dataclass(frozen=True)
class OneOf:
    """An argument known to be one of a few literals (`mode` in the body of
    `if mode in ("nearest", "area"):`)."""

    values: Tuple[Any, ...]


# The value of a parameter a form does not have: the form itself implies it.
UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()
# The default of a parameter whose default is not a literal (`name=...` in a signature).
OPAQUE_DEFAULT: Any = type("OpaqueDefault", (), {"__repr__": lambda self: "OPAQUE_DEFAULT"})()
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()


# How a function of a module fetched at run time is named in the forms (see `Library.module_fetchers`).
HUB_MODULE = "<hub>"


def parse_version(text: str) -> Version:
    match = _VERSION_RE.match(text.strip())
    if not match:
        raise ValueError(text)
    return tuple(int(part) for part in match.groups() if part is not None)


def version_text(version: Version) -> str:
    return ".".join(str(part) for part in version)


def _normal(value: Any) -> Any:
    """Lists become tuples so literal and catalog values compare alike."""
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    return value


def _same(a: Any, b: Any) -> bool:
    # `True == 1` in Python; an argument `True` must not meet a condition `[1]`.
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def same_value(a: Any, b: Any) -> bool:
    """Two literal values a condition cannot tell apart (`(1, 1)` and `[1, 1]`; `True` is not `1`)."""
    return _same(_normal(a), _normal(b))


def _is_literal(value: Any) -> bool:
    return value is not NOT_LITERAL and value is not UNKNOWN and not isinstance(value, Symbol)


@dataclass(frozen=True)
class Condition:
    """One argument condition: `kind` is in, not-in, given, absent, tensor, length, not-names or calls."""

    param: str
    kind: str
    values: Tuple[Any, ...] = ()

    def evaluate(self, value: Any) -> Truth:
        if value is UNKNOWN:
            return Truth.YES
        if isinstance(value, OneOf):
            truths = {self.evaluate(one) for one in value.values}
            return truths.pop() if len(truths) == 1 else Truth.MAYBE
        kind = self.kind
        if kind == "calls":
            # Only what is visible counts: a call of a listed function, or a literal string
            # naming one by its last segment (DGL's `"sum"` reducer).
            if isinstance(value, Calls):
                return Truth.YES if value.names & set(self.values) else Truth.NO
            if isinstance(value, str):
                return Truth.YES if any(v.rsplit(".", 1)[-1] == value for v in self.values) else Truth.NO
            return Truth.NO
        if isinstance(value, Calls):
            value = NOT_LITERAL
        if isinstance(value, Pattern):
            return _pattern_truth(kind, value, self.values)
        if kind == "not-names":
            return Truth.NO if isinstance(value, Symbol) and value.name in self.values else Truth.YES
        if kind == "given":
            return Truth.NO if value is None else Truth.YES
        if kind == "tensor":
            # A literal (number, bool, None, string) is never the tensor the kernel needs.
            return Truth.NO if _is_literal(value) else Truth.YES
        if isinstance(value, Sized):
            if kind == "length":
                return Truth.YES if value.length in self.values else Truth.NO
            return Truth.MAYBE
        if not _is_literal(value):
            return Truth.MAYBE
        value = _normal(value)
        if kind == "absent":
            return Truth.YES if value is None else Truth.NO
        if kind == "in":
            return Truth.YES if any(_same(value, v) for v in self.values) else Truth.NO
        if kind == "not-in":
            return Truth.NO if any(_same(value, v) for v in self.values) else Truth.YES
        if kind == "length":
            return Truth.YES if isinstance(value, tuple) and len(value) in self.values else Truth.NO
        raise AssertionError(kind)  # pragma: no cover - validated at load


def _pattern_truth(kind: str, pattern: Pattern, values: Tuple[Any, ...]) -> Truth:
    """A condition on a string known by its literal ends: ruled out when no listed value fits them."""
    fits = any(pattern.may_be(v) for v in values)
    if kind == "in":
        return Truth.MAYBE if fits else Truth.NO
    if kind == "not-in":
        return Truth.MAYBE if fits else Truth.YES
    if kind in ("given", "not-names"):
        return Truth.YES
    if kind == "calls":
        return Truth.MAYBE if any(pattern.may_be(v.rsplit(".", 1)[-1]) for v in values) else Truth.NO
    return Truth.NO  # absent, tensor, length: a string is never None, a tensor or a tuple


def evaluate_all(conditions: Iterable[Condition], values: Mapping[str, Any]) -> Truth:
    result = Truth.YES
    for condition in conditions:
        result = min(result, condition.evaluate(values.get(condition.param, UNKNOWN)))
        if result is Truth.NO:
            break
    return result


@dataclass(frozen=True)
class Param:
    name: str
    default: Any = REQUIRED  # a literal value, REQUIRED or OPAQUE_DEFAULT
    keyword_only: bool = False


@dataclass(frozen=True)
class Form:
    """Call spellings sharing one signature."""

    functions: Tuple[str, ...] = ()
    modules: Tuple[str, ...] = ()
    methods: Tuple[str, ...] = ()
    params: Optional[Tuple[Param, ...]] = None  # None: any arguments (no condition reads them)
    fixed: Tuple[Tuple[str, Any], ...] = ()
    when: Tuple[Condition, ...] = ()
    cases: Optional[Tuple[str, ...]] = None
    # Methods only: the receiver must visibly come from a call of one of these functions
    # (`torch.quantize_per_tensor(...)` makes the quantized tensor whose `resize_` raises).
    receiver_from: Tuple[str, ...] = ()
    var_positional: bool = False  # the signature has `*args`: any number of positional arguments fits

    def param(self, name: str) -> Optional[Param]:
        for param in self.params or ():
            if param.name == name:
                return param
        return None


@dataclass(frozen=True)
class DocstringLag:
    documented: str
    reason: str


@dataclass(frozen=True)
class Case:
    id: str
    label: str
    device: str
    phase: str
    dtype: str
    when: Tuple[Condition, ...]
    versions: Tuple[Tuple[Version, str], ...]
    remedy: str
    docstring: Tuple[str, ...] = ()
    docstring_lag: Optional[DocstringLag] = None
    undocumented: str = ""
    notes: str = ""

    def status_at(self, version: Version) -> Optional[str]:
        """The behaviour under the flag at `version`; None before the catalog covers it."""
        status = None
        for since, value in self.versions:
            if version >= since:
                status = value
        return status

    def condition_text(self) -> str:
        parts = [f"{self.phase} on {self.device}"]
        if self.dtype and self.dtype != "any":
            parts.append(self.dtype)
        return ", ".join(parts)


@dataclass(frozen=True)
class Operation:
    id: str
    name: str
    kind: str
    file: str
    forms: Tuple[Form, ...]
    cases: Tuple[Case, ...]
    report: bool = True
    not_reported_because: str = ""
    strict_only: bool = False
    # Third party: the library whose version keys `versions` ("" for torch's own and
    # for entries that follow a torch operation), and the torch operation followed.
    library: str = ""
    follows: str = ""
    via: str = ""
    through: str = ""  # how a follower reaches `via`, for messages ("sums through `via`" when empty)
    notes: str = ""
    source: str = ""

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def status_at(
        self, case: Case, torch_version: Version, library_versions: Optional[Mapping[str, Version]] = None
    ) -> Optional[str]:
        """The behaviour of one case under the flag: at the target torch version, or for a
        library's own kernels at the library's target version (its newest behaviour when the
        caller resolved none)."""
        if self.library:
            return case.status_at((library_versions or {}).get(self.library, _ANY_NEWER_VERSION))
        return case.status_at(torch_version)


@dataclass(frozen=True)
class Library:
    """A third-party library the catalog describes: its import name (the key of config
    `library-versions`), the distributions whose metadata give its installed version, and
    the newest version whose source the catalog was checked against."""

    name: str
    distributions: Tuple[str, ...]
    checked_through: Optional[Version]
    file: str = ""
    # DataLoader subclasses: read by keyword only, or (positional) with DataLoader's own positions.
    loaders: Tuple[str, ...] = ()
    loaders_positional: Tuple[str, ...] = ()
    # Those of the loaders that install a `worker_init_fn` of their own when none is given.
    own_worker_init: Tuple[str, ...] = ()
    # Calls that return one of its modules at run time (`kernels.get_kernel("org/flash-attn3")`): a
    # function `f` of such a module is named `<library>.<hub>.f` in the forms.
    module_fetchers: Tuple[str, ...] = ()
    version_parts: int = 2  # how many dotted numbers tell its versions apart
    source: str = ""


@dataclass(frozen=True)
class Catalog:
    operations: Tuple[Operation, ...]
    checked_through: Version
    fingerprint: str = ""
    files: Tuple[str, ...] = field(default=())
    libraries: Tuple[Library, ...] = ()

    def library(self, name: str) -> Optional[Library]:
        for library in self.libraries:
            if library.name == name:
                return library
        return None

    def newest_library_version(self, name: str) -> Version:
        """The version a library is taken at when neither config nor metadata gives one."""
        library = self.library(name)
        versions = [since for op in self.operations if op.library == name for case in op.cases for since, _ in case.versions]
        if library is not None and library.checked_through:
            versions.append(library.checked_through)
        return max(versions, default=(0, 0))

    def by_id(self, op_id: str) -> Operation:
        for operation in self.operations:
            if operation.id == op_id:
                return operation
        raise KeyError(op_id)

    def newest_version(self) -> Version:
        versions = [self.checked_through]
        for operation in self.operations:
            if operation.kind != TORCH_KIND:
                continue  # third-party versions are the libraries' own
            for case in operation.cases:
                versions.extend(since for since, _ in case.versions)
        return max(versions)


# -- loading -------------------------------------------------------------------------

_OP_KEYS = {
    "id",
    "name",
    "device",
    "phase",
    "dtype",
    "versions",
    "when",
    "remedy",
    "docstring",
    "docstring-lag",
    "undocumented",
    "notes",
    "source",
    "report",
    "not-reported-because",
    "strict-only",
    "library",
    "follows",
    "via",
    "through",
    "form",
    "case",
}
_CASE_KEYS = {
    "id",
    "label",
    "device",
    "phase",
    "dtype",
    "when",
    "versions",
    "remedy",
    "docstring",
    "docstring-lag",
    "undocumented",
    "notes",
}
# Op-level keys that are defaults for its cases.
_CASE_DEFAULT_KEYS = ("device", "phase", "dtype", "versions", "remedy", "docstring", "docstring-lag", "undocumented", "notes")
_FORM_KEYS = {"functions", "modules", "methods", "signature", "fixed", "when", "cases", "receiver-from"}
_CONDITION_KINDS = {"in", "not-in", "given", "absent", "tensor", "length", "not-names", "calls"}
_LIBRARY_KEYS = {
    "distributions",
    "checked-through",
    "source",
    "loaders",
    "loaders-positional",
    "own-worker-init",
    "version-parts",
    "module-fetchers",
}
_CATALOG_KINDS = (TORCH_KIND, THIRD_PARTY_KIND)
_PARAM_RE = re.compile(r"^([A-Za-z_]\w*)(?:=(.+))?$")


class _Where:
    """Builds error messages that name the file, the entry and the key."""

    def __init__(self, file: str, entry: str = "") -> None:
        self.file = file
        self.entry = entry

    def error(self, message: str) -> CatalogError:
        where = f"{self.file}: op {self.entry!r}" if self.entry else self.file
        return CatalogError(f"{where}: {message}")


def _check_keys(table: Mapping[str, Any], allowed: set, where: _Where, what: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise where.error(f"unknown key `{unknown[0]}` in {what} (allowed: {', '.join(sorted(allowed))})")


def _string(table: Mapping[str, Any], key: str, where: _Where, default: Optional[str] = None) -> str:
    value = table.get(key, default)
    if value is None:
        raise where.error(f"`{key}` is required")
    if not isinstance(value, str):
        raise where.error(f"`{key}` must be a string, got {type(value).__name__}")
    return value


def _strings(table: Mapping[str, Any], key: str, where: _Where) -> Tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise where.error(f"`{key}` must be a list of strings")
    return tuple(value)


def _version(text: Any, where: _Where, key: str) -> Version:
    if not isinstance(text, str):
        raise where.error(f'`{key}` must be a version string like "2.1"')
    try:
        return parse_version(text)
    except ValueError:
        raise where.error(f'`{key}`: {text!r} is not a version like "2.1"') from None


def _versions(value: Any, where: _Where, statuses: Sequence[str] = STATUSES) -> Tuple[Tuple[Version, str], ...]:
    if not isinstance(value, dict) or not value:
        raise where.error("`versions` must be a non-empty table of version = status")
    result = []
    for text, status in value.items():
        if status not in statuses:
            raise where.error(f'`versions."{text}"`: unknown status {status!r} (expected one of {", ".join(statuses)})')
        result.append((_version(text, where, f'versions."{text}"'), status))
    result.sort()
    return tuple(result)


def _conditions(value: Any, where: _Where) -> Tuple[Condition, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise where.error("`when` must be a table of parameter = condition")
    result = []
    for param, spec in value.items():
        if isinstance(spec, list):
            result.append(Condition(param, "in", _normal(spec)))
        elif isinstance(spec, str):
            if spec not in ("given", "absent", "tensor"):
                raise where.error(f'`when.{param}`: unknown condition {spec!r} (a list, a table, "given", "absent" or "tensor")')
            result.append(Condition(param, spec))
        elif isinstance(spec, dict) and len(spec) == 1:
            kind, values = next(iter(spec.items()))
            if kind not in _CONDITION_KINDS or not isinstance(values, list):
                raise where.error(
                    f"`when.{param}`: unknown condition `{kind}` (expected one "
                    f"of {', '.join(sorted(_CONDITION_KINDS))} with a list)"
                )
            result.append(Condition(param, kind, _normal(values)))
        else:
            raise where.error(f"`when.{param}` must be a list of values or a table with one condition")
    return tuple(result)


def _signature(value: Any, where: _Where) -> Optional[Tuple[Param, ...]]:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise where.error("`signature` must be a list of strings")
    params: List[Param] = []
    keyword_only = False
    for item in value:
        if item == "*" or re.fullmatch(r"\*[A-Za-z_]\w*", item):
            # `*sizes` (as `resize_(*sizes)` takes them) ends the positional parameters too;
            # extra positional arguments then fit (`Form.var_positional`).
            keyword_only = True
            continue
        match = _PARAM_RE.match(item.strip())
        if not match:
            raise where.error(f"`signature`: {item!r} is not `name` or `name=default`")
        name, default_text = match.groups()
        default: Any = REQUIRED
        if default_text is not None:
            if default_text.strip() == "...":
                default = OPAQUE_DEFAULT
            else:
                try:
                    default = _normal(ast.literal_eval(default_text))
                except (ValueError, SyntaxError):
                    raise where.error(
                        f"`signature`: the default of {name!r} is not a Python literal (use `{name}=...`)"
                    ) from None
        params.append(Param(name, default, keyword_only))
    return tuple(params)


def _lag(value: Any, where: _Where) -> Optional[DocstringLag]:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"documented", "reason"}:
        raise where.error('`docstring-lag` must be { documented = status, reason = "..." }')
    if value["documented"] not in STATUSES or not isinstance(value["reason"], str) or not value["reason"].strip():
        raise where.error("`docstring-lag` needs a known `documented` status and a non-empty `reason`")
    return DocstringLag(value["documented"], value["reason"])


def _case(
    table: Mapping[str, Any],
    defaults: Mapping[str, Any],
    op_when: Tuple[Condition, ...],
    kind: str,
    name: str,
    where: _Where,
    index: int,
) -> Case:
    _check_keys(table, _CASE_KEYS, where, f"case #{index + 1}")
    merged = {**{k: v for k, v in defaults.items() if k in _CASE_DEFAULT_KEYS}, **table}
    case_id = _string(merged, "id", where, default="main")
    if "follows" in defaults:
        if "versions" in merged:
            raise where.error("an entry that `follows` a torch operation takes its `versions` from it")
        versions: Tuple[Tuple[Version, str], ...] = ()  # filled in from the followed operation at load
    elif "versions" not in merged:
        raise where.error(f"case {case_id!r}: `versions` is required")
    else:
        versions = _versions(merged["versions"], where, STATUSES if kind == TORCH_KIND else THIRD_PARTY_STATUSES)
    return Case(
        id=case_id,
        label=_string(merged, "label", where, default=""),
        device=_string(merged, "device", where),
        phase=_string(merged, "phase", where),
        dtype=_string(merged, "dtype", where, default="any"),
        when=op_when + _conditions(table.get("when"), where),
        versions=versions,
        remedy=_string(merged, "remedy", where, default="run it on the CPU"),
        docstring=_strings(merged, "docstring", where),
        docstring_lag=_lag(merged.get("docstring-lag"), where),
        undocumented=_string(merged, "undocumented", where, default=""),
        notes=_string(merged, "notes", where, default=""),
    )


def _form(table: Mapping[str, Any], where: _Where, case_ids: Sequence[str]) -> Form:
    if not isinstance(table, dict):
        raise where.error("`form` must be an array of tables ([[op.form]])")
    _check_keys(table, _FORM_KEYS, where, "a form")
    functions = _strings(table, "functions", where)
    modules = _strings(table, "modules", where)
    methods = _strings(table, "methods", where)
    if not (functions or modules or methods):
        raise where.error("a form needs `functions`, `modules` or `methods`")
    fixed = table.get("fixed", {})
    if not isinstance(fixed, dict):
        raise where.error("`fixed` must be a table of parameter = value")
    receiver_from = _strings(table, "receiver-from", where)
    if receiver_from and not methods:
        raise where.error("`receiver-from` applies to `methods` forms only")
    cases = table.get("cases")
    if cases is not None:
        cases = _strings(table, "cases", where)
        for case_id in cases:
            if case_id not in case_ids:
                raise where.error(f"form cases: no case {case_id!r} (cases: {', '.join(case_ids)})")
    return Form(
        functions=functions,
        modules=modules,
        methods=methods,
        params=_signature(table.get("signature"), where),
        var_positional=any(
            re.fullmatch(r"\*[A-Za-z_]\w*", item) for item in table.get("signature") or () if isinstance(item, str)
        ),
        fixed=tuple((k, _normal(v)) for k, v in fixed.items()),
        when=_conditions(table.get("when"), where),
        cases=cases,
        receiver_from=receiver_from,
    )


def _operation(table: Mapping[str, Any], kind: str, file: str) -> Operation:
    if not isinstance(table, dict):
        raise _Where(file).error("`op` must be an array of tables ([[op]])")
    where = _Where(file, str(table.get("id", "?")))
    _check_keys(table, _OP_KEYS, where, "the entry")
    op_id = _string(table, "id", where)
    name = _string(table, "name", where)
    op_when = _conditions(table.get("when"), where)
    raw_cases = table.get("case") or [{}]
    if not isinstance(raw_cases, list):
        raise where.error("`case` must be an array of tables ([[op.case]])")
    cases = tuple(_case(case, table, op_when, kind, name, where, i) for i, case in enumerate(raw_cases))
    case_ids = [case.id for case in cases]
    if len(set(case_ids)) != len(case_ids):
        raise where.error("case ids must be unique")
    raw_forms = table.get("form", [])
    if not isinstance(raw_forms, list):
        raise where.error("`form` must be an array of tables ([[op.form]])")
    forms = tuple(_form(form, where, case_ids) for form in raw_forms)
    report = table.get("report", True)
    if not isinstance(report, bool):
        raise where.error("`report` must be true or false")
    not_reported_because = _string(table, "not-reported-because", where, default="")
    if not report and not not_reported_because.strip():
        raise where.error("`report = false` needs `not-reported-because`")
    if report and not forms:
        raise where.error("a reported entry needs at least one [[op.form]]")
    strict_only = table.get("strict-only", False)
    if not isinstance(strict_only, bool):
        raise where.error("`strict-only` must be true or false")
    library = _string(table, "library", where, default="")
    follows = _string(table, "follows", where, default="")
    if kind == THIRD_PARTY_KIND:
        if bool(library) == bool(follows):
            raise where.error(
                "a third-party entry needs either `library` (its `versions` "
                "are the library's) or `follows` (a torch operation's id)"
            )
        if follows:
            _string(table, "via", where)
    elif library or follows or "via" in table or "through" in table:
        raise where.error("`library`, `follows`, `via` and `through` belong to third-party catalogs")
    if "through" in table and not follows:
        raise where.error("`through` says how an entry that `follows` a torch operation reaches it")
    if report:
        for form in forms:
            if form.methods and form.params is None:
                raise where.error("a form with `methods` needs a `signature` (methods are told apart from other APIs by it)")
    _check_params(forms, cases, where)
    return Operation(
        id=op_id,
        name=name,
        kind=kind,
        file=file,
        forms=forms,
        cases=cases,
        report=report,
        not_reported_because=not_reported_because,
        strict_only=strict_only,
        library=library,
        follows=follows,
        via=_string(table, "via", where, default=""),
        through=_string(table, "through", where, default=""),
        notes=_string(table, "notes", where, default=""),
        source=_string(table, "source", where),
    )


def _check_params(forms: Sequence[Form], cases: Sequence[Case], where: _Where) -> None:
    """Every condition names a parameter some form has (catches typos in the data)."""
    if not forms or any(form.params is None for form in forms):
        return
    known = set()
    for form in forms:
        known.update(param.name for param in form.params or ())
        known.update(name for name, _ in form.fixed)
    conditions = [c for form in forms for c in form.when] + [c for case in cases for c in case.when]
    for condition in conditions:
        if condition.param not in known:
            raise where.error(f"condition on `{condition.param}`, which no form's signature or `fixed` has")


def _libraries(value: Any, where: _Where) -> Tuple[Library, ...]:
    if not isinstance(value, dict):
        raise where.error("`library` must be a table of [library.<import name>] tables")
    result = []
    for name, table in value.items():
        if not isinstance(table, dict):
            raise where.error(f"`library.{name}` must be a table")
        _check_keys(table, _LIBRARY_KEYS, where, f"[library.{name}]")
        distributions = _strings(table, "distributions", where) or (name, name.replace("_", "-"))
        checked = (
            _version(table["checked-through"], where, f"library.{name}.checked-through") if "checked-through" in table else None
        )
        parts = table.get("version-parts", 2)
        if parts not in (2, 3):
            raise where.error(f"`library.{name}.version-parts` must be 2 or 3")
        loaders = _strings(table, "loaders", where)
        own_worker_init = _strings(table, "own-worker-init", where)
        loaders_positional = _strings(table, "loaders-positional", where)
        stray = [loader for loader in own_worker_init if loader not in loaders + loaders_positional]
        if stray:
            raise where.error(f"`library.{name}.own-worker-init`: {stray[0]!r} is not one of its `loaders`")
        library = Library(
            name,
            tuple(dict.fromkeys(distributions)),
            checked,
            where.file,
            loaders=loaders,
            loaders_positional=loaders_positional,
            own_worker_init=own_worker_init,
            module_fetchers=_strings(table, "module-fetchers", where),
            version_parts=parts,
            source=_string(table, "source", where, default=""),
        )
        _check_version_parts(library, [checked] if checked else [], where)
        result.append(library)
    return tuple(result)


def _check_version_parts(library: Optional[Library], versions: Iterable[Version], where: _Where) -> None:
    """A version written with more parts than its library counts would sort before the same
    release as metadata reads it (`0.16.1` > `0.16`): the data must use the library's precision."""
    parts = library.version_parts if library is not None else 2
    for version in versions:
        if len(version) > parts:
            whose = f"library {library.name!r}" if library is not None else "torch"
            raise where.error(f"version {version_text(version)!r}: {whose} versions have {parts} parts (`version-parts`)")


def parse_catalog_file(
    data: Mapping[str, Any], file: str
) -> Optional[Tuple[str, Optional[Version], Tuple[Operation, ...], Tuple[Library, ...]]]:
    """(kind, checked-through, operations, libraries) of one TOML document, or None when it is no op catalog."""
    header = data.get("catalog")
    if not isinstance(header, dict) or header.get("kind") not in _CATALOG_KINDS:
        return None  # another data file in rules/ (seeding helpers, ...)
    where = _Where(file)
    _check_keys(header, {"kind", "checked-through"}, where, "[catalog]")
    kind = header["kind"]
    _check_keys(data, {"catalog", "op", "library"} if kind == THIRD_PARTY_KIND else {"catalog", "op"}, where, "the file")
    checked = _version(header["checked-through"], where, "checked-through") if "checked-through" in header else None
    operations = tuple(_operation(table, kind, file) for table in data.get("op", []))
    libraries = _libraries(data.get("library", {}), where)
    known = {library.name: library for library in libraries}
    for operation in operations:
        if operation.library and operation.library not in known:
            raise _Where(file, operation.id).error(
                f"`library = {operation.library!r}` has no [library.{operation.library}] table in this file"
            )
        versions = [since for case in operation.cases for since, _ in case.versions]
        _check_version_parts(known.get(operation.library), versions, _Where(file, operation.id))
    return kind, checked, operations, libraries


def _follow(operation: Operation, by_id: Mapping[str, Operation]) -> Operation:
    """A third-party entry that `follows` a torch operation ("op" or "op/case") behaves as it does."""
    op_id, _, case_id = operation.follows.partition("/")
    followed = by_id.get(op_id)
    where = _Where(operation.file, operation.id)
    if followed is None or followed.kind != TORCH_KIND:
        raise where.error(f"`follows = {operation.follows!r}`: no torch operation with that id")
    try:
        case = followed.case(case_id) if case_id else followed.cases[0]
    except KeyError:
        raise where.error(f"`follows = {operation.follows!r}`: {op_id!r} has no case {case_id!r}") from None
    return replace(operation, cases=tuple(replace(own, versions=case.versions) for own in operation.cases))


def load_catalog_files(paths: Sequence[Path]) -> Catalog:
    operations: List[Operation] = []
    libraries: List[Library] = []
    checked: List[Version] = []
    digest = hashlib.sha256()
    files = []
    for path in sorted(paths):
        raw = path.read_bytes()
        if b"[catalog]" not in raw:
            continue  # another data file in rules/ (seeding helpers, ...)
        try:
            data = load_toml(path)
        except (TOMLDecodeError, UnicodeDecodeError) as error:
            raise CatalogError(f"{path.name}: invalid TOML: {error}") from None
        parsed = parse_catalog_file(data, path.name)
        if parsed is None:
            continue
        digest.update(path.name.encode() + b"\0" + raw)
        files.append(path.name)
        kind, checked_through, entries, described = parsed
        if checked_through and kind == TORCH_KIND:
            checked.append(checked_through)
        operations.extend(entries)
        for library in described:
            if any(other.name == library.name for other in libraries):
                raise CatalogError(f"{path.name}: [library.{library.name}] is also described in another file")
            libraries.append(library)
    seen: Dict[str, Operation] = {}
    for operation in operations:
        if operation.id in seen:
            raise CatalogError(f"{operation.file}: op {operation.id!r} is also defined in {seen[operation.id].file}")
        seen[operation.id] = operation
    operations = [_follow(op, seen) if op.follows else op for op in operations]
    if not operations:
        raise CatalogError(f"no operation catalog found among {', '.join(p.name for p in paths) or 'no files'}")
    return Catalog(
        tuple(operations), max(checked) if checked else (0, 0), digest.hexdigest()[:16], tuple(files), tuple(libraries)
    )


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The shipped catalog, loaded and validated once per process."""
    return load_catalog_files(sorted(rules_directory().glob("*.toml")))


def newest_version() -> Version:
    """The newest torch version the catalog describes (the fallback target version)."""
    return load_catalog().newest_version()


# -- the docstring drift check ----------------------------------------------------------

_ROLE_RE = re.compile(r":(?:class|func|meth|attr|mod):`~?([^`]+)`")
_SECTION_HEADERS = (
    (DETERMINISTIC_ALTERNATIVE, re.compile(r"will\s+act\s+deterministically")),
    (RAISES, re.compile(r"will\s+throw\s+a")),
)


def normalize_bullet(text: str) -> str:
    """Bullet text without reST roles and literal markup, on one line."""
    text = _ROLE_RE.sub(r"\1", text).replace("``", "").replace("`", "")
    return " ".join(text.split())


def docstring_bullets(docstring: str) -> List[Tuple[str, str]]:
    """(status, normalised bullet) for each operation `use_deterministic_algorithms` lists.

    A bullet's status is that of the last section header before it ("will act
    deterministically" / "will throw a RuntimeError"); indented sub-bullets
    (interpolate's modes) are appended to their bullet.
    """
    bullets: List[list] = []  # [status, indent, parts, sub-bullets]
    prose = ""
    section: Optional[str] = None
    current: Optional[list] = None
    for line in inspect.cleandoc(docstring).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("* "):
            current = [section, indent, [stripped[2:]], []]
            bullets.append(current)
            continue
        if stripped.startswith("- ") and current is not None:
            current[3].append(stripped[2:])
            continue
        if not stripped:
            continue
        if current is not None and indent > current[1] and not current[3]:
            current[2].append(stripped)
            continue
        current = None
        prose = " ".join((prose + " " + stripped).split())[-200:]
        for status, header in _SECTION_HEADERS:
            if header.search(prose):
                section = status
                prose = ""
    result = []
    for status, _, parts, subs in bullets:
        if status is None:
            continue
        text = normalize_bullet(" ".join(parts))
        if subs:
            text += " " + ", ".join(normalize_bullet(sub) for sub in subs)
        result.append((status, text))
    return result


def docstring_drift(catalog: Catalog, docstring: str, version: Version) -> List[str]:
    """Differences between the catalog at `version` and that version's docstring.

    Every listed operation must be claimed by a catalog case with the same
    behaviour at `version`, or a case marked `docstring-lag` with the
    documented behaviour and a reason; every case active at `version` that
    claims a bullet must find it in the docstring.
    """
    claims: Dict[str, List[Tuple[Operation, Case]]] = {}
    for operation in catalog.operations:
        if operation.kind != TORCH_KIND:
            continue
        for case in operation.cases:
            for bullet in case.docstring:
                claims.setdefault(bullet, []).append((operation, case))
    listed = docstring_bullets(docstring)
    problems = []
    where = version_text(version)
    for status, bullet in listed:
        owners = claims.get(bullet)
        if not owners:
            problems.append(f"torch {where} lists {bullet!r} ({status}), which no catalog entry claims")
            continue
        for operation, case in owners:
            actual = case.status_at(version)
            if actual == status:
                continue
            lag = case.docstring_lag
            if lag is not None and lag.documented == status:
                continue
            problems.append(
                f"{operation.id}/{case.id}: torch {where} documents {bullet!r} as {status}, "
                f"the catalog says {actual or 'not covered'} (mark `docstring-lag` with a reason if the code differs)"
            )
    documented = {bullet for _, bullet in listed}
    for bullet, owners in claims.items():
        for operation, case in owners:
            if case.status_at(version) in ACTIVE_STATUSES and bullet not in documented:
                problems.append(f"{operation.id}/{case.id}: claims {bullet!r}, which torch {where} does not list")
    return problems
