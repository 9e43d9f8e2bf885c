"""The language server (`torchdet-lint server`, pygls 2.x over stdio): diagnostics
on open/change/save, quick fixes, fix-all, noqa suppression and rule hover.

Each open buffer goes through the same file pass as the command line; the
project rules run over the buffer and the summaries of the workspace's other
files, which are computed once (in the background, after `initialized`) and
refreshed when a file is saved or changes on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import os
import re
import sys
import tempfile
import threading
import tokenize
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from torchdet_lint import __version__
from torchdet_lint.checks import all_rules
from torchdet_lint.config import (
    ConfigError,
    Settings,
    find_config,
    load_config_file,
    validate_selectors,
)
from torchdet_lint.diagnostics import (
    PARSE_ERROR_CODE,
    Applicability,
    Diagnostic,
    Edit,
    error_diagnostic,
)
from torchdet_lint.discovery import SourceFile, discover, display_path
from torchdet_lint.engine import FileResult, RunOptions, check_text
from torchdet_lint.fixer import apply_fixes
from torchdet_lint.project import run_project_rules
from torchdet_lint.runner import (
    first_party_names,
    lint_path,
    lint_source,
    make_options,
    module_name_for,
)
from torchdet_lint.source import LineIndex, SourceError, SourceText, read_source
from torchdet_lint.suppressions import apply_suppressions

logger = logging.getLogger(__name__)

SOURCE = "torchdet-lint"
FIX_ALL_KIND = "source.fixAll.torchdet-lint"
PYTHON_SUFFIXES = (".py", ".pyi")
# More files than this in a workspace and the project phase only sees the buffer:
# indexing a home directory opened by mistake would take minutes.
MAX_INDEXED_FILES = 20000
# Rounds of fix-and-relint for "fix all" (a fix can enable another).
MAX_FIX_ROUNDS = 10
# Seconds of quiet after an edit before the buffer is linted again.
CHANGE_DELAY = 0.2
# Longest pause of the workspace indexing while buffers are being linted.
IDLE_WAIT = 10.0
_NOQA_CODES_RE = re.compile(r"#[ \t]*noqa(?P<colon>:[ \t]*(?P<codes>[A-Z]+[0-9]+(?:[ \t]*,[ \t]*[A-Z]+[0-9]+)*))?", re.I)
_RULE_CODE_RE = re.compile(r"TDL\d{3}")


# -- the workspace: file summaries for the project phase ------------------------------


class WorkspaceIndex:
    """The file pass over one workspace folder's files on disk, kept for the project phase."""

    def __init__(self, root: Path, idle: Optional[threading.Event] = None) -> None:
        self.root = root
        self.idle = idle or threading.Event()  # set while no buffer lint waits: indexing yields to them
        self.ready = False
        self.files: Dict[str, SourceFile] = {}
        self.results: Dict[str, FileResult] = {}
        self.first_party: frozenset = frozenset()
        self.stale: set = set()  # paths saved while the index was being built
        self.cancelled = threading.Event()  # set at shutdown: stop between two files

    def build(self) -> None:
        """Lint every file of the folder once (run in a worker thread)."""
        settings = _settings_near(self.root) or Settings(root=self.root)
        files, _ = discover([str(self.root)], settings.root, exclude=settings.exclude + settings.extend_exclude, cwd=self.root)
        if len(files) > MAX_INDEXED_FILES:
            logger.warning("%s: %d files, more than %d: project rules see only open buffers", self.root, len(files), MAX_INDEXED_FILES)
            files = []
        self.first_party = first_party_names(files)
        options = make_options(settings, self.first_party)
        # One file at a time in this thread: a process pool forked from the
        # server's threads can deadlock, and shutdown must not wait for a whole pass.
        results = {}
        for file in files:
            self.idle.wait(timeout=IDLE_WAIT)
            if self.cancelled.is_set():
                return
            module_name, is_package = module_name_for(file.path, file.path.parent)
            results[file.display] = lint_path(file.path, file.display, options, module_name, is_package)
        self.files = {file.display: file for file in files}
        self.results = results
        self.ready = True

    def display(self, path: Path) -> str:
        return display_path(path, self.root)

    def contains(self, path: Path) -> bool:
        try:
            path.relative_to(self.root)
        except ValueError:
            return False
        return True

    def update(self, path: Path, text: Optional[str], options: RunOptions) -> None:
        """Re-run the file pass for one file: its saved text, or what is on disk."""
        if path.suffix not in PYTHON_SUFFIXES and path.suffix != ".ipynb":
            return
        if not self.ready:
            self.stale.add(path)
            return
        display = self.display(path)
        if text is None:
            try:
                source = read_source(path)
            except SourceError:
                self.files.pop(display, None)
                self.results.pop(display, None)
                return
        else:
            source = SourceText(text)
        module_name, is_package = module_name_for(path, path.parent)
        self.files[display] = SourceFile(path, display, False)
        self.results[display] = lint_source(source, path, display, options, module_name, is_package)


def _validated(settings: Settings) -> Settings:
    """The settings, once their rule selectors are known to exist (as the command line checks)."""
    for key in ("select", "ignore", "extend_select"):
        if getattr(settings, key):
            validate_selectors(getattr(settings, key), f"{settings.source}: `{key.replace('_', '-')}`")
    for pattern, codes in settings.per_file_ignores:
        validate_selectors(codes, f"{settings.source}: `per-file-ignores.{pattern}`")
    return settings


def _settings_near(directory: Path) -> Optional[Settings]:
    found = find_config(directory)
    return load_config_file(found) if found else None


# -- one open buffer ---------------------------------------------------------------------


@dataclass
class Buffer:
    """The last lint of an open document: what code actions and hover answer from."""

    uri: str
    version: Optional[int]
    text: str
    lines: LineIndex
    diagnostics: List[Diagnostic] = field(default_factory=list)
    options: Optional[RunOptions] = None
    path: Optional[Path] = None
    display: str = ""
    # The project phase's input: the other files' results and files and the
    # first-party names; None while the workspace is still being indexed.
    project: Optional[Tuple[list, list, Optional[frozenset]]] = None


class _Protocol(LanguageServerProtocol):
    """Answers a request whose params do not fit its method with an InvalidParams
    error: pygls only logs it, and the client would wait for ever."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcInvalidParams as error:
            if not ("id" in data and "method" in data):
                raise
            self._send_response(data["id"], None, error.to_response_error())
            return SimpleNamespace(jsonrpc=None)  # handle_message drops it


class TorchdetLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "torchdet-lint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=_Protocol,
        )
        self.buffers: Dict[str, Buffer] = {}
        self.indexes: Dict[Path, WorkspaceIndex] = {}
        self.docs_url: Optional[str] = None  # initializationOptions.ruleDocsUrl, "{code}" replaced
        self._settings_cache: Dict[Path, Tuple[float, Settings]] = {}
        self._pending: Dict[str, "asyncio.Task"] = {}
        self._idle = threading.Event()  # no buffer lint pending: the indexing may go on
        self._idle.set()
        # One worker for buffer lints, another for indexing: a long index build
        # never holds up the diagnostics of the file being edited.
        self._lint_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchdet-lint")
        self._index_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchdet-index")

    # -- settings -----------------------------------------------------------------------
    def settings_for(self, path: Path) -> Settings:
        found = find_config(path.parent)
        if found is None:
            index = self.index_for(path)
            return Settings(root=index.root if index else path.parent)
        mtime = found.stat().st_mtime
        cached = self._settings_cache.get(found)
        if cached is None or cached[0] != mtime:
            cached = (mtime, _validated(load_config_file(found)))
            self._settings_cache[found] = cached
        return cached[1]

    def index_for(self, path: Path) -> Optional[WorkspaceIndex]:
        best = None
        for index in self.indexes.values():
            if index.contains(path) and (best is None or len(str(index.root)) > len(str(best.root))):
                best = index
        return best

    # -- linting --------------------------------------------------------------------------
    def snapshot(self, uri: str) -> Optional[Buffer]:
        """The document as it is now, with what its lint needs from the workspace
        (copied here, on the event loop, so the lint can run in a worker thread)."""
        document = self.workspace.get_text_document(uri)
        try:
            text = document.source
        except (OSError, UnicodeDecodeError):  # never opened, and not readable on disk
            return None
        path = _path_of(uri)
        if not _is_python(document.language_id, path):
            return None
        buffer = Buffer(uri, document.version, text, LineIndex(text), path=path)
        index = self.index_for(path)
        buffer.display = index.display(path) if index else path.name
        if index is None:
            buffer.project = ([], [], None)
        elif index.ready:
            others = [(r, index.files.get(display)) for display, r in index.results.items() if display != buffer.display]
            buffer.project = ([r for r, _ in others], [f for _, f in others if f is not None], index.first_party)
        return buffer

    def lint_buffer(self, buffer: Buffer) -> Buffer:
        """Fill in the buffer's diagnostics (safe to run in a worker thread)."""
        try:
            buffer.diagnostics = self._diagnostics(buffer)
        except ConfigError as error:
            buffer.diagnostics = [error_diagnostic(buffer.display, f"not analysed: {error}")]
        except Exception as error:  # an engine bug must not take the editor's linter down
            logger.exception("linting %s failed", buffer.uri)
            buffer.diagnostics = [error_diagnostic(buffer.display, f"not analysed: internal error: {type(error).__name__}: {error}")]
        return buffer

    def lint(self, uri: str) -> Optional[Buffer]:
        """Lint a document now, on the event loop (for requests that need fresh results)."""
        buffer = self.snapshot(uri)
        if buffer is not None:
            self.lint_buffer(buffer)
            if uri in self.workspace.text_documents:  # open: kept for code actions and re-lints
                self.buffers[uri] = buffer
        return buffer

    def current(self, uri: str) -> Optional[Buffer]:
        """The last lint of a document if it is of its current version, else a fresh one."""
        buffer = self.buffers.get(uri)
        if buffer is not None and buffer.version == self.workspace.get_text_document(uri).version and buffer.version is not None:
            return buffer
        return self.lint(uri)

    async def fresh(self, uri: str) -> Optional[Buffer]:
        """The current lint of a document, waiting for a pending one (the event loop
        keeps serving meanwhile) rather than linting again on the loop."""
        for _ in range(100):  # each round, a newer edit replaced the pending lint
            task = self._pending.get(uri)
            if task is None:
                break
            await asyncio.wait({task})
        return self.current(uri)

    def _diagnostics(self, buffer: Buffer) -> List[Diagnostic]:
        path = buffer.path
        settings = self.settings_for(path)
        own_file = SourceFile(path, buffer.display, True)
        first_party = buffer.project[2] if buffer.project and buffer.project[2] is not None else first_party_names([own_file])
        options = buffer.options = make_options(settings, first_party)
        module_name, is_package = module_name_for(path, path.parent)
        result = check_text(buffer.text, buffer.display, options, module_name, is_package)
        result.source = SourceText(buffer.text)
        if buffer.project is None:
            # the project phase waits for the workspace's summaries
            return apply_suppressions(result.diagnostics, buffer.text, settings, path)
        other_results, other_files, _ = buffer.project
        project = run_project_rules([result, *other_results], [own_file, *other_files], options)  # may drop file findings
        diagnostics = apply_suppressions(result.diagnostics, buffer.text, settings, path)
        return diagnostics + [d for d in project if d.path == buffer.display]

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Lint a document soon, in the worker thread, and publish the result; a newer
        request for the same document replaces a pending one (typing is debounced)."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self._idle.clear()
        self._pending[uri] = asyncio.get_running_loop().create_task(self._lint_and_publish(uri, delay))

    async def _lint_and_publish(self, uri: str, delay: float) -> None:
        task = asyncio.current_task()
        try:
            if delay:
                await asyncio.sleep(delay)
            buffer = self.snapshot(uri)
            if buffer is not None:
                await asyncio.get_running_loop().run_in_executor(self._lint_executor, self.lint_buffer, buffer)
                if buffer.version != self.workspace.get_text_document(uri).version:
                    return  # edited meanwhile: the lint of the new version is on its way
                self.buffers[uri] = buffer
            self.publish(uri, buffer)
        finally:
            if self._pending.get(uri) is task:
                del self._pending[uri]
            if not self._pending:
                self._idle.set()

    def publish(self, uri: str, buffer: Optional[Buffer]) -> None:
        diagnostics = [] if buffer is None else [self.to_lsp(buffer, d) for d in buffer.diagnostics]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=buffer.version if buffer else None)
        )

    def schedule_all(self) -> None:
        """Re-lint every open document."""
        for uri in list(self.workspace.text_documents):
            self.schedule(uri)

    # -- positions --------------------------------------------------------------------------
    def units(self, text: str) -> int:
        return self.workspace.position_codec.client_num_units(text)

    def position(self, buffer: Buffer, line: int, column: int) -> types.Position:
        """LSP position of a 1-based line and 0-based code-point column."""
        if line > len(buffer.lines.starts):
            last = len(buffer.lines.starts)
            return types.Position(line=last - 1, character=self.units(buffer.lines.line_text(last)))
        text = buffer.lines.line_text(line)
        return types.Position(line=line - 1, character=self.units(text[: max(column, 0)]))

    def offset_position(self, buffer: Buffer, offset: int) -> types.Position:
        line, column = buffer.lines.position(offset)
        return self.position(buffer, line, column)

    def offset_of(self, buffer: Buffer, position: types.Position) -> int:
        """Code-point offset of a client position (clamped into the text)."""
        line = min(max(position.line, 0), len(buffer.lines.starts) - 1) + 1
        text = buffer.lines.line_text(line)
        units = 0
        column = 0
        for char in text:
            if units >= position.character:
                break
            units += self.units(char)
            column += 1
        return buffer.lines.offset(line, column)

    def diagnostic_offsets(self, buffer: Buffer, d: Diagnostic) -> Tuple[int, int]:
        start = buffer.lines.offset(d.line, d.column - 1)
        end = buffer.lines.offset(d.end_line, d.end_column - 1)
        if end <= start:  # a point (a syntax error, a project finding): the rest of the line
            line, _ = buffer.lines.position(start)
            end = buffer.lines.offset(line, 0) + len(buffer.lines.line_text(line))
        return start, max(end, start)

    def to_lsp(self, buffer: Buffer, d: Diagnostic) -> types.Diagnostic:
        start, end = self.diagnostic_offsets(buffer, d)
        rule = all_rules().get(d.code)
        return types.Diagnostic(
            range=types.Range(start=self.offset_position(buffer, start), end=self.offset_position(buffer, end)),
            message=d.message,
            severity=types.DiagnosticSeverity.Error if d.code == PARSE_ERROR_CODE else types.DiagnosticSeverity.Warning,
            code=d.code,
            code_description=types.CodeDescription(href=self.rule_docs_url(d.code)) if rule else None,
            source=SOURCE,
            data={"name": d.name, "fix": d.fix.applicability.value if d.fix else None},
        )

    def rule_docs_url(self, code: str) -> str:
        """Where the rule's documentation is: the configured URL, else a local Markdown file."""
        if self.docs_url:
            return self.docs_url.replace("{code}", code)
        return from_fs_path(str(_rule_doc_file(code)))

    def edits_to_lsp(self, buffer: Buffer, edits: Iterable[Edit]) -> List[types.TextEdit]:
        return [
            types.TextEdit(
                range=types.Range(start=self.offset_position(buffer, e.start), end=self.offset_position(buffer, e.end)),
                new_text=e.content,
            )
            for e in edits
        ]

    def workspace_edit(self, buffer: Buffer, edits: List[types.TextEdit]) -> types.WorkspaceEdit:
        capabilities = self.client_capabilities
        document_changes = bool(
            capabilities
            and capabilities.workspace
            and capabilities.workspace.workspace_edit
            and capabilities.workspace.workspace_edit.document_changes
        )
        if document_changes:
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=buffer.uri, version=buffer.version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)])
        return types.WorkspaceEdit(changes={buffer.uri: edits})

    # -- code actions ------------------------------------------------------------------------
    def code_actions(self, buffer: Optional[Buffer], params: types.CodeActionParams) -> List[types.CodeAction]:
        if buffer is None:
            return []
        only = params.context.only
        actions: List[types.CodeAction] = []
        start = self.offset_of(buffer, params.range.start)
        end = self.offset_of(buffer, params.range.end)
        if _kind_wanted(only, types.CodeActionKind.QuickFix):
            for d in buffer.diagnostics:
                if d.code == PARSE_ERROR_CODE:
                    continue
                d_start, d_end = self.diagnostic_offsets(buffer, d)
                if not (d_start <= end and start <= d_end):
                    continue
                lsp_diagnostic = self.to_lsp(buffer, d)
                if d.fix is not None:
                    unsafe = d.fix.applicability is Applicability.UNSAFE
                    actions.append(
                        types.CodeAction(
                            title=f"{d.code}: {d.fix.title}" + (" (unsafe)" if unsafe else ""),
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[lsp_diagnostic],
                            is_preferred=not unsafe,
                            edit=self.workspace_edit(buffer, self.edits_to_lsp(buffer, d.fix.edits)),
                        )
                    )
                noqa = noqa_edit(buffer.text, buffer.lines, d.line, d.code)
                if noqa is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"{d.code}: Suppress with `# noqa: {d.code}`",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[lsp_diagnostic],
                            edit=self.workspace_edit(buffer, self.edits_to_lsp(buffer, [noqa])),
                        )
                    )
        if _kind_wanted(only, FIX_ALL_KIND):
            edit = self.fix_all_edit(buffer)
            if edit is not None:
                actions.append(
                    types.CodeAction(
                        title="torchdet-lint: Fix all safe fixes",
                        kind=FIX_ALL_KIND,
                        edit=self.workspace_edit(buffer, self.edits_to_lsp(buffer, [edit])),
                    )
                )
        return actions

    def fix_all_edit(self, buffer: Buffer) -> Optional[Edit]:
        """One edit turning the buffer into its text with every safe fix applied."""
        if not any(d.fix is not None and d.fix.applicability is Applicability.SAFE for d in buffer.diagnostics):
            return None
        text = buffer.text
        diagnostics = buffer.diagnostics
        for _ in range(MAX_FIX_ROUNDS):
            fixed, _, _ = apply_fixes(text, [d for d in diagnostics if d.fix and d.fix.applicability is Applicability.SAFE])
            if fixed == text:
                break
            text = fixed
            scratch = Buffer(buffer.uri, buffer.version, text, LineIndex(text), path=buffer.path, display=buffer.display, project=buffer.project)
            diagnostics = self._diagnostics(scratch)
            if any(d.code == PARSE_ERROR_CODE for d in diagnostics):
                return None  # never offer a fix that breaks the file
        if text == buffer.text:
            return None
        prefix = len(os.path.commonprefix([buffer.text, text]))
        suffix = len(os.path.commonprefix([buffer.text[prefix:][::-1], text[prefix:][::-1]]))
        return Edit(prefix, len(buffer.text) - suffix, text[prefix : len(text) - suffix])

    # -- hover ---------------------------------------------------------------------------------
    def hover(self, buffer: Optional[Buffer], params: types.HoverParams) -> Optional[types.Hover]:
        from torchdet_lint.docs import rule_markdown

        if buffer is None:
            return None
        offset = self.offset_of(buffer, params.position)
        codes: List[str] = []
        hover_range = None
        line, column = buffer.lines.position(offset)
        for match in _RULE_CODE_RE.finditer(buffer.lines.line_text(line)):
            if match.start() <= column <= match.end():  # a code in a noqa comment
                codes.append(match.group(0))
                hover_range = types.Range(start=self.position(buffer, line, match.start()), end=self.position(buffer, line, match.end()))
        for d in buffer.diagnostics:
            start, end = self.diagnostic_offsets(buffer, d)
            if start <= offset <= end and d.code not in codes:
                codes.append(d.code)
                hover_range = hover_range or types.Range(start=self.offset_position(buffer, start), end=self.offset_position(buffer, end))
        rules = all_rules()
        texts = [rule_markdown(rules[code]) for code in codes if code in rules]
        if not texts:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n---\n\n".join(texts)),
            range=hover_range,
        )

    # -- the workspace index ------------------------------------------------------------------------
    async def build_indexes(self) -> None:
        loop = asyncio.get_running_loop()
        for index in list(self.indexes.values()):
            try:
                await loop.run_in_executor(self._index_executor, index.build)
            except Exception:  # a broken file tree must not stop the buffers being linted
                logger.exception("indexing %s failed", index.root)
                index.ready = True
            for path in sorted(index.stale):
                buffer_options = self.buffers_options(path)
                if buffer_options is not None:
                    index.update(path, None, buffer_options)
            index.stale.clear()
        self.schedule_all()

    def buffers_options(self, path: Path) -> Optional[RunOptions]:
        index = self.index_for(path)
        try:
            return make_options(self.settings_for(path), index.first_party if index else frozenset())
        except ConfigError:
            return None

    def file_changed(self, path: Path, text: Optional[str]) -> None:
        index = self.index_for(path)
        options = self.buffers_options(path)
        if index is not None and options is not None:
            index.update(path, text, options)


# -- helpers ---------------------------------------------------------------------------------


def _path_of(uri: str) -> Path:
    path = to_fs_path(uri)
    if path is None:  # not a file: URI (untitled:, a notebook cell): lint as a file in the cwd
        return Path.cwd() / "untitled.py"
    path = Path(path)
    if path.suffix == ".ipynb":  # a notebook cell: Python, not the notebook's JSON
        return path.with_suffix(".py")
    return path


def _is_python(language_id: Optional[str], path: Path) -> bool:
    if language_id:
        return language_id.lower() in ("python", "pyi")
    return path.suffix in PYTHON_SUFFIXES


def _kind_wanted(only: Optional[Sequence[str]], kind: str) -> bool:
    """Whether `kind` answers a request restricted to `only` (kinds are hierarchical)."""
    if not only:
        return True
    return any(kind == wanted or kind.startswith(str(wanted) + ".") for wanted in only)


def _rule_doc_file(code: str) -> Path:
    """The rule's documentation as a Markdown file (written once per version)."""
    from torchdet_lint.docs import rule_markdown

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(base) / "torchdet-lint" / __version__ / "rules"
    path = directory / f"{code}.md"
    if not path.exists():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(rule_markdown(all_rules()[code]), encoding="utf-8")
        except OSError:
            path = Path(tempfile.gettempdir()) / f"torchdet-lint-{__version__}-{code}.md"
            path.write_text(rule_markdown(all_rules()[code]), encoding="utf-8")
    return path


def noqa_edit(text: str, lines: LineIndex, line: int, code: str) -> Optional[Edit]:
    """The edit adding `code` to the line's noqa comment (appending one when there is none).

    None when the line is already suppressed for everything, or when no comment
    can go at its end (the line continues in a string or after a backslash).
    """
    line_text = lines.line_text(line)
    line_start = lines.offset(line, 0)
    for match in _NOQA_CODES_RE.finditer(line_text):
        codes = match.group("codes")
        if codes is None:
            return None  # a blanket `# noqa` already silences every code
        present = {c.strip().upper() for c in codes.split(",")}
        if code in present:
            return None
        end = line_start + match.end("codes")
        return Edit(end, end, f", {code}")
    if not _comment_fits(text, line):
        return None
    end = line_start + len(line_text)
    stripped = line_text.rstrip()
    padding = "" if not stripped else "  "
    end_of_code = line_start + len(stripped)
    return Edit(end_of_code, end, f"{padding}# noqa: {code}")


def _comment_fits(text: str, line: int) -> bool:
    """Whether a comment appended to `line` would be a comment (not string content)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > line:
                return False
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER) and token.start[0] == line:
                return True
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return True  # unfinished code: appending a comment is as safe as anything
    return True


# -- the protocol handlers -------------------------------------------------------------------


def create_server() -> TorchdetLanguageServer:
    server = TorchdetLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchdetLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("ruleDocsUrl"), str):
            ls.docs_url = options["ruleDocsUrl"]
        roots = [folder.uri for folder in params.workspace_folders or []]
        if not roots and params.root_uri:
            roots = [params.root_uri]
        for uri in roots:
            path = to_fs_path(uri)
            if path and os.path.isdir(path):
                root = Path(path).resolve()
                ls.indexes[root] = WorkspaceIndex(root, ls._idle)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TorchdetLanguageServer, params: types.InitializedParams) -> None:
        await ls.build_indexes()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TorchdetLanguageServer, params: None) -> None:
        for index in ls.indexes.values():
            index.cancelled.set()
        for task in ls._pending.values():
            task.cancel()
        ls._index_executor.shutdown(wait=False, cancel_futures=True)
        ls._lint_executor.shutdown(wait=False, cancel_futures=True)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchdetLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchdetLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, CHANGE_DELAY)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
    def did_save(ls: TorchdetLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = _path_of(uri)
        if path.name != "pyproject.toml":
            text = params.text if params.text is not None else ls.workspace.get_text_document(uri).source
            ls.file_changed(path, text)
        ls.schedule(uri)
        ls.schedule_all()  # a saved file (or config) can change the findings of the others

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchdetLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.buffers.pop(uri, None)
        pending = ls._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        ls.publish(uri, None)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TorchdetLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            path = to_fs_path(change.uri)
            if path and Path(path).suffix in PYTHON_SUFFIXES + (".ipynb",):
                ls.file_changed(Path(path), None)
        ls.schedule_all()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False),
    )
    async def code_action(ls: TorchdetLanguageServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        return ls.code_actions(await ls.fresh(params.text_document.uri), params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TorchdetLanguageServer, params: types.HoverParams) -> Optional[types.Hover]:
        # The last lint answers at once (documentation does not need the newest ranges).
        uri = params.text_document.uri
        return ls.hover(ls.buffers.get(uri) or await ls.fresh(uri), params)

    return server


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(prog="torchdet-lint server", description="Language server over standard input/output.")
    parser.add_argument("--log-file", help="write the server's log here (standard error otherwise)")
    parser.add_argument("--verbose", "-v", action="store_true", help="log debug messages")
    args = parser.parse_args(list(argv))
    # Standard output carries the protocol: the log goes to standard error or a file.
    handler = logging.FileHandler(args.log_file, encoding="utf-8") if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        handlers=[handler],
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    create_server().start_io()
    return 0
