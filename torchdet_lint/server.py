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
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from torchdet_lint import __version__
from torchdet_lint.checks import all_rules
from torchdet_lint.core.diagnostics import (
    PARSE_ERROR_CODE,
    Applicability,
    Diagnostic,
    Edit,
    error_diagnostic,
)
from torchdet_lint.core.source import LineIndex, SourceText
from torchdet_lint.engine.cache import SummaryIndex
from torchdet_lint.engine.config import (
    ConfigError,
    Settings,
    find_config,
    load_config_file,
    with_overrides,
)
from torchdet_lint.engine.discovery import SourceFile, display_path
from torchdet_lint.engine.file_pass import RunOptions
from torchdet_lint.engine.fixer import apply_fixes
from torchdet_lint.engine.project import ProjectContext
from torchdet_lint.engine.runner import (
    first_party_names,
    forget_packages,
    lint_path,
    make_options,
    module_name_for,
    project_context,
    record_summary,
    run,
    summary_options,
)
from torchdet_lint.engine.workspace import ProjectScope, Workspace, validated

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


@dataclass
class ProjectState:
    """One project of the workspace: its run options and the summaries of all its files."""

    scope: ProjectScope
    options: RunOptions
    context: ProjectContext
    index: Optional[SummaryIndex]


class WorkspaceIndex:
    """The projects under one workspace folder, as the command line sees them: for
    each, its options and the summaries of its files on disk (the project phase's
    view of the files that are not open), from the summary index when fresh,
    kept current as files are saved, created or deleted."""

    def __init__(
        self,
        root: Path,
        idle: Optional[threading.Event] = None,
        overrides: Callable[[Settings], Settings] = lambda settings: settings,
    ) -> None:
        self.root = root
        self.idle = idle or threading.Event()  # set while no buffer lint waits: indexing yields to them
        self.ready = False  # the folder's own project is loaded
        self.workspace = Workspace(root, overrides=overrides)
        self.projects: Dict[Path, ProjectState] = {}
        self.stale: set = set()  # paths saved while the index was being built
        self.cancelled = threading.Event()  # set at shutdown: stop between two files

    def build(self) -> None:
        """Load the folder's project (run in a worker thread)."""
        self.load(self.root)
        self.ready = True

    def load(self, directory: Path) -> Optional[ProjectState]:
        """The project of `directory`, its summaries loaded or computed (in this thread,
        one file at a time: a process pool forked from the server's threads can
        deadlock, and shutdown must not wait for a whole pass)."""
        scope = self.workspace.scope_for(directory)
        if scope.root in self.projects:
            return self.projects[scope.root]
        files, _ = self.workspace.walk(scope)
        if len(files) > MAX_INDEXED_FILES:
            logger.warning(
                "%s: %d files, more than %d: project rules see only open buffers", scope.root, len(files), MAX_INDEXED_FILES
            )
            files = []
        scope.files = [SourceFile(path, self.display(path), False) for path in files]
        options = make_options(scope.settings, first_party_names(scope.files))

        def pause() -> bool:
            self.idle.wait(timeout=IDLE_WAIT)
            return not self.cancelled.is_set()

        context, index = project_context(scope, options, set(), pause=pause)
        if self.cancelled.is_set():
            return None
        if index is not None:
            index.save()
        state = self.projects[scope.root] = ProjectState(scope, options, context, index)
        return state

    def state_for(self, path: Path) -> Optional[ProjectState]:
        """The loaded project of a file (None until it is loaded)."""
        return self.projects.get(self.workspace.root_for(path.parent)[0])

    def display(self, path: Path) -> str:
        return display_path(path, self.root)

    def contains(self, path: Path) -> bool:
        try:
            path.relative_to(self.root)
        except ValueError:
            return False
        return True

    def update(self, path: Path) -> None:
        """A file changed on disk (saved, created, deleted): its summary again."""
        if path.suffix not in PYTHON_SUFFIXES and path.suffix != ".ipynb":
            return
        if not self.ready:
            self.stale.add(path)
            return
        state = self.state_for(path)
        if state is None:
            return
        display = self.display(path)
        if not path.is_file():
            state.context.summaries.pop(display, None)
            state.context.paths.pop(display, None)
            return
        module_name, is_package = module_name_for(path)
        result = lint_path(path, display, summary_options(state.options), module_name, is_package)
        state.context.paths[display] = path
        if result.summary is not None:
            state.context.summaries[display] = result.summary
        else:
            state.context.summaries.pop(display, None)
        if state.index is not None and result.digest is not None:
            record_summary(state.index, state.scope, SourceFile(path, display, False), result)

    def save(self) -> None:
        for state in self.projects.values():
            if state.index is not None:
                state.index.save()


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
    # The project phase's input: the project's options and the summaries of its
    # other files; None while the project is still being indexed.
    project: Optional[Tuple[RunOptions, ProjectContext]] = None


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
    def __init__(self, profile: Optional[str] = None) -> None:
        super().__init__(
            "torchdet-lint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=_Protocol,
        )
        self.buffers: Dict[str, Buffer] = {}
        self.indexes: Dict[Path, WorkspaceIndex] = {}
        self.docs_url: Optional[str] = None  # initializationOptions.ruleDocsUrl, "{code}" replaced
        # `server --profile`: replaces every configuration's profile, as `check --profile` does.
        self.overrides: Callable[[Settings], Settings] = lambda settings: with_overrides(settings, profile=profile)
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
        """The configuration of a file not yet indexed (read again when it changes on disk)."""
        found = find_config(path.parent)
        if found is None:
            index = self.index_for(path)
            return self.overrides(Settings(root=index.workspace.root_for(path.parent)[0] if index else path.parent))
        mtime = found.stat().st_mtime
        cached = self._settings_cache.get(found)
        if cached is None or cached[0] != mtime:
            cached = (mtime, self.overrides(validated(load_config_file(found))))
            self._settings_cache[found] = cached
        return cached[1]

    def index_for(self, path: Path) -> Optional[WorkspaceIndex]:
        best = None
        for index in self.indexes.values():
            if index.contains(path) and (best is None or len(str(index.root)) > len(str(best.root))):
                best = index
        return best

    def index_or_new(self, path: Path) -> WorkspaceIndex:
        """The workspace folder of a file; for a file outside every folder, its project
        (the same root the command line would use), indexed in the background."""
        index = self.index_for(path)
        if index is None:
            root = Workspace(path.parent).root_for(path.parent)[0]
            index = self.indexes[root] = WorkspaceIndex(root, self._idle, self.overrides)
            asyncio.get_running_loop().create_task(self.build_index(index))
        return index

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
        index = self.index_or_new(path)
        buffer.display = index.display(path)
        if index.ready:
            state = index.state_for(path)
            if state is None:
                self.load_project(index, path)  # a sub-project of the folder: indexed, then linted again
            else:  # copied here: the index changes its dicts on this thread while a lint reads them on another
                buffer.project = (state.options, ProjectContext(dict(state.context.summaries), dict(state.context.paths)))
        return buffer

    def lint_buffer(self, buffer: Buffer) -> Buffer:
        """Fill in the buffer's diagnostics (safe to run in a worker thread)."""
        try:
            buffer.diagnostics = self._diagnostics(buffer)
        except ConfigError as error:
            buffer.diagnostics = [error_diagnostic(buffer.display, f"not analysed: {error}")]
        except Exception as error:  # an engine bug must not take the editor's linter down
            logger.exception("linting %s failed", buffer.uri)
            buffer.diagnostics = [
                error_diagnostic(buffer.display, f"not analysed: internal error: {type(error).__name__}: {error}")
            ]
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
        own_file = SourceFile(path, buffer.display, True)
        if buffer.project is not None:
            options, context = buffer.project
        else:
            options, context = make_options(self.settings_for(path), first_party_names([own_file])), None
        buffer.options = options
        # The project phase waits for the project's summaries.
        texts = {own_file.display: SourceText(buffer.text)}
        return run([own_file], options, context=context, texts=texts, project=context is not None).diagnostics

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
            scratch = Buffer(
                buffer.uri,
                buffer.version,
                text,
                LineIndex(text),
                path=buffer.path,
                display=buffer.display,
                project=buffer.project,
            )
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
                hover_range = types.Range(
                    start=self.position(buffer, line, match.start()), end=self.position(buffer, line, match.end())
                )
        for d in buffer.diagnostics:
            start, end = self.diagnostic_offsets(buffer, d)
            if start <= offset <= end and d.code not in codes:
                codes.append(d.code)
                hover_range = hover_range or types.Range(
                    start=self.offset_position(buffer, start), end=self.offset_position(buffer, end)
                )
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
        for index in list(self.indexes.values()):
            await self.build_index(index, relint=False)
        self.schedule_all()

    async def build_index(self, index: WorkspaceIndex, relint: bool = True) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(self._index_executor, index.build)
        except Exception:  # a broken file tree must not stop the buffers being linted
            logger.exception("indexing %s failed", index.root)
            index.ready = True
        for path in sorted(index.stale):
            index.update(path)
        index.stale.clear()
        if relint:
            self.schedule_all()

    def load_project(self, index: WorkspaceIndex, path: Path) -> None:
        """Index the project of a file in the background, then lint the open documents again."""

        async def load() -> None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._index_executor, index.load, path.parent)
            except Exception:
                logger.exception("indexing the project of %s failed", path)
                return
            self.schedule_all()

        asyncio.get_running_loop().create_task(load())

    def file_changed(self, path: Path) -> None:
        if path.name == "__init__.py":
            forget_packages()
        index = self.index_for(path)
        if index is not None:
            index.update(path)

    def reload_configuration(self) -> None:
        """A configuration changed: every project is indexed again with it."""
        for root, index in list(self.indexes.items()):
            index.cancelled.set()
            fresh = self.indexes[root] = WorkspaceIndex(root, self._idle, self.overrides)
            asyncio.get_running_loop().create_task(self.build_index(fresh))


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


_DOC_FILES: Dict[str, Path] = {}


def _rule_doc_file(code: str) -> Path:
    """The rule's documentation as a Markdown file (checked once per server process: a
    development install whose docstring changed under the same version rewrites it)."""
    found = _DOC_FILES.get(code)
    if found is not None:
        return found
    from torchdet_lint.docs import rule_markdown

    text = rule_markdown(all_rules()[code])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(base) / "torchdet-lint" / __version__ / "rules"
    path = directory / f"{code}.md"
    try:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError:
        path = Path(tempfile.gettempdir()) / f"torchdet-lint-{__version__}-{code}.md"
        path.write_text(text, encoding="utf-8")
    _DOC_FILES[code] = path
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


def create_server(profile: Optional[str] = None) -> TorchdetLanguageServer:
    server = TorchdetLanguageServer(profile)

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
                ls.indexes[root] = WorkspaceIndex(root, ls._idle, ls.overrides)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TorchdetLanguageServer, params: types.InitializedParams) -> None:
        await ls.build_indexes()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TorchdetLanguageServer, params: None) -> None:
        for index in ls.indexes.values():
            index.cancelled.set()
            index.save()
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
        if path.name == "pyproject.toml":
            ls.reload_configuration()
        else:
            ls.file_changed(path)
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
            if path and Path(path).name == "pyproject.toml":
                ls.reload_configuration()
            elif path and Path(path).suffix in PYTHON_SUFFIXES + (".ipynb",):
                ls.file_changed(Path(path))
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
    parser.add_argument(
        "--profile", choices=("reproducible", "strict", "performance"), help="use this profile whatever the configuration says"
    )
    args = parser.parse_args(list(argv))
    # Standard output carries the protocol: the log goes to standard error or a file.
    handler = logging.FileHandler(args.log_file, encoding="utf-8") if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        handlers=[handler],
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    create_server(args.profile).start_io()
    return 0
