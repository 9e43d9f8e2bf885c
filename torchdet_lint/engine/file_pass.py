"""The file pass over one Python text: pre-filter, parse once, run the name
resolver, the summary collector and every selected file rule in one batched
traversal; a file that cannot be parsed is one TDL000 diagnostic.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import re
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import libcst as cst

from torchdet_lint.checks import fact_collectors, file_rules_for, prefilter
from torchdet_lint.core.context import FileContext
from torchdet_lint.core.diagnostics import Diagnostic, error_diagnostic
from torchdet_lint.core.names import forget_keyword_dicts
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex, SourceText, python_ast
from torchdet_lint.core.traversal import BatchedWalker
from torchdet_lint.engine.ast_tree import AstPositions, NeedsLibCST, ast_shaped_module
from torchdet_lint.engine.parser_nodes import parser_nodes
from torchdet_lint.engine.suppressions import apply_suppressions, file_exempt
from torchdet_lint.model.collector import SUMMARY_WORDS, SummaryCollector
from torchdet_lint.model.scan import empty_summary
from torchdet_lint.model.summary import FileSummary


@functools.lru_cache(maxsize=1)
def _relevant_re() -> "re.Pattern[str]":
    """What lets a file into the parse: the summary collector's words, and the words and
    patterns the registered rules and their collectors declare (`BaseRule.prefilter_words`)."""
    words, patterns = prefilter()
    return re.compile("|".join([re.escape(word) for word in SUMMARY_WORDS + words] + list(patterns)))


# LibCST needs about 700 bytes of memory per byte of source (7 GB for a 10 MB
# file): past this size a file is generated code in practice, and parsing it
# could exhaust the machine. torch's largest source file is 1.4 MB.
MAX_FILE_BYTES = 5_000_000


@dataclass
class FileResult:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    summary: Optional[FileSummary] = None  # for the project phase
    source: Optional[SourceText] = None
    parsed: bool = False
    from_cache: bool = False
    # Read from disk: (size, mtime in ns) taken before the read, and the content digest (summary index).
    stat: Optional[Tuple[int, int]] = None
    digest: Optional[str] = None
    # The diagnostics a `noqa` directive silenced (for TDL900), once suppressions are applied;
    # None while they are not (a text linted by `check_text` alone).
    suppressed: Optional[List[Diagnostic]] = None


@dataclass(frozen=True)
class RunOptions:
    """What is fixed for a whole run: settings, the selected rules and the target version."""

    settings: Settings
    selected: frozenset
    torch_version: Tuple[int, int]
    first_party: frozenset = frozenset()
    # Each catalog library's target version (config, else installed metadata, else newest known).
    library_versions: Tuple[Tuple[str, Tuple[int, int]], ...] = ()


# Deep nesting crashes LibCST's native parser (a stack overflow kills the
# process: 100,000 unary minus signs, 5,000 nested parentheses). Python's own
# parser refuses such input cleanly, so a file that shows deep-nesting
# signals is checked with it first. The signals are looked for in the UTF-8
# bytes through `bytes.translate`, which runs at memory speed (regular
# expressions over the text cost 1% of a run).
_KEYWORD_RUN_RE = re.compile(r"(?:(?:not|await)\s+){50}")
_MAX_SAFE_DEPTH = 100
_UNARY_RUN = b"(" * _MAX_SAFE_DEPTH
# Unary operators and opening brackets become "(", anything else "x"; spaces and tabs go.
_UNARY_TABLE = bytes(ord("(") if chr(i) in "-+~([{" else ord("x") for i in range(256))
_NOT_BRACKETS = bytes(i for i in range(256) if chr(i) not in "()[]{}")
_BRACKET_STEP = [0] * 256
for _opening, _closing in zip(b"([{", b")]}"):
    _BRACKET_STEP[_opening], _BRACKET_STEP[_closing] = 1, -1


def _may_nest_deeply(text: str) -> bool:
    """A cheap over-approximation: a run of 100 unary operators or opening brackets
    (spaces between them allowed), 50 chained `not`/`await`, or bracket depth over 100."""
    data = text.encode("utf-8", "surrogatepass")
    if _UNARY_RUN in data.translate(_UNARY_TABLE, b" \t"):
        return True
    if (text.count("not ") > 50 or text.count("await ") > 50) and _KEYWORD_RUN_RE.search(text):
        return True
    return max(accumulate(map(_BRACKET_STEP.__getitem__, data.translate(None, _NOT_BRACKETS))), default=0) > _MAX_SAFE_DEPTH


class UnsafeToParse(Exception):
    """Python's parser refuses the file; LibCST's would crash or crawl on it."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def parse(text: str) -> cst.Module:
    if _may_nest_deeply(text):
        try:
            python_ast(text)
        except SyntaxError as error:
            raise UnsafeToParse(f"syntax error: {error.msg}", error.lineno or 1, max(error.offset or 1, 1)) from None
        except (RecursionError, MemoryError, ValueError) as error:
            raise UnsafeToParse(f"too deeply nested for Python's parser ({type(error).__name__})") from None
    with parser_nodes(len(text)):
        return cst.parse_module(text)


def syntax_error_diagnostic(display: str, text: str, error: cst.ParserSyntaxError) -> Diagnostic:
    """TDL000 at the error's position; Python's own parser locates errors better than LibCST's."""
    try:
        python_ast(text, display)
    except SyntaxError as python_error:
        line = python_error.lineno or 1
        column = python_error.offset or 1
        return error_diagnostic(display, f"syntax error: {python_error.msg}", line, max(column, 1))
    except (ValueError, RecursionError, MemoryError) as python_error:
        return error_diagnostic(display, f"not analysed: {python_error}")
    message = error.message.splitlines()[0] if error.message else "unsupported syntax"
    return error_diagnostic(
        display, f"not analysed: LibCST cannot parse this syntax ({message})", error.raw_line or 1, (error.raw_column or 0) + 1
    )


@contextlib.contextmanager
def cyclic_gc_paused():
    """Python's cycle collector off while one file is parsed and analysed.

    A LibCST parse allocates millions of objects, each allocation burst sets
    off a collection, and each collection walks every live object, the whole
    growing tree included: ~25% of a parse's time on torch's large files. Syntax
    trees hold no reference cycles (they are freed by reference counting as
    before, so the peak memory is unchanged); the few cycles made meanwhile are
    collected once the collector is back on. Left off if the host program had
    turned it off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def settle_kept_result() -> None:
    """Take what a finished file left out of the collector's sight, once its garbage is gone.

    A run keeps every file's result (summary, diagnostics) to the end: millions of objects
    for a big project. Each full collection walks all of them, so a warm run that unpickles
    two thousand results, and the project phase that allocates over them, spent more time in
    the collector than in their own work (10 s of 19 s on torch's tree). A young-generation
    collection first frees the cycles the file's own work made (only its objects are young),
    then the survivors are frozen: freed by reference counting as ever, never walked again.
    Left alone if the host program turned the collector off.
    """
    if gc.isenabled():
        gc.collect(0)
        gc.freeze()


# A syntax tree takes about 700 bytes per byte of source: past this size its memory is worth
# handing back (`release_freed_memory`).
LARGE_TREE_BYTES = 100_000
_TRIM: List[Optional[Callable[[int], int]]] = []


def release_freed_memory() -> None:
    """Give the memory a large file's syntax tree held back to the system (glibc's `malloc_trim`).

    The parser's allocations live on the C heap, which keeps freed memory for reuse: after
    torch's largest file (1 MB of source, a 770 MB tree) a run's resident size stayed at the
    tree's peak, and the results the run then gathered grew it further (1.09 GB against the
    bare parse's 0.83 GB). Nothing to do where there is no glibc."""
    if not _TRIM:
        try:
            import ctypes

            _TRIM.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _TRIM.append(None)
    if _TRIM[0] is not None:
        _TRIM[0](0)


def check_text(
    text: str,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
) -> FileResult:
    """Lint one decoded source text (without suppressions applied)."""
    result = FileResult(display)
    if file_exempt(text):
        return result
    if len(text) > MAX_FILE_BYTES:
        size = len(text.encode("utf-8", "surrogatepass")) / 1e6
        result.diagnostics.append(
            error_diagnostic(
                display,
                f"not analysed: {size:.1f} MB is over the {MAX_FILE_BYTES / 1e6:.0f} MB limit for one file "
                "(generated code? exclude it in the config)",
            )
        )
        return result
    if not _relevant_re().search(text):
        result.summary = empty_summary(display, module_name, text, options.first_party)
        return result
    with cyclic_gc_paused():
        return _check_parsed(text, display, options, module_name, is_package, result)


def _check_parsed(
    text: str,
    display: str,
    options: RunOptions,
    module_name: Optional[str],
    is_package: bool,
    result: FileResult,
) -> FileResult:
    # The analysis first runs on the tree built from Python's own parse (engine/ast_tree.py),
    # a fifth of LibCST's parse; a file it cannot answer for (syntax it does not build, a fix
    # made of built nodes, a node outside any statement) is analysed again on LibCST's tree.
    if not _may_nest_deeply(text):
        try:
            python_tree = python_ast(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            python_tree = None  # LibCST's parse says what is wrong (or reads syntax this Python does not)
        if python_tree is not None:
            fast = _check_ast_built(text, python_tree, display, options, module_name, is_package)
            if fast is not None:
                result.diagnostics, result.summary, result.parsed = fast.diagnostics, fast.summary, fast.parsed
                return result
    try:
        module = parse(text)
    except cst.ParserSyntaxError as error:
        result.diagnostics.append(syntax_error_diagnostic(display, text, error))
        return result
    except UnsafeToParse as error:
        message = str(error) if str(error).startswith("syntax error") else f"not analysed: {error}"
        result.diagnostics.append(error_diagnostic(display, message, error.line, error.column))
        return result
    except (RecursionError, MemoryError):
        result.diagnostics.append(error_diagnostic(display, "not analysed: the file is nested too deeply to parse"))
        return result
    if len(text) >= LARGE_TREE_BYTES:
        # The native parser's own working memory (most of the parse's peak: the syntax tree's
        # Python objects are a small part of it) is freed by now but kept by the C heap, while
        # the walk allocates in arenas of its own: handed back, the walk and Python's `ast` of
        # the file (for positions) no longer stack on top of the parse's peak.
        release_freed_memory()
    return _analyse(text, module, display, options, module_name, is_package, result)


def _check_ast_built(
    text: str,
    python_tree: ast.Module,
    display: str,
    options: RunOptions,
    module_name: Optional[str],
    is_package: bool,
) -> Optional[FileResult]:
    """The analysis on the tree built from Python's parse; None when it needs LibCST's."""
    lines = LineIndex(text)
    try:
        with parser_nodes(len(text)):
            module, positions = ast_shaped_module(text, python_tree, lines)
    except (NeedsLibCST, RecursionError):
        return None
    result = FileResult(display)
    try:
        _analyse(text, module, display, options, module_name, is_package, result, positions, python_tree, lines)
    except NeedsLibCST:
        return None
    return None if positions.needs_libcst else result


def _analyse(
    text: str,
    module: cst.Module,
    display: str,
    options: RunOptions,
    module_name: Optional[str],
    is_package: bool,
    result: FileResult,
    tree_positions: Optional[AstPositions] = None,
    python_tree: Optional[ast.Module] = None,
    lines: Optional[LineIndex] = None,
) -> FileResult:
    context = FileContext(
        display,
        text,
        module,
        options.settings,
        options.torch_version,
        library_versions=dict(options.library_versions),
        module_name=module_name,
        is_package=is_package,
        first_party=options.first_party,
        tree_positions=tree_positions,
    )
    if python_tree is not None:
        context.python_tree.share(python_tree)
    if lines is not None:
        context.lines = lines
    collector = SummaryCollector(context)
    # The facts the rules declare (`BaseRule.collectors`), each None when the text cannot hold them.
    facts = [found for found in (kind.for_file(context, collector) for kind in fact_collectors()) if found is not None]
    # A rule whose trigger words the file does not contain stays out of the walk (`Rule.trigger_words`),
    # and its module unimported.
    rules = [rule_class(context) for rule_class in file_rules_for(text, options.selected, options.settings)]
    try:
        forget_keyword_dicts()
        BatchedWalker([context.resolver, context.scopes, collector, *facts, *rules]).walk(module)
        result.diagnostics = context.diagnostics()
        collector.finish()
        for found in facts:
            found.finish()
    except RecursionError:
        result.diagnostics = [error_diagnostic(display, "not analysed: the file is nested too deeply to analyse")]
        return result
    result.summary = collector.summary
    result.parsed = True
    return result


def lint_python(
    source: SourceText,
    path: Path,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
) -> FileResult:
    """Lint a decoded Python source, suppressions applied."""
    result = check_text(source.text, display, options, module_name, is_package)
    result.source = source
    result.suppressed = []
    result.diagnostics = apply_suppressions(result.diagnostics, source.text, options.settings, path, result.suppressed)
    return result
