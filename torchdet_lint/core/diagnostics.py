"""Diagnostics and fixes as data: what a rule reports (a position, a code, a
message) and the text edits of its fix, with their applicability.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import libcst as cst

# TDL000 is not a rule: the diagnostic of a file that cannot be read or parsed.
PARSE_ERROR_CODE = "TDL000"
PARSE_ERROR_NAME = "file-not-analysed"
# Diagnostic.extra key: the finding disappears when an entry point enables
# torch.use_deterministic_algorithms (the project phase drops it).
SILENCED_BY_FLAG = "silenced_by_deterministic_mode"
# Diagnostic.extra key: cover kinds of the summaries (a list) any of which, in every
# entry point that reaches the finding, silences it (TDL306; the project phase drops it).
SILENCED_BY_REACHED_COVERS = "silenced_by_reached_covers"
# Diagnostic.extra key (TDL105): how the sampler may be named in another file, as (names it leaves
# its function under, functions returning it alone, the same two for the loader built with it); a
# `.set_epoch(` elsewhere in the project on such a receiver silences it (the project phase drops it).
SILENCED_BY_SET_EPOCH = "silenced_by_set_epoch"
# Diagnostic.extra key (TDL005): the first-party constructors the RNG object is handed to, as
# (call target, keyword, position); one that seeds that parameter itself silences it.
SILENCED_BY_SEEDING_CONSTRUCTOR = "silenced_by_seeding_constructor"
# Diagnostic.extra key (TDL004): first-party calls made before the seed, as (call target, spelling,
# line: a number, or `cell N, line M` in a notebook); the finding stands only if one of them builds a module
# that draws from torch (a first-party class, or what a first-party factory returns). The project phase decides and names it.
KEPT_IF_FIRST_PARTY_DRAWS = "kept_if_first_party_draws"
# Diagnostic.extra key (TDL201-203): the operation's condition needs a backward pass, so the finding
# stands only where a run that reaches it trains, or where no run reaches it (library code); the
# project phase decides.
KEPT_IF_TRAINING = "kept_if_a_reaching_run_trains"
# Diagnostic.extra key (TDL201-203): the operation's condition needs a CUDA device, so the finding
# stands only where a reaching run may use one (or no run reaches it).
KEPT_IF_CUDA = "kept_if_a_reaching_run_uses_cuda"
# Diagnostic.extra key (TDL101, TDL104): pairs (first-party name, torch name) the finding read a
# first-party name as, where that module may re-export torch's object under the same name
# (`from torch.utils.data import SubsetRandomSampler` in `pkg/sampler.py`); the finding stands
# only if every pair is such a re-export (the project phase decides).
KEPT_IF_REEXPORTED = "kept_if_reexported"
# Diagnostic.extra key (TDL101, TDL104): the fix seeds a generator from `torch.initial_seed()`, so it
# is only as reproducible as the torch seed; where a spawned run that reaches it never seeds torch
# (TDL001 there), the project phase makes the fix unsafe (it would look fixed and still vary).
TIED_TO_TORCH_SEED = "fix_tied_to_the_torch_seed"
DRAW_PLACEHOLDER = "<first-party draw>"  # in such a message: replaced by the call the project phase confirms


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


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


def error_diagnostic(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=column,
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=message,
    )


def sort_diagnostics(diagnostics: Sequence[Diagnostic]) -> List[Diagnostic]:
    return sorted(diagnostics, key=Diagnostic.sort_key)


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
