"""The rule model: diagnostics, fixes, the Rule base classes and the registry.

A rule is one class: its docstring is its documentation (fixed Markdown
sections), its class attributes are its metadata and examples, its
`visit_*`/`leave_*` methods (file rules) or `check` (project rules) find it.
"""

from __future__ import annotations

import enum
import inspect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Dict, FrozenSet, Iterable, Optional, Tuple, Type

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.context import FileContext
    from torchdet_lint.project import Project

# Diagnostic.extra key: the finding disappears when an entry point enables
# torch.use_deterministic_algorithms (the project phase drops it).
SILENCED_BY_FLAG = "silenced_by_deterministic_mode"
ALL_PROFILES = frozenset({"reproducible", "strict", "performance"})
DEFAULT_PROFILE = "reproducible"


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


class FixAvailability(str, enum.Enum):
    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"
    SOMETIMES = "sometimes"  # safe or unsafe depending on the site


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (character offsets into the decoded source) by `content`."""

    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: Tuple[Edit, ...]


@dataclass
class Diagnostic:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    fix: Optional[Fix] = None
    cell: Optional[int] = None  # 1-based notebook cell, None for .py files
    # Character offsets of the reported range in the (cell-joined) source,
    # used by the fixer, noqa handling and the language server.
    start_offset: int = 0
    end_offset: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.message)


class RuleRegistryError(Exception):
    pass


_REGISTRY: Dict[str, Type["BaseRule"]] = {}
_CODE_RE = re.compile(r"^TDL\d{3}$")
DOC_SECTIONS = ("Why is this bad?", "Fix safety", "Known problems", "Options", "References")


class BaseRule:
    """Metadata and documentation shared by file rules and project rules."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # Profiles whose starting selection contains this rule.
    profiles: ClassVar[FrozenSet[str]] = ALL_PROFILES
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    # Examples: each `bad` source gives at least one diagnostic of this rule,
    # each `good` source none. They run through the real engine in the tests.
    bad: ClassVar[Tuple[str, ...]] = ()
    good: ClassVar[Tuple[str, ...]] = ()
    # Config overrides the examples need (e.g. {"torch-version": "2.0"}).
    example_config: ClassVar[Dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if not code:
            return  # an abstract intermediate class
        if not _CODE_RE.match(code):
            raise RuleRegistryError(f"{cls.__name__}: rule code {code!r} is not TDL + three digits")
        if code in _REGISTRY and _REGISTRY[code] is not cls:
            raise RuleRegistryError(
                f"duplicate rule code {code}: {_REGISTRY[code].__name__} and {cls.__name__}"
            )
        if not cls.name or not cls.summary:
            raise RuleRegistryError(f"{code}: a rule needs a name and a summary")
        _REGISTRY[code] = cls

    @classmethod
    def is_default(cls) -> bool:
        return DEFAULT_PROFILE in cls.profiles

    @classmethod
    def documentation(cls) -> str:
        """The rule's Markdown documentation: its cleaned docstring."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_section(cls, title: str) -> str:
        doc = cls.documentation()
        match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", doc, re.M | re.S)
        return match.group(1).strip() if match else ""


class Rule(BaseRule, cst.BatchableCSTVisitor):
    """A file rule: visits one file's CST in the shared batched traversal."""

    def __init__(self, context: "FileContext") -> None:
        super().__init__()
        self.context = context

    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        fix: Optional["FixBuilder"] = None,
        extra: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Report `node`; `extra` is data for the project phase (see `SILENCED_BY_FLAG`)."""
        self.context.report(self, node, message or self.summary, fix, extra)


class ProjectRule(BaseRule):
    """A project rule: runs once per project over the file summaries."""

    def check(self, project: "Project") -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        raise NotImplementedError


class FixBuilder:
    """A fix described in CST terms; the file context turns it into text edits.

    Operations are recorded now and resolved to character offsets only when
    the diagnostic is emitted, so files without fixable findings never pay
    for positions.
    """

    def __init__(self, title: str, applicability: Applicability) -> None:
        self.title = title
        self.applicability = applicability
        self.replacements: list = []  # (old_node, new_node or source text)
        self.insertions: list = []  # (anchor kind, anchor node or None, text)
        self.imports: list = []  # (module, name or None, alias or None)

    def replace(self, old: cst.CSTNode, new: Any) -> "FixBuilder":
        self.replacements.append((old, new))
        return self

    def insert_before(self, statement: cst.CSTNode, text: str) -> "FixBuilder":
        """Insert whole lines before a statement, with the statement's indentation."""
        self.insertions.append(("before", statement, text))
        return self

    def insert_after(self, statement: cst.CSTNode, text: str) -> "FixBuilder":
        self.insertions.append(("after", statement, text))
        return self

    def insert_at_top(self, text: str) -> "FixBuilder":
        """Insert module-level lines right after the imports (docstring and imports kept first)."""
        self.insertions.append(("after_imports", None, text))
        return self

    def insert_before_module(self, module_prefix: str, text: str) -> "FixBuilder":
        """Insert module-level lines before the first import of `module_prefix`."""
        self.insertions.append(("before_import_of", module_prefix, text))
        return self

    def add_import(self, module: str, name: Optional[str] = None, alias: Optional[str] = None) -> "FixBuilder":
        self.imports.append((module, name, alias))
        return self


def all_rules() -> Dict[str, Type[BaseRule]]:
    """Every registered rule by code (importing the check modules registers them)."""
    import torchdet_lint.checks  # noqa: F401  (registration side effect)

    return dict(sorted(_REGISTRY.items()))


def get_rule(code: str) -> Optional[Type[BaseRule]]:
    return all_rules().get(code)
