"""A real LSP client for the tests: `torchdet-lint server` in a subprocess, driven over
stdio by pygls's LanguageClient, recording what the server publishes; and what an editor
does with the edits it gets back."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

TIMEOUT = 30.0
HAZARD = "torch.backends.cudnn.benchmark = True"

# Two rules that exist only inside the server process of these tests: a file
# rule with an unsafe fix, and a project rule that needs another file's summary.
TEST_RULES = textwrap.dedent(
    '''
    import libcst as cst
    from torchdet_lint.core.diagnostics import Applicability, Diagnostic, FixBuilder
    from torchdet_lint.core.rule import ProjectRule, Rule

    class UnsafeExample(Rule):
        """Test rule."""
        code = "TDL991"
        name = "test-unsafe-fix"
        summary = "test: `unsafe_call()` has an unsafe fix"
        profiles = frozenset({"strict"})

        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == "unsafe_call":
                fix = FixBuilder("Call `safe_call` instead", Applicability.UNSAFE).replace(node.func, cst.Name("safe_call"))
                self.report(node, fix=fix)

    class ImportsTorchThrough(ProjectRule):
        """Test rule."""
        code = "TDL990"
        name = "test-imports-torch-through"
        summary = "test: imports a first-party module that imports torch"
        profiles = frozenset({"strict"})

        def check(self, project):
            by_module = {s.module_name: s for s in project.summaries.values() if s.module_name}
            for path, summary in project.summaries.items():
                for imported in summary.imports:
                    other = by_module.get(imported)
                    if other is not None and other.imports_torch:
                        yield Diagnostic(path=path, line=1, column=1, end_line=1, end_column=1, code=self.code,
                                         name=self.name, message=f"imports {imported}, which imports torch")
    '''
)
SERVER_WITH_TEST_RULES = TEST_RULES + (
    "\nimport sys\nfrom torchdet_lint.checks import extra_rules\nfrom torchdet_lint.server import main\n"
    "with extra_rules(UnsafeExample, ImportsTorchThrough):\n    sys.exit(main([]))\n"
)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def apply_text_edits(text: str, edits: List[types.TextEdit], units: Callable[[str], int] = utf16_length) -> str:
    """What an editor does with TextEdits (positions in the given code units)."""
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        before = sum(len(line) for line in lines[: position.line])
        line = lines[position.line]
        consumed = 0
        for index, char in enumerate(line):
            if consumed >= position.character:
                return before + index
            consumed += units(char)
        return before + len(line.rstrip("\r\n"))

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = offset(edit.range.start), offset(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


def workspace_text_edits(edit: types.WorkspaceEdit, uri: str) -> List[types.TextEdit]:
    if edit.document_changes:
        return [e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits]
    return list((edit.changes or {}).get(uri, []))


class Session:
    """A running server and a client that records published diagnostics."""

    def __init__(
        self,
        root: Path,
        encodings: Optional[List[str]] = None,
        test_rules: bool = False,
        server_args: Sequence[str] = (),
        script: Optional[str] = None,
    ) -> None:
        self.root = root
        self.server_args = list(server_args)
        self.encodings = encodings
        self.script = SERVER_WITH_TEST_RULES if test_rules else script  # a server started by this Python code
        self.client = LanguageClient("torchdet-lint-tests", "1")
        self.published: Dict[str, List[types.PublishDiagnosticsParams]] = {}
        self.changed = asyncio.Event()
        self.versions: Dict[str, int] = {}
        self.texts: Dict[str, str] = {}
        self.result: Optional[types.InitializeResult] = None

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self.changed.set()

    async def __aenter__(self) -> "Session":
        if self.script is not None:
            await self.client.start_io(sys.executable, "-c", self.script, cwd=str(self.root))
        else:
            await self.client.start_io(sys.executable, "-m", "torchdet_lint", "server", *self.server_args, cwd=str(self.root))
        capabilities = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=self.encodings) if self.encodings else None,
            workspace=types.WorkspaceClientCapabilities(
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
            ),
        )
        uri = from_fs_path(str(self.root))
        self.result = await asyncio.wait_for(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=capabilities,
                    root_uri=uri,
                    workspace_folders=[types.WorkspaceFolder(uri=uri, name="root")],
                )
            ),
            TIMEOUT,
        )
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
            self.client.exit(None)
            await asyncio.wait_for(self.client.stop(), TIMEOUT)
        finally:
            if self.client._server is not None and self.client._server.returncode is None:
                self.client._server.kill()

    @property
    def returncode(self) -> Optional[int]:
        return self.client._server.returncode

    # -- documents ---------------------------------------------------------------------------
    def uri(self, name: str) -> str:
        return from_fs_path(str(self.root / name))

    def open(self, name: str, text: str, language: str = "python") -> str:
        uri = self.uri(name)
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        return uri

    def replace(self, uri: str, text: str) -> None:
        """An incremental change replacing the whole text."""
        old = self.texts[uri]
        lines = old.split("\n")
        end = types.Position(line=len(lines) - 1, character=utf16_length(lines[-1]))
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=types.Position(line=0, character=0), end=end), text=text
                    )
                ],
            )
        )

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=self.texts[uri])
        )

    # -- notebooks (LSP 3.17), as vscode-languageclient syncs them -------------------------------
    def open_notebook(self, name: str, cells: Sequence[Tuple[str, str]]) -> Tuple[str, List[str]]:
        """Open the notebook `name` with `cells` ((language, text); "markdown" makes a markup
        cell): its URI and its cells' URIs, in the `vscode-notebook-cell` scheme VS Code uses."""
        uri = self.uri(name)
        self.versions[uri] = 1
        path = uri.split(":", 1)[1]
        cell_uris = [f"vscode-notebook-cell:{path}#C{index}" for index in range(len(cells))]
        items = []
        for cell_uri, (language, text) in zip(cell_uris, cells):
            self.versions[cell_uri] = 1
            self.texts[cell_uri] = text
            items.append(types.TextDocumentItem(uri=cell_uri, language_id=language, version=1, text=text))
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=uri,
                    notebook_type="jupyter-notebook",
                    version=1,
                    cells=[
                        types.NotebookCell(
                            kind=types.NotebookCellKind.Markup if language == "markdown" else types.NotebookCellKind.Code,
                            document=cell_uri,
                        )
                        for cell_uri, (language, _) in zip(cell_uris, cells)
                    ],
                ),
                cell_text_documents=items,
            )
        )
        return uri, cell_uris

    def replace_cell(self, notebook: str, cell: str, text: str) -> None:
        """An edit of one cell replacing its whole text."""
        old = self.texts[cell]
        lines = old.split("\n")
        end = types.Position(line=len(lines) - 1, character=utf16_length(lines[-1]))
        self.versions[notebook] += 1
        self.versions[cell] += 1
        self.texts[cell] = text
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook, version=self.versions[notebook]),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(uri=cell, version=self.versions[cell]),
                                changes=[
                                    types.TextDocumentContentChangePartial(
                                        range=types.Range(start=types.Position(line=0, character=0), end=end), text=text
                                    )
                                ],
                            )
                        ]
                    )
                ),
            )
        )

    def close_notebook(self, notebook: str, cells: Sequence[str]) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=notebook),
                cell_text_documents=[types.TextDocumentIdentifier(uri=cell) for cell in cells],
            )
        )

    async def diagnostics(
        self, uri: str, predicate: Callable[[List[types.Diagnostic]], bool] = lambda d: True, after: int = 0
    ) -> List[types.Diagnostic]:
        """The first diagnostics published for `uri` (after the `after`-th) for the
        document's current version that satisfy `predicate`."""
        seen = after

        async def wait() -> List[types.Diagnostic]:
            nonlocal seen
            while True:
                published = self.published.get(uri, [])
                while seen < len(published):
                    params = published[seen]
                    seen += 1
                    if params.version == self.versions.get(uri) and predicate(params.diagnostics):
                        return list(params.diagnostics)
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(wait(), TIMEOUT)

    def count(self, uri: str) -> int:
        return len(self.published.get(uri, []))

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Until `condition()` holds after a publish (it is checked after each one)."""

        async def wait() -> None:
            while not condition():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), TIMEOUT)

    async def code_actions(self, uri: str, diagnostic: Optional[types.Diagnostic] = None, only=None) -> List[types.CodeAction]:
        where = (
            diagnostic.range
            if diagnostic
            else types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
        )
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=where,
            context=types.CodeActionContext(diagnostics=[diagnostic] if diagnostic else [], only=only),
        )
        return list(await asyncio.wait_for(self.client.text_document_code_action_async(params), TIMEOUT) or [])

    async def hover(self, uri: str, position: types.Position) -> Optional[types.Hover]:
        params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
        return await asyncio.wait_for(self.client.text_document_hover_async(params), TIMEOUT)


def run(coroutine) -> Any:
    return asyncio.run(coroutine)


def fixes_only(actions: List[types.CodeAction]) -> List[types.CodeAction]:
    """The quick fixes that apply a rule's fix (not the noqa ones, not fix-all)."""
    return [a for a in actions if a.kind == types.CodeActionKind.QuickFix and "noqa" not in a.title]


def codes(diagnostics: List[types.Diagnostic]) -> List[str]:
    return sorted(str(d.code) for d in diagnostics)
