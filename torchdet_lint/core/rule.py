"""The rule model: the Rule base classes, their metadata and documentation.

A rule is one class: its docstring is its documentation (fixed Markdown
sections), its class attributes are its metadata and examples, its
`visit_*`/`leave_*` methods (file rules) or `check` (project rules) find it.
The registry of rules lives with the rules, in `torchdet_lint.checks`.
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
from typing import Any, Callable, ClassVar, Dict, FrozenSet, Iterable, List, Optional, Tuple

import libcst as cst

from torchdet_lint.core.context import FileContext
from torchdet_lint.core.diagnostics import Diagnostic, FixBuilder
from torchdet_lint.core.settings import ALL_PROFILES, DEFAULT_PROFILE, Settings


class FixAvailability(str, enum.Enum):
    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"
    SOMETIMES = "sometimes"  # safe or unsafe depending on the site


class RuleRegistryError(Exception):
    pass


_CODE_RE = re.compile(r"^TDL\d{3}$")
DOC_SECTIONS = ("Why is this bad?", "Fix safety", "Known problems", "Options", "References")
# Where a rule's documentation page lives, relative to the repository's root: one Markdown page
# per rule, rendered from the rule class by `python -m torchdet_lint.docs` (a test keeps them
# current). JSON, SARIF and the other outputs give this as the rule's `url`.
RULE_DOCS_URL = "docs/rules/{code}.md"


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
    # The fact collectors (classes of the model layer) whose facts the rule reads from the file
    # summaries, as LibCST's metadata providers are declared. Each has `for_file(context,
    # collector)` (None when the text cannot hold its facts) and `finish()`, which stores its
    # facts in the summary; it may declare `prefilter_words`. The file pass runs the collectors
    # of every registered rule (summaries are cached and shared by runs of any selection).
    collectors: ClassVar[Tuple[Any, ...]] = ()
    # Regular expressions that let a file into the parse, as `prefilter_words` below.
    prefilter_patterns: ClassVar[Tuple[str, ...]] = ()

    @classmethod
    def prefilter_words(cls) -> Tuple[str, ...]:
        """Words that let a file into the parse: a file that holds none of the words (and
        matches none of the patterns) that the registered rules and their collectors declare,
        nor the summary collector's own, is never parsed. Only a rule whose findings need
        more than those declares any."""
        return ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if not code:
            return  # an abstract intermediate class
        if not _CODE_RE.match(code):
            raise RuleRegistryError(f"{cls.__name__}: rule code {code!r} is not TDL + three digits")
        if not cls.name or not cls.summary:
            raise RuleRegistryError(f"{code}: a rule needs a name and a summary")

    @classmethod
    def is_rule(cls) -> bool:
        """A concrete rule (with a code), not an abstract intermediate class."""
        return bool(cls.__dict__.get("code"))

    @classmethod
    def url(cls) -> str:
        """The rule's documentation page (`RULE_DOCS_URL`)."""
        return RULE_DOCS_URL.format(code=cls.code)

    @classmethod
    def is_default(cls) -> bool:
        return DEFAULT_PROFILE in cls.profiles

    @classmethod
    def documentation(cls) -> str:
        """The rule's Markdown documentation: its cleaned docstring, and what it generates
        from its data (a catalog table) after it."""
        generated = cls.generated_documentation()
        return inspect.cleandoc(cls.__doc__ or "") + ("\n\n" + generated if generated else "")

    @classmethod
    def generated_documentation(cls) -> str:
        """Markdown a rule renders from its data files, so its docs cannot drift from them."""
        return ""

    @classmethod
    def relabel_lines(cls, diagnostic: Diagnostic, line_label: Callable[[int], str]) -> None:
        """Called when a notebook's finding is placed in its cells: the lines of the joined
        code that the rule keeps in `diagnostic.extra` for a later message, renamed with
        `line_label` (`cell 5, line 5`). Most rules keep none."""

    @classmethod
    def doc_section(cls, title: str) -> str:
        doc = cls.documentation()
        match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", doc, re.M | re.S)
        return match.group(1).strip() if match else ""


class Rule(BaseRule, cst.BatchableCSTVisitor):
    """A file rule: visits one file's CST in the shared batched traversal."""

    # Words one of which a file's text must contain for this rule to report there: the
    # last part of each name the rule reacts to (`DataLoader` for
    # `torch.utils.data.DataLoader`, `manual_seed`). The engine leaves the rule out of the
    # walk of a file that contains none (a substring search costs far less than the
    # rule's visit of every call). Sound because a resolved name's last part is always
    # spelled in the file: in the call, or in the import an alias comes from (a string
    # the rule matches, `"PYTHONHASHSEED"`, is taken to be written whole). Empty: the
    # rule runs on every file. A rule whose names come from the configuration or the
    # catalogs overrides `words`.
    trigger_words: ClassVar[Tuple[str, ...]] = ()

    @classmethod
    def words(cls, settings: Settings) -> Tuple[str, ...]:
        return cls.trigger_words

    @classmethod
    def may_report_in(cls, text: str, settings: Settings) -> bool:
        words = _words(cls, settings)
        return not words or any(word in text for word in words)

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context

    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        fix: Optional[FixBuilder] = None,
        extra: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Report `node`; `extra` is the rule's own data for its `refine` (and the cache keeps it)."""
        self.context.report(self.code, self.name, node, message or self.summary, fix, extra)

    # -- the project phase ----------------------------------------------------------------
    # A file rule sees one file. Where the rest of the project can settle a finding (an entry
    # point elsewhere enables the flag, another module calls `set_epoch`), the rule leaves what
    # it needs in the finding's `extra` and decides in `refine`, once the project model exists.

    # The `Diagnostic.extra` key under which the rule leaves what its `refine` decides on: a
    # finding with a value there waits for the project (`needs_project`).
    refined_by: ClassVar[Optional[str]] = None

    @classmethod
    def needs_project(cls, diagnostic: Diagnostic) -> bool:
        """Whether `refine` has something to decide about this finding. The project model is
        built for a run with no project rule selected only when a finding needs it."""
        return cls.refined_by is not None and bool(diagnostic.extra.get(cls.refined_by))

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project: Any) -> List[Diagnostic]:
        """The findings that stand, given the project (a `torchdet_lint.model.project.Project`):
        `diagnostics` are the rule's findings in the linted files, those a `noqa` silenced
        included (TDL900 judges a directive on what the file would report without it). A
        rule may also reword a finding or change its fix here. Rules that share one `refine`
        (a family's base class) are called once with the findings of all of them."""
        return diagnostics


def last_names(qualified_names: Iterable[str]) -> Tuple[str, ...]:
    """`DataLoader` for `torch.utils.data.DataLoader`: what a file spells to use each name."""
    return tuple(sorted({name.rsplit(".", 1)[-1] for name in qualified_names}))


@functools.lru_cache(maxsize=None)
def _words(rule_class: type, settings: Settings) -> Tuple[str, ...]:
    """The rule's words, less those that contain another one (`seed` is in every text
    that holds `manual_seed`): fewer searches, the same answer."""
    words = set(rule_class.words(settings))
    return tuple(sorted(w for w in words if not any(other != w and other in w for other in words)))


class ProjectRule(BaseRule):
    """A project rule: runs once per project over the file summaries."""

    def check(self, project: Any) -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        """The diagnostics over `project`, a `torchdet_lint.model.project.Project`."""
        raise NotImplementedError
