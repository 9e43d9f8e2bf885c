"""The file pass: read, pre-filter, parse once, run every selected file rule in
one batched traversal, apply suppressions. Also the run over many files.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import gc
import re
import tokenize
import warnings
from itertools import accumulate
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.config import Settings
from torchdet_lint.rule import Diagnostic, Rule, all_rules
from torchdet_lint.traversal import BatchedWalker

PARSE_ERROR_CODE = "TDL000"
PARSE_ERROR_NAME = "file-not-analysed"

# A file that mentions none of these cannot hold a finding of any file rule,
# so it is never parsed (the byte scan is far cheaper than a LibCST parse).
RELEVANT_WORDS = (
    "torch",
    "random",
    "numpy",
    "DataLoader",
    "lightning",
    "transformers",
    "accelerate",
    "PYTHONHASHSEED",
    "flash_attn",
    "mmengine",
    "detectron2",
    "CUBLAS",
    "seed",
    "Dataset",
)
_RELEVANT_RE = re.compile("|".join(re.escape(word) for word in RELEVANT_WORDS))
# LibCST needs about 700 bytes of memory per byte of source (7 GB for a 10 MB
# file): past this size a file is generated code in practice, and parsing it
# could exhaust the machine. torch's largest source file is 1.4 MB.
MAX_FILE_BYTES = 5_000_000
_FILE_NOQA_RE = re.compile(r"^[ \t]*#[ \t]*torchdet-lint:[ \t]*noqa[ \t]*$", re.M | re.I)
_NOQA_RE = re.compile(r"#[ \t]*noqa(?::[ \t]*(?P<codes>[A-Z]+[0-9]+(?:[ \t]*,?[ \t]*[A-Z]+[0-9]+)*))?", re.I)


@dataclass
class SourceText:
    text: str
    encoding: str = "utf-8"
    bom: bool = False


@dataclass
class FileResult:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    summary: object = None  # FileSummary, for the project phase
    source: Optional[SourceText] = None
    parsed: bool = False
    from_cache: bool = False


class SourceError(Exception):
    """The file cannot be read or decoded; the message says why."""


def decode_source(data: bytes) -> SourceText:
    """Decode as Python does (BOM, coding cookie), keeping line endings untouched."""
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"cannot decode: {error}") from None
    bom = encoding == "utf-8-sig"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"cannot decode as {encoding}: {error}") from None
    return SourceText(text, "utf-8" if bom else encoding, bom)


def encode_source(source: SourceText, text: str) -> bytes:
    data = text.encode(source.encoding)
    return (b"\xef\xbb\xbf" + data) if source.bom else data


def read_source(path: Path) -> SourceText:
    return decode_source(read_bytes(path))


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


@dataclass(frozen=True)
class RunOptions:
    """What is fixed for a whole run: settings, the selected rules and the target version."""

    settings: Settings
    selected: frozenset
    torch_version: Tuple[int, int]
    first_party: frozenset = frozenset()


def file_rule_classes(selected: frozenset) -> List[type]:
    return [rule for code, rule in all_rules().items() if code in selected and issubclass(rule, Rule)]


# Deep nesting crashes LibCST's native parser (a stack overflow kills the
# process: 100,000 unary minus signs, 5,000 nested parentheses). Python's own
# parser refuses such input cleanly, so a file that shows deep-nesting
# signals is checked with it first.
_UNARY_RUN_RE = re.compile(r"[-+~(\[{](?:[ \t]*[-+~(\[{]){99}")
_KEYWORD_RUN_RE = re.compile(r"(?:(?:not|await)\s+){50}")
_NOT_BRACKETS_RE = re.compile(r"[^()\[\]{}]+")
_BRACKET_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_MAX_SAFE_DEPTH = 100


def _may_nest_deeply(text: str) -> bool:
    """A cheap over-approximation (about 1% of a parse): runs of unary operators
    or brackets, chains of `not`/`await`, or bracket depth over 100."""
    if _UNARY_RUN_RE.search(text):
        return True
    if (text.count("not ") > 50 or text.count("await ") > 50) and _KEYWORD_RUN_RE.search(text):
        return True
    brackets = _NOT_BRACKETS_RE.sub("", text)
    return bool(brackets) and max(accumulate(map(_BRACKET_STEP.__getitem__, brackets))) > _MAX_SAFE_DEPTH


def python_ast(text: str, filename: str = "<source>") -> ast.Module:
    """Python's own parse of a source, without the SyntaxWarnings it would print for the user's code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(text, filename, "exec", ast.PyCF_ONLY_AST)


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


def check_text(
    text: str,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
) -> FileResult:
    """Lint one decoded source text (without suppressions applied)."""
    from torchdet_lint.summary import empty_summary

    result = FileResult(display)
    if _FILE_NOQA_RE.search(text):
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
    if not _RELEVANT_RE.search(text):
        result.summary = empty_summary(display, module_name, text)
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
    from torchdet_lint.context import FileContext
    from torchdet_lint.summary import SummaryCollector

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
    context = FileContext(
        display,
        text,
        module,
        options.settings,
        options.torch_version,
        module_name=module_name,
        is_package=is_package,
        first_party=options.first_party,
    )
    collector = SummaryCollector(context)
    rules = [rule_class(context) for rule_class in file_rule_classes(options.selected)]
    try:
        BatchedWalker([context.resolver, collector, *rules]).walk(module)
        result.diagnostics = context.diagnostics()
        collector.finish()
    except RecursionError:
        result.diagnostics = [error_diagnostic(display, "not analysed: the file is nested too deeply to analyse")]
        return result
    result.summary = context.summary
    result.parsed = True
    return result


def apply_suppressions(diagnostics: List[Diagnostic], text: str, settings: Settings, path: Path) -> List[Diagnostic]:
    """Drop diagnostics silenced by `# noqa` on their line or by `per-file-ignores`."""
    ignored = per_file_ignored_codes(settings, path)
    if not diagnostics:
        return diagnostics
    from torchdet_lint.context import LineIndex

    lines = LineIndex(text) if "noqa" in text.lower() else None
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code != PARSE_ERROR_CODE and any(diagnostic.code.startswith(prefix) for prefix in ignored):
            continue
        if lines is not None and diagnostic.code != PARSE_ERROR_CODE:
            line_number, _ = lines.position(diagnostic.start_offset)
            if noqa_suppresses(lines.line_text(line_number), diagnostic.code):
                continue
        kept.append(diagnostic)
    return kept


def noqa_suppresses(line: str, code: str) -> bool:
    for match in _NOQA_RE.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if code in {c.upper() for c in re.split(r"[\s,]+", codes) if c}:
            return True
    return False


def per_file_ignored_codes(settings: Settings, path: Path) -> Tuple[str, ...]:
    if not settings.per_file_ignores:
        return ()
    try:
        relative = path.resolve().relative_to(settings.root).as_posix()
    except ValueError:
        relative = path.as_posix()
    codes: List[str] = []
    for pattern, pattern_codes in settings.per_file_ignores:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
            codes.extend(pattern_codes)
    return tuple(codes)


def lint_source(
    source: SourceText,
    path: Path,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
) -> FileResult:
    """Lint a decoded file (a notebook or Python source), suppressions applied."""
    if path.suffix == ".ipynb":
        from torchdet_lint.notebook import lint_notebook

        return lint_notebook(source, path, display, options)
    result = check_text(source.text, display, options, module_name, is_package)
    result.source = source
    result.diagnostics = apply_suppressions(result.diagnostics, source.text, options.settings, path)
    return result


def read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def lint_path(
    path: Path,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
    cache=None,
) -> FileResult:
    """Lint one file from disk, through the cache when one is given."""
    try:
        data = read_bytes(path)
    except SourceError as error:
        return FileResult(display, [error_diagnostic(display, str(error))])
    key = cache.key(data, path, module_name) if cache is not None else None
    if key is not None:
        cached = cache.load(key)
        if cached is not None:
            try:
                cached.source = decode_source(data)
            except SourceError:
                cached.source = None
            cached.from_cache = True
            return cached
    try:
        source = decode_source(data)
    except SourceError as error:
        result = FileResult(display, [error_diagnostic(display, str(error))])
    else:
        result = lint_source(source, path, display, options, module_name, is_package)
    if key is not None:
        source, result.source = result.source, None
        cache.store(key, result)
        result.source = source
    return result


def sort_diagnostics(diagnostics: Sequence[Diagnostic]) -> List[Diagnostic]:
    return sorted(diagnostics, key=Diagnostic.sort_key)
