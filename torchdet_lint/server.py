"""The language server (`torchdet-lint server`, LSP over standard input/output): diagnostics
on open, change and save for Python files and Jupyter notebooks (LSP 3.17 notebook
documents: the cells linted as one notebook, diagnostics published on each cell), quick
fixes, fix-all, noqa suppression and rule hover.

Every document goes through the engine's one way in (`runner.run`), with the summaries of
its project's other files, which a thread of their own loads from the summary index (the
missing ones computed) and keeps current as files are saved. A document's first
diagnostics wait for its project (up to FIRST_PUBLISH_WAIT seconds, then the cached
summaries serve and the document is linted again once the rest are in), so what the
editor shows first is what `check` reports.

Threads: the main one reads the client's messages and keeps the documents; one lints
(debounced, the newest version wins) and answers the requests that need a lint; one
loads and updates the projects.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import re
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from torchdet_lint import __version__
from torchdet_lint.checks import get_rule, rule_codes
from torchdet_lint.core.diagnostics import PARSE_ERROR_CODE, Applicability, Diagnostic, Edit, error_diagnostic
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex, SourceText
from torchdet_lint.core.startup import user_cache_directory
from torchdet_lint.engine.cache import SummaryIndex
from torchdet_lint.engine.config import ConfigError, with_overrides
from torchdet_lint.engine.discovery import SourceFile, display_path
from torchdet_lint.engine.file_pass import RunOptions
from torchdet_lint.engine.project_phase import ProjectContext
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
from torchdet_lint.engine.workspace import ProjectScope, Workspace
from torchdet_lint.lsp.documents import (
    CODE_CELL,
    MARKUP_CELL,
    UTF8,
    UTF16,
    UTF32,
    Documents,
    NotebookDocument,
    column_of,
    param,
    path_to_uri,
    position_of,
    units,
    uri_to_path,
)
from torchdet_lint.lsp.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, Connection, ResponseError

logger = logging.getLogger(__name__)

SOURCE = "torchdet-lint"
FIX_ALL_KIND = "source.fixAll.torchdet-lint"
QUICK_FIX_KIND = "quickfix"
PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_TYPE = "jupyter-notebook"
# More files than this in a workspace and the project phase only sees the buffer:
# indexing a home directory opened by mistake would take minutes.
MAX_INDEXED_FILES = 20000
# Seconds of quiet after an edit before the document is linted again: typing is not
# linted key by key, and the diagnostics follow an edit within a quarter of a second.
CHANGE_DELAY = 0.1
# How long a document's first lint waits for its project's summaries (a cold cache on a
# large tree takes minutes): past it, the cached summaries serve until the rest are in.
FIRST_PUBLISH_WAIT = 3.0
# Longest pause of the project loading while a document is being linted.
IDLE_WAIT = 10.0
_NOQA_CODES_RE = re.compile(r"#[ \t]*noqa(?P<colon>:[ \t]*(?P<codes>[A-Z]+[0-9]+(?:[ \t]*,[ \t]*[A-Z]+[0-9]+)*))?", re.I)
_RULE_CODE_RE = re.compile(r"TDL\d{3}")


# -- projects: the summaries of the files that are not open ---------------------------------------


@dataclass
class ProjectState:
    """One project of the workspace while it loads and after: its options and the summaries
    of its files (`partial` once the fresh ones are read from the summary index, `complete`
    once every file has one)."""

    root: Path
    deadline: float  # when a first lint stops waiting for `complete`
    scope: Optional[ProjectScope] = None
    options: Optional[RunOptions] = None
    context: Optional[ProjectContext] = None
    index: Optional[SummaryIndex] = None
    error: Optional[str] = None  # its configuration is broken
    partial: threading.Event = field(default_factory=threading.Event)
    complete: threading.Event = field(default_factory=threading.Event)


class WorkspaceIndex:
    """The projects under one workspace folder, as the command line sees them; their
    summaries are loaded and updated on the project thread only."""

    def __init__(self, root: Path, overrides: Callable[[Settings], Settings]) -> None:
        self.root = root
        self.workspace = Workspace(root, overrides=overrides)
        self.projects: Dict[Path, ProjectState] = {}
        self.cancelled = threading.Event()  # set at shutdown or on a new configuration: stop between two files

    def display(self, path: Path) -> str:
        return display_path(path, self.root)

    def contains(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents

    def load(self, state: ProjectState, directory: Path, pause: Callable[[], bool]) -> None:
        """Read or compute the summaries of the project of `directory` (one file at a time: a
        process pool forked from a threaded server can deadlock, and shutdown must not wait)."""
        try:
            scope = self.workspace.scope_for(directory)
            files, _ = self.workspace.walk(scope)
            if len(files) > MAX_INDEXED_FILES:
                logger.warning(
                    "%s: %d files, more than %d: project rules see only open documents", scope.root, len(files), MAX_INDEXED_FILES
                )
                files = []
            scope.files = [SourceFile(path, self.display(path), False) for path in files]
            state.scope = scope
            state.options = make_options(scope.settings, first_party_names(scope.files))

            def started(context: ProjectContext) -> None:
                state.context = context
                state.partial.set()

            context, index = project_context(scope, state.options, set(), pause=pause, started=started)
            state.context, state.index = context, index
            if index is not None and not self.cancelled.is_set():
                index.save()
        except ConfigError as error:
            state.error = str(error)
        except Exception as error:  # a broken file tree must not stop the documents being linted
            logger.exception("loading the project of %s failed", directory)
            state.error = f"internal error: {type(error).__name__}: {error}"
        finally:
            state.partial.set()
            state.complete.set()

    def update(self, path: Path) -> bool:
        """A file changed on disk (saved, created, deleted): its summary again. True when a
        loaded project holds it."""
        if path.suffix not in PYTHON_SUFFIXES and path.suffix != ".ipynb":
            return False
        state = self.projects.get(self.workspace.root_for(path.parent)[0])
        if state is None or state.context is None or not state.complete.is_set() or state.options is None:
            return False  # not loaded yet: its loading reads the file as it is now
        display = self.display(path)
        if not path.is_file():
            state.context.summaries.pop(display, None)
            state.context.paths.pop(display, None)
            return True
        module_name, is_package = module_name_for(path)
        result = lint_path(path, display, summary_options(state.options), module_name, is_package)
        state.context.paths[display] = path
        if result.summary is not None:
            state.context.summaries[display] = result.summary
        else:
            state.context.summaries.pop(display, None)
        if state.index is not None and state.scope is not None and result.digest is not None:
            record_summary(state.index, state.scope, SourceFile(path, display, False), result)
        return True

    def save(self) -> None:
        for state in list(self.projects.values()):
            if state.index is not None and state.complete.is_set():
                state.index.save()


# -- what a lint showed -------------------------------------------------------------------------------


@dataclass
class Cell:
    """A notebook cell as it was linted."""

    uri: str
    kind: int
    language: str
    version: Optional[int]
    text: str


@dataclass
class Lint:
    """One lint of a document: a Python file, or a whole notebook."""

    key: str  # the document's URI (a notebook's, for its cells)
    version: Optional[int]
    path: Path
    display: str
    text: str  # what was linted: the file's text, a notebook's JSON
    cells: Optional[List[Cell]] = None  # a notebook's cells, markdown ones included
    options: Optional[RunOptions] = None
    context: Optional[ProjectContext] = None
    diagnostics: List[Diagnostic] = field(default_factory=list)
    notebook: Any = None  # engine.notebook.Notebook of `text`
    complete: bool = True  # the project's summaries were all in


@dataclass
class View:
    """What one document shows (a file, or one notebook cell): its text and diagnostics with
    their offsets in it. Code actions and hover answer from it."""

    uri: str
    version: Optional[int]
    text: str
    lines: LineIndex
    items: List[Tuple[Diagnostic, int, int]]
    lint: Lint


# -- the lint thread ------------------------------------------------------------------------------------


class Scheduler:
    """The lint thread's work: lints of documents, each due once its debounce has passed (a
    newer request for a document replaces the pending one), and jobs (the requests that need
    a lint), in arrival order. `idle` is set while it runs nothing: the project loading
    pauses for it."""

    def __init__(self, lint: Callable[[str], None]) -> None:
        self._lint = lint
        self._condition = threading.Condition()
        self._due: Dict[str, float] = {}
        self._jobs: deque = deque()
        self._stopped = False
        self.idle = threading.Event()
        self.idle.set()
        self._thread = threading.Thread(target=self._loop, name="torchdet-lint", daemon=True)
        self._thread.start()

    def schedule(self, key: str, delay: float = 0.0) -> None:
        with self._condition:
            self._due[key] = time.monotonic() + delay
            self._condition.notify()

    def cancel(self, key: str) -> None:
        with self._condition:
            self._due.pop(key, None)

    def submit(self, job: Callable[[], None]) -> None:
        with self._condition:
            self._jobs.append(job)
            self._condition.notify()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def waiting(self, event: threading.Event, timeout: float) -> bool:
        """Wait for `event` from the lint thread, letting the project loading go on meanwhile."""
        self.idle.set()
        try:
            return event.wait(timeout)
        finally:
            self.idle.clear()

    def _next(self) -> Optional[Callable[[], None]]:
        with self._condition:
            while not self._stopped:
                if self._jobs:
                    return self._jobs.popleft()
                now = time.monotonic()
                if self._due:
                    key = min(self._due, key=self._due.__getitem__)
                    if self._due[key] <= now:
                        del self._due[key]
                        return lambda: self._lint(key)
                    self._condition.wait(self._due[key] - now)
                else:
                    self._condition.wait()
            return None

    def _loop(self) -> None:
        while True:
            work = self._next()
            if work is None:
                return
            self.idle.clear()
            try:
                work()
            except Exception:  # an engine bug must not take the editor's linter down
                logger.exception("the lint thread's work failed")
            finally:
                self.idle.set()


class Worker:
    """One daemon thread running jobs in order: the project thread. (A pool's threads are
    joined at interpreter exit; exiting must not wait for a large project still loading.)"""

    def __init__(self, name: str) -> None:
        self._jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def submit(self, job: Callable[[], Any]) -> Future:
        future: Future = Future()
        self._jobs.put((job, future))
        return future

    def _loop(self) -> None:
        while True:
            job, future = self._jobs.get()
            try:
                future.set_result(job())
            except Exception as error:
                logger.exception("the project thread's work failed")
                future.set_exception(error)


# -- the server ----------------------------------------------------------------------------------------------


class LanguageServer:
    def __init__(self, connection: Connection, profile: Optional[str] = None) -> None:
        self.connection = connection
        self.documents = Documents()
        self.lock = threading.RLock()  # the documents, views and indexes: changed on one thread, read on another
        self.encoding = UTF16
        self.client_capabilities: Dict[str, Any] = {}
        self.docs_url: Optional[str] = None  # initializationOptions.ruleDocsUrl, "{code}" replaced
        # `server --profile`: replaces every configuration's profile, as `check --profile` does.
        self.overrides: Callable[[Settings], Settings] = lambda settings: with_overrides(settings, profile=profile)
        self.indexes: Dict[Path, WorkspaceIndex] = {}
        self.views: Dict[str, View] = {}  # by document URI (a file's, a cell's)
        self.lints: Dict[str, Lint] = {}  # the last lint of each document (file or notebook)
        self.shutting_down = False
        self.scheduler = Scheduler(self.lint_and_publish)
        self.projects = Worker("torchdet-index")
        self._doc_files: Dict[str, Path] = {}
        self._docs_to_write: List[str] = []
        self.requests: Dict[str, Tuple[Callable[[Any], Any], bool]] = {
            # method: (handler, answered on the lint thread)
            "initialize": (self.initialize, False),
            "shutdown": (self.shutdown, False),
            "textDocument/codeAction": (self.code_action, True),
            "textDocument/hover": (self.hover, True),
        }
        self.notifications: Dict[str, Callable[[Any], None]] = {
            "initialized": self.initialized,
            "textDocument/didOpen": self.did_open,
            "textDocument/didChange": self.did_change,
            "textDocument/didSave": self.did_save,
            "textDocument/didClose": self.did_close,
            "notebookDocument/didOpen": self.did_open_notebook,
            "notebookDocument/didChange": self.did_change_notebook,
            "notebookDocument/didSave": self.did_save_notebook,
            "notebookDocument/didClose": self.did_close_notebook,
            "workspace/didChangeWatchedFiles": self.did_change_watched_files,
        }

    # -- the message loop ---------------------------------------------------------------------------
    def serve(self) -> int:
        """Answer messages until `exit` (0 after `shutdown`, 1 without) or the end of the input."""
        while True:
            try:
                message = self.connection.read()
            except ValueError as error:
                logger.error("a message that is not JSON: %s", error)
                continue
            if message is None:
                return 0 if self.shutting_down else 1
            if not isinstance(message, dict) or not isinstance(message.get("method"), str):
                continue  # a response (the server asks nothing), or nonsense
            method = message["method"]
            if method == "exit":
                return 0 if self.shutting_down else 1
            if "id" in message:
                self.request(message["id"], method, message.get("params"))
            else:
                handler = self.notifications.get(method)
                if handler is not None:
                    try:
                        handler(message.get("params"))
                    except ResponseError as error:
                        logger.error("%s: %s", method, error.message)
                    except Exception:
                        logger.exception("%s failed", method)

    def request(self, request_id: Any, method: str, params: Any) -> None:
        found = self.requests.get(method)
        if found is None:
            self.connection.respond_error(request_id, METHOD_NOT_FOUND, f"unknown method: {method}")
            return
        handler, on_lint_thread = found

        def answer() -> None:
            try:
                result = handler(params)
            except ResponseError as error:
                self.connection.respond_error(request_id, error.code, error.message)
            except Exception as error:
                logger.exception("%s failed", method)
                self.connection.respond_error(request_id, INTERNAL_ERROR, f"{type(error).__name__}: {error}")
            else:
                self.connection.respond(request_id, result)

        if on_lint_thread:
            self.scheduler.submit(answer)
        else:
            answer()

    # -- life cycle ---------------------------------------------------------------------------------------
    def initialize(self, params: Any) -> dict:
        capabilities = param(params, "capabilities", dict, {})
        self.client_capabilities = capabilities
        offered = param(param(capabilities, "general", dict, {}), "positionEncodings", list, [])
        self.encoding = next((encoding for encoding in offered if encoding in (UTF16, UTF8, UTF32)), UTF16)
        options = params.get("initializationOptions")
        if isinstance(options, dict) and isinstance(options.get("ruleDocsUrl"), str):
            self.docs_url = options["ruleDocsUrl"]
        folders = [param(folder, "uri", str) for folder in param(params, "workspaceFolders", list, [])]
        if not folders and isinstance(params.get("rootUri"), str):
            folders = [params["rootUri"]]
        for uri in folders:
            path = uri_to_path(uri)
            if path and os.path.isdir(path):
                root = Path(path).resolve()
                with self.lock:
                    self.indexes[root] = WorkspaceIndex(root, self.overrides)
        return {
            "capabilities": {
                "positionEncoding": self.encoding,
                "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
                # No `cells` filter: the markdown cells come too, so cells are numbered as Jupyter numbers them.
                "notebookDocumentSync": {"notebookSelector": [{"notebook": {"notebookType": NOTEBOOK_TYPE}}], "save": True},
                "hoverProvider": True,
                "codeActionProvider": {"codeActionKinds": [QUICK_FIX_KIND, FIX_ALL_KIND], "resolveProvider": False},
            },
            "serverInfo": {"name": SOURCE, "version": __version__},
        }

    def initialized(self, params: Any) -> None:
        with self.lock:
            indexes = list(self.indexes.values())
        for index in indexes:  # their own projects start loading before any document asks
            self.project_state(index, index.root)

    def shutdown(self, params: Any) -> None:
        self.shutting_down = True
        with self.lock:
            indexes = list(self.indexes.values())
        for index in indexes:
            index.cancelled.set()
        self.scheduler.stop()
        saved = self.projects.submit(lambda: [index.save() for index in indexes])
        try:
            saved.result(timeout=5)  # after the loading under way stops (between two files)
        except Exception:
            logger.warning("the summary index was not saved at shutdown")
        return None

    # -- documents ---------------------------------------------------------------------------------------------
    def did_open(self, params: Any) -> None:
        with self.lock:
            document = self.documents.open_text(params)
        self.scheduler.schedule(document.uri)

    def did_change(self, params: Any) -> None:
        with self.lock:
            document = self.documents.change_text(params, self.encoding)
            owner = self.documents.cell_owner.get(document.uri) if document is not None else None
        if document is not None:
            self.scheduler.schedule(owner or document.uri, CHANGE_DELAY)

    def did_save(self, params: Any) -> None:
        uri = param(param(params, "textDocument", dict), "uri", str)
        path = _path_of(uri)
        if path.name == "pyproject.toml":
            self.reload_configuration()
        else:
            self.file_changed(path)
        self.scheduler.schedule(uri)

    def did_close(self, params: Any) -> None:
        with self.lock:
            document = self.documents.close_text(params)
            if document is None:
                return
            self.views.pop(document.uri, None)
            self.lints.pop(document.uri, None)
        self.scheduler.cancel(document.uri)
        self.publish(document.uri, None, [])

    def did_open_notebook(self, params: Any) -> None:
        with self.lock:
            notebook = self.documents.open_notebook(params)
        self.scheduler.schedule(notebook.uri)

    def did_change_notebook(self, params: Any) -> None:
        with self.lock:
            notebook, closed = self.documents.change_notebook(params, self.encoding)
            for uri in closed:
                self.views.pop(uri, None)
        for uri in closed:
            self.publish(uri, None, [])
        if notebook is not None:
            edited = bool(param(param(params, "change", dict), "cells", dict, {}).get("textContent"))
            self.scheduler.schedule(notebook.uri, CHANGE_DELAY if edited else 0.0)

    def did_save_notebook(self, params: Any) -> None:
        uri = param(param(params, "notebookDocument", dict), "uri", str)
        path = uri_to_path(uri)
        if path:
            self.file_changed(Path(path))
        self.scheduler.schedule(uri)

    def did_close_notebook(self, params: Any) -> None:
        with self.lock:
            notebook, cells = self.documents.close_notebook(params)
            for uri in cells:
                self.views.pop(uri, None)
            if notebook is not None:
                self.lints.pop(notebook.uri, None)
        if notebook is not None:
            self.scheduler.cancel(notebook.uri)
        for uri in cells:
            self.publish(uri, None, [])

    def did_change_watched_files(self, params: Any) -> None:
        for change in param(params, "changes", list):
            path = uri_to_path(param(change, "uri", str))
            if path and Path(path).name == "pyproject.toml":
                self.reload_configuration()
            elif path and Path(path).suffix in PYTHON_SUFFIXES + (".ipynb",):
                self.file_changed(Path(path))

    def open_keys(self) -> List[str]:
        """Every open document the server lints: Python files, and notebooks (not their cells)."""
        with self.lock:
            files = [uri for uri in self.documents.texts if uri not in self.documents.cell_owner]
            return files + list(self.documents.notebooks)

    def schedule_all(self, keys: Optional[Iterable[str]] = None) -> None:
        for key in self.open_keys() if keys is None else keys:
            self.scheduler.schedule(key)

    # -- projects ------------------------------------------------------------------------------------------------
    def index_for(self, path: Path) -> WorkspaceIndex:
        """The workspace folder of a file; for a file outside every folder, its project
        (the root the command line would use)."""
        with self.lock:
            found = [index for index in self.indexes.values() if index.contains(path)]
            if found:
                return max(found, key=lambda index: len(str(index.root)))
        root = Workspace(path.parent).root_for(path.parent)[0]
        with self.lock:
            return self.indexes.setdefault(root, WorkspaceIndex(root, self.overrides))

    def project_state(self, index: WorkspaceIndex, directory: Path) -> ProjectState:
        """The project of `directory`, its loading started on the project thread if needed."""
        root = index.workspace.root_for(directory)[0]
        with self.lock:
            state = index.projects.get(root)
            if state is not None:
                return state
            state = index.projects[root] = ProjectState(root, time.monotonic() + FIRST_PUBLISH_WAIT)

        def pause() -> bool:
            self.scheduler.idle.wait(timeout=IDLE_WAIT)
            return not index.cancelled.is_set()

        def load() -> None:
            started = time.perf_counter()
            index.load(state, directory, pause)
            context = state.context
            logger.debug(
                "project %s loaded in %.3f s: %d summaries, %d computed",
                root,
                time.perf_counter() - started,
                len(context.summaries) if context else 0,
                context.computed if context else 0,
            )
            self.relint_incomplete()

        self.projects.submit(load)
        return state

    def relint_incomplete(self) -> None:
        """Lint again the documents whose last lint lacked summaries that are now in."""
        with self.lock:
            keys = [key for key, lint in self.lints.items() if not lint.complete]
        self.schedule_all(keys)

    def file_changed(self, path: Path) -> None:
        """A file changed on disk: its summary again (on the project thread), then every open document."""

        def update() -> None:
            if path.name == "__init__.py":
                forget_packages()
            with self.lock:
                indexes = [index for index in self.indexes.values() if index.contains(path)]
            for index in indexes:
                index.update(path)
            self.schedule_all()

        self.projects.submit(update)

    def reload_configuration(self) -> None:
        """A configuration changed: every project is loaded again with it."""
        with self.lock:
            for root, index in list(self.indexes.items()):
                index.cancelled.set()
                self.indexes[root] = WorkspaceIndex(root, self.overrides)
        self.schedule_all()

    # -- linting (on the lint thread) ------------------------------------------------------------------------
    def snapshot(self, key: str) -> Optional[Lint]:
        """The document as it is now, to be linted."""
        with self.lock:
            notebook = self.documents.notebooks.get(key)
            if notebook is not None:
                return self._notebook_snapshot(notebook)
            document = self.documents.texts.get(key)
            if document is None or key in self.documents.cell_owner:
                return None
            path = _path_of(key)
            if not _is_python(document.language_id, path):
                return None
            return Lint(key, document.version, path, "", document.text)

    def _notebook_snapshot(self, notebook: NotebookDocument) -> Lint:
        cells = []
        for cell in notebook.cells:
            document = self.documents.texts.get(cell.document)
            text = document.text if document is not None else ""
            language = document.language_id if document is not None else ""
            cells.append(Cell(cell.document, cell.kind, language, document.version if document else None, text))
        path = uri_to_path(notebook.uri)
        path = Path(path) if path else Path.cwd() / "untitled.ipynb"
        return Lint(notebook.uri, notebook.version, path, "", notebook_json(notebook.metadata, cells), cells=cells)

    def current(self, lint: Lint) -> bool:
        """Whether the document is still what `lint` linted."""
        with self.lock:
            if lint.cells is not None:
                notebook = self.documents.notebooks.get(lint.key)
                if notebook is None or notebook.version != lint.version or len(notebook.cells) != len(lint.cells):
                    return False
                documents = [self.documents.texts.get(cell.uri) for cell in lint.cells]
                return all(d is not None and d.text == cell.text for d, cell in zip(documents, lint.cells))
            document = self.documents.texts.get(lint.key)
            return document is not None and document.version == lint.version and document.text == lint.text

    def lint_and_publish(self, key: str) -> None:
        lint = self.snapshot(key)
        if lint is None:
            return
        started = time.perf_counter()
        self.lint(lint)
        logger.debug("linted %s (version %s) in %.3f s", key, lint.version, time.perf_counter() - started)
        views = self.views_of(lint)
        # Published under the lock: a document closed meanwhile never gets diagnostics back.
        with self.lock:
            if not self.current(lint):
                return  # edited meanwhile: the lint of the new version is due
            self.lints[key] = lint
            for view in views:
                self.views[view.uri] = view
                self.publish(view.uri, view.version, [self.to_lsp(view, d, start, end) for d, start, end in view.items])
        self.write_rule_docs()

    def lint(self, lint: Lint) -> None:
        """Fill in a lint's diagnostics: the document inside its project, as `check` sees it."""
        lint.display = display_path(lint.path)
        try:
            index = self.index_for(lint.path)
            lint.display = index.display(lint.path)
            file = SourceFile(lint.path, lint.display, True)
            state = self.project_state(index, lint.path.parent)
            if not state.complete.is_set():
                self.scheduler.waiting(state.complete, max(0.0, state.deadline - time.monotonic()))
            if state.error is not None:
                raise ConfigError(state.error)
            lint.complete = state.complete.is_set()
            if state.options is not None and state.context is not None:
                options = state.options
                # Copied here: the project thread changes these dicts while this one reads them.
                context = ProjectContext(dict(state.context.summaries), dict(state.context.paths))
            else:  # the project's files are still being listed: the file alone for now
                options, context = make_options(index.workspace.scope_for(lint.path.parent).settings), None
            lint.options, lint.context = options, context
            result = run(
                [file], options, context=context, texts={file.display: SourceText(lint.text)}, project=context is not None
            )
            lint.diagnostics = result.diagnostics
            lint.notebook = getattr(result.files[0].source, "notebook", None)
        except ConfigError as error:
            lint.diagnostics = [error_diagnostic(lint.display, f"not analysed: {error}")]
        except Exception as error:  # an engine bug must not take the editor's linter down
            logger.exception("linting %s failed", lint.key)
            lint.diagnostics = [error_diagnostic(lint.display, f"not analysed: internal error: {type(error).__name__}: {error}")]

    def views_of(self, lint: Lint) -> List[View]:
        if lint.cells is None:
            return [self.view(lint.key, lint.version, lint.text, lint.diagnostics, lint)]
        by_cell: Dict[int, List[Diagnostic]] = {}
        for d in lint.diagnostics:  # a finding on no cell (the notebook unreadable) shows on the first
            by_cell.setdefault(d.cell or 1, []).append(d)
        return [
            self.view(cell.uri, cell.version, cell.text, by_cell.get(number, []), lint)
            for number, cell in enumerate(lint.cells, 1)
            if cell.kind == CODE_CELL or number in by_cell
        ]

    def view(self, uri: str, version: Optional[int], text: str, diagnostics: List[Diagnostic], lint: Lint) -> View:
        lines = LineIndex(text)
        items = []
        for d in diagnostics:
            start = lines.offset(d.line, d.column - 1)
            end = lines.offset(d.end_line, d.end_column - 1)
            if end <= start:  # a point (a syntax error, a project finding): the rest of the line
                line, _ = lines.position(start)
                end = lines.offset(line, 0) + len(lines.line_text(line))
            items.append((d, start, max(end, start)))
        return View(uri, version, text, lines, items, lint)

    def fresh_view(self, uri: str) -> Optional[View]:
        """The view of a document from a lint of its current text (linted now if needed)."""
        with self.lock:
            key = self.documents.cell_owner.get(uri, uri)
            lint = self.lints.get(key)
        if lint is None or not self.current(lint):
            self.scheduler.cancel(key)
            self.lint_and_publish(key)
        with self.lock:
            return self.views.get(uri)

    def publish(self, uri: str, version: Optional[int], diagnostics: List[dict]) -> None:
        params: Dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
        if version is not None:
            params["version"] = version
        self.connection.notify("textDocument/publishDiagnostics", params)

    # -- positions ---------------------------------------------------------------------------------------------
    def position(self, view: View, offset: int) -> dict:
        line, column = view.lines.position(min(max(offset, 0), len(view.text)))
        return {"line": line - 1, "character": units(view.lines.line_text(line)[:column], self.encoding)}

    def range(self, view: View, start: int, end: int) -> dict:
        return {"start": self.position(view, start), "end": self.position(view, end)}

    def offset_of(self, view: View, position: Any) -> int:
        """The code-point offset of a client position (clamped into the text)."""
        line, character = position_of(position)
        line = min(line, len(view.lines.starts) - 1) + 1
        return view.lines.offset(line, column_of(view.lines.line_text(line), character, self.encoding))

    def to_lsp(self, view: View, d: Diagnostic, start: int, end: int) -> dict:
        diagnostic = {
            "range": self.range(view, start, end),
            "message": d.message,
            "severity": 1 if d.code == PARSE_ERROR_CODE else 2,
            "code": d.code,
            "source": SOURCE,
            "data": {"name": d.name, "fix": d.fix.applicability.value if d.fix else None},
        }
        if d.code in rule_codes():
            diagnostic["codeDescription"] = {"href": self.rule_docs_url(d.code)}
        return diagnostic

    # -- rule documentation -------------------------------------------------------------------------------------
    def rule_docs_url(self, code: str) -> str:
        """Where the rule's documentation is: the configured URL, else a local Markdown file
        (written after the diagnostics are out: rendering it is not on the way to them)."""
        if self.docs_url:
            return self.docs_url.replace("{code}", code)
        path = self._doc_files.get(code)
        if path is None:
            path = self._doc_files[code] = user_cache_directory() / __version__ / "rules" / f"{code}.md"
            self._docs_to_write.append(code)
        return path_to_uri(str(path))

    def write_rule_docs(self) -> None:
        """The rule documentation files named so far (once per process: a development install
        whose docstring changed under the same version rewrites them)."""
        if not self._docs_to_write:
            return
        from torchdet_lint.docs import rule_markdown

        while self._docs_to_write:
            code = self._docs_to_write.pop()
            path = self._doc_files[code]
            text = rule_markdown(get_rule(code))
            try:
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
            except OSError:  # no writable cache directory: the next publish names a temporary file
                self._doc_files[code] = Path(tempfile.gettempdir()) / f"torchdet-lint-{__version__}-{code}.md"
                self._doc_files[code].write_text(text, encoding="utf-8")

    # -- code actions (on the lint thread) -----------------------------------------------------------------------
    def code_action(self, params: Any) -> List[dict]:
        uri = param(param(params, "textDocument", dict), "uri", str)
        where = param(params, "range", dict)
        position_of(param(where, "start", dict))
        position_of(param(where, "end", dict))
        only = param(param(params, "context", dict), "only", list, None)
        view = self.fresh_view(uri)
        if view is None:
            return []
        start, end = self.offset_of(view, where["start"]), self.offset_of(view, where["end"])
        actions: List[dict] = []
        if _kind_wanted(only, QUICK_FIX_KIND):
            for d, d_start, d_end in view.items:
                if d.code == PARSE_ERROR_CODE or not (d_start <= end and start <= d_end):
                    continue
                lsp_diagnostic = self.to_lsp(view, d, d_start, d_end)
                if d.fix is not None:
                    edit = self.fix_edit(view, d.fix.edits)
                    if edit is not None:
                        unsafe = d.fix.applicability is Applicability.UNSAFE
                        actions.append(
                            {
                                "title": f"{d.code}: {d.fix.title}" + (" (unsafe)" if unsafe else ""),
                                "kind": QUICK_FIX_KIND,
                                "diagnostics": [lsp_diagnostic],
                                "isPreferred": not unsafe,
                                "edit": edit,
                            }
                        )
                noqa = noqa_edit(view.text, view.lines, d.line, d.code)
                if noqa is not None:
                    actions.append(
                        {
                            "title": f"{d.code}: Suppress with `# noqa: {d.code}`",
                            "kind": QUICK_FIX_KIND,
                            "diagnostics": [lsp_diagnostic],
                            "edit": self.workspace_edit({view.uri: (view, [noqa])}),
                        }
                    )
        if _kind_wanted(only, FIX_ALL_KIND):
            edit = self.fix_all_edit(view)
            if edit is not None:
                actions.append({"title": "torchdet-lint: Fix all safe fixes", "kind": FIX_ALL_KIND, "edit": edit})
        return actions

    def fix_edit(self, view: View, edits: Sequence[Edit]) -> Optional[dict]:
        """A fix's edits as a WorkspaceEdit (a notebook's may touch several cells)."""
        lint = view.lint
        if lint.cells is None:
            return self.workspace_edit({view.uri: (view, list(edits))})
        try:
            new_json = lint.notebook.apply_edits(edits)
        except (ValueError, AttributeError):  # it would break a magic, or span cells
            return None
        return self.notebook_edit(lint, new_json)

    def fix_all_edit(self, view: View) -> Optional[dict]:
        """The document (a notebook: the cell asked about) with every safe fix applied."""
        lint = view.lint
        if lint.options is None or not any(d.fix and d.fix.applicability is Applicability.SAFE for d in lint.diagnostics):
            return None
        from torchdet_lint.engine.fixer import fix_text

        file = SourceFile(lint.path, lint.display, True)
        # fix_text never keeps a round that breaks the file; what it cannot fix stays as it is.
        data, _, count = fix_text(
            SourceText(lint.text), file.path, file.display, lint.options, context=lint.context, on_error=logger.info
        )
        new_text = data.decode("utf-8")
        if not count or new_text == lint.text:
            return None
        if lint.cells is None:
            return self.workspace_edit({view.uri: (view, [_replacement(view.text, new_text)])})
        edit = self.notebook_edit(lint, new_json=new_text, only=view.uri)
        return edit

    def notebook_edit(self, lint: Lint, new_json: str, only: Optional[str] = None) -> Optional[dict]:
        """The cell edits turning the notebook `lint` linted into `new_json` (only cell `only`'s)."""
        from torchdet_lint.engine.notebook import NotebookError, load_notebook

        try:
            cells = json.loads(new_json)["cells"]
            load_notebook(new_json)
        except (ValueError, KeyError, TypeError, NotebookError):
            return None
        changes: Dict[str, Tuple[View, List[Edit]]] = {}
        for cell, new in zip(lint.cells or [], cells):
            source = new.get("source", "")
            text = "".join(source) if isinstance(source, list) else source
            if text != cell.text and (only is None or cell.uri == only):
                view = self.views.get(cell.uri) or self.view(cell.uri, cell.version, cell.text, [], lint)
                changes[cell.uri] = (view, [_replacement(cell.text, text)])
        return self.workspace_edit(changes) if changes else None

    def workspace_edit(self, changes: Dict[str, Tuple[View, List[Edit]]]) -> dict:
        text_edits = {
            uri: [{"range": self.range(view, e.start, e.end), "newText": e.content} for e in edits]
            for uri, (view, edits) in changes.items()
        }
        workspace = self.client_capabilities.get("workspace") if isinstance(self.client_capabilities, dict) else None
        edit_capabilities = workspace.get("workspaceEdit") if isinstance(workspace, dict) else None
        if isinstance(edit_capabilities, dict) and edit_capabilities.get("documentChanges"):
            return {
                "documentChanges": [
                    {"textDocument": {"uri": uri, "version": changes[uri][0].version}, "edits": edits}
                    for uri, edits in text_edits.items()
                ]
            }
        return {"changes": text_edits}

    # -- hover (on the lint thread) ---------------------------------------------------------------------------------
    def hover(self, params: Any) -> Optional[dict]:
        uri = param(param(params, "textDocument", dict), "uri", str)
        position = param(params, "position", dict)
        position_of(position)
        # The last lint answers at once (documentation does not need the newest ranges).
        with self.lock:
            view = self.views.get(uri)
        view = view or self.fresh_view(uri)
        if view is None:
            return None
        offset = self.offset_of(view, position)
        codes: List[str] = []
        hover_range = None
        line, column = view.lines.position(offset)
        line_start = view.lines.offset(line, 0)
        for match in _RULE_CODE_RE.finditer(view.lines.line_text(line)):
            if match.start() <= column <= match.end():  # a code in a noqa comment
                codes.append(match.group(0))
                hover_range = self.range(view, line_start + match.start(), line_start + match.end())
        for d, start, end in view.items:
            if start <= offset <= end and d.code not in codes:
                codes.append(d.code)
                hover_range = hover_range or self.range(view, start, end)
        codes = [code for code in codes if code in rule_codes()]
        if not codes:
            return None
        from torchdet_lint.docs import rule_markdown

        text = "\n---\n\n".join(rule_markdown(get_rule(code)) for code in codes)
        return {"contents": {"kind": "markdown", "value": text}, "range": hover_range}


# -- helpers ---------------------------------------------------------------------------------------------------------


def notebook_json(metadata: Dict[str, Any], cells: Sequence[Cell]) -> str:
    """The notebook file the cells make (as Jupyter writes one), for the engine to lint as `check`
    lints the file: every cell counts in the numbering, markdown ones included."""
    entries = []
    for cell in cells:
        kind = "markdown" if cell.kind == MARKUP_CELL else ("raw" if cell.language == "raw" else "code")
        entries.append({"cell_type": kind, "metadata": {}, "source": cell.text})
    return json.dumps({"cells": entries, "metadata": _kernel(metadata, cells), "nbformat": 4, "nbformat_minor": 5})


def _kernel(metadata: Dict[str, Any], cells: Sequence[Cell]) -> Dict[str, Any]:
    """The notebook's kernel language: from its metadata as the client keeps it (VS Code nests
    the file's under `metadata` or `custom.metadata`), else from its code cells' language."""
    custom = metadata.get("custom")
    for candidate in (metadata, metadata.get("metadata"), custom.get("metadata") if isinstance(custom, dict) else None):
        if isinstance(candidate, dict) and ("kernelspec" in candidate or "language_info" in candidate):
            return {key: candidate[key] for key in ("kernelspec", "language_info") if key in candidate}
    languages = [cell.language.lower() for cell in cells if cell.kind == CODE_CELL and cell.language not in ("", "raw")]
    if languages and not any(language in ("python", "ipython") for language in languages):
        return {"language_info": {"name": languages[0]}}
    return {}


def _replacement(old: str, new: str) -> Edit:
    """One edit turning `old` into `new`: the part between their common prefix and suffix."""
    prefix = len(os.path.commonprefix([old, new]))
    suffix = len(os.path.commonprefix([old[prefix:][::-1], new[prefix:][::-1]]))
    return Edit(prefix, len(old) - suffix, new[prefix : len(new) - suffix])


def _path_of(uri: str) -> Path:
    path = uri_to_path(uri)
    if path is None:  # not a file: URI (untitled:, a cell sent as a text document): a file in the cwd
        return Path.cwd() / "untitled.py"
    path = Path(path)
    if path.suffix == ".ipynb":  # a cell sent as a text document: Python, not the notebook's JSON
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
            return None  # a blanket noqa comment already silences every code
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
    import io
    import tokenize

    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > line:
                return False
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER) and token.start[0] == line:
                return True
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return True  # unfinished code: appending a comment is as safe as anything
    return True


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
    server = LanguageServer(Connection(sys.stdin.buffer, sys.stdout.buffer), args.profile)
    return server.serve()
