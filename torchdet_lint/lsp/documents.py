"""The documents a client has open, kept in step with its notifications: text documents
(whole or incremental changes) and LSP 3.17 notebook documents, whose cells are text
documents of their own; positions in the client's encoding; file URIs; and the checks
that a request's params have the shape the protocol gives them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import quote, unquote, urlsplit

from torchdet_lint.lsp.jsonrpc import INVALID_PARAMS, ResponseError

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
MARKUP_CELL, CODE_CELL = 1, 2
_LINE_END = re.compile(r"\r\n|\r|\n")
_REQUIRED = object()


# -- params ----------------------------------------------------------------------------------


def param(obj: Any, key: str, kind: Any = object, default: Any = _REQUIRED) -> Any:
    """`obj[key]` when it has the protocol's type, else an InvalidParams error (or `default`
    when the key is absent or null)."""
    if not isinstance(obj, dict):
        raise ResponseError(INVALID_PARAMS, f"expected an object holding `{key}`")
    value = obj.get(key)
    if value is None:
        if default is _REQUIRED:
            raise ResponseError(INVALID_PARAMS, f"`{key}` is missing")
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ResponseError(INVALID_PARAMS, f"`{key}` has the wrong type")
    return value


def position_of(obj: Any) -> Tuple[int, int]:
    """(line, character) of an LSP Position."""
    return max(param(obj, "line", int), 0), max(param(obj, "character", int), 0)


# -- positions ---------------------------------------------------------------------------------


def units(text: str, encoding: str) -> int:
    """The length of `text` in the encoding's code units."""
    if encoding == UTF16:
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text)


def column_of(line_text: str, character: int, encoding: str) -> int:
    """The code-point column of a position's `character` on a line (clamped to the line)."""
    if encoding == UTF32 or line_text.isascii():
        return min(character, len(line_text))
    count = 0
    for index, char in enumerate(line_text):
        if count >= character:
            return index
        count += units(char, encoding)
    return len(line_text)


def line_starts(text: str) -> List[int]:
    return [0] + [match.end() for match in _LINE_END.finditer(text)]


# -- URIs --------------------------------------------------------------------------------------


def uri_to_path(uri: str) -> Optional[str]:
    """The file system path of a `file:` URI (None for any other scheme)."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    path = unquote(parts.path)
    if os.name == "nt":  # pragma: no cover - `file:///c%3A/x` is `c:\\x`
        path = path.lstrip("/").replace("/", "\\")
    if parts.netloc:  # a UNC share
        path = f"//{parts.netloc}{path}"
    return path


def path_to_uri(path: str) -> str:
    path = os.path.abspath(path).replace(os.sep, "/")
    if not path.startswith("/"):  # pragma: no cover - a Windows drive
        path = "/" + path
    return "file://" + quote(path)


# -- documents -----------------------------------------------------------------------------------


@dataclass
class TextDocument:
    uri: str
    language_id: str
    version: Optional[int]
    text: str
    _starts: Optional[List[int]] = field(default=None, repr=False)

    def offset_at(self, position: Any, encoding: str) -> int:
        """The code-point offset of an LSP Position (clamped into the text)."""
        line, character = position_of(position)
        if self._starts is None:
            self._starts = line_starts(self.text)
        if line >= len(self._starts):
            return len(self.text)
        start = self._starts[line]
        end = self._starts[line + 1] if line + 1 < len(self._starts) else len(self.text)
        line_text = self.text[start:end].rstrip("\r\n")
        return start + column_of(line_text, character, encoding)

    def apply(self, change: Any, encoding: str) -> None:
        """One TextDocumentContentChangeEvent: a range replaced, or the whole text."""
        text = param(change, "text", str)
        where = param(change, "range", dict, None)
        if where is None:
            self.text = text
        else:
            start = self.offset_at(param(where, "start", dict), encoding)
            end = self.offset_at(param(where, "end", dict), encoding)
            self.text = self.text[:start] + text + self.text[max(start, end) :]
        self._starts = None


def text_document_item(item: Any) -> TextDocument:
    return TextDocument(
        param(item, "uri", str), param(item, "languageId", str), param(item, "version", int, None), param(item, "text", str)
    )


@dataclass
class NotebookCell:
    kind: int  # MARKUP_CELL or CODE_CELL
    document: str  # the URI of the cell's text document
    metadata: Dict[str, Any] = field(default_factory=dict)


def notebook_cell(item: Any) -> NotebookCell:
    return NotebookCell(param(item, "kind", int), param(item, "document", str), param(item, "metadata", dict, {}))


@dataclass
class NotebookDocument:
    uri: str
    notebook_type: str
    version: Optional[int]
    metadata: Dict[str, Any]
    cells: List[NotebookCell]


class Documents:
    """Every open document: text documents by URI (notebook cells among them) and notebooks.
    The caller serialises access (the server changes them on one thread, reads on another)."""

    def __init__(self) -> None:
        self.texts: Dict[str, TextDocument] = {}
        self.notebooks: Dict[str, NotebookDocument] = {}
        self.cell_owner: Dict[str, str] = {}  # cell URI -> notebook URI

    # -- text documents --------------------------------------------------------------------
    def open_text(self, params: Any) -> TextDocument:
        document = text_document_item(param(params, "textDocument", dict))
        self.texts[document.uri] = document
        return document

    def change_text(self, params: Any, encoding: str) -> Optional[TextDocument]:
        identifier = param(params, "textDocument", dict)
        document = self.texts.get(param(identifier, "uri", str))
        if document is None:
            return None
        for change in param(params, "contentChanges", list):
            document.apply(change, encoding)
        document.version = param(identifier, "version", int, document.version)
        return document

    def close_text(self, params: Any) -> Optional[TextDocument]:
        return self.texts.pop(param(param(params, "textDocument", dict), "uri", str), None)

    # -- notebook documents ----------------------------------------------------------------
    def open_notebook(self, params: Any) -> NotebookDocument:
        item = param(params, "notebookDocument", dict)
        notebook = NotebookDocument(
            param(item, "uri", str),
            param(item, "notebookType", str),
            param(item, "version", int, None),
            param(item, "metadata", dict, {}),
            [notebook_cell(cell) for cell in param(item, "cells", list)],
        )
        for cell_item in param(params, "cellTextDocuments", list):
            self._open_cell(notebook, text_document_item(cell_item))
        self.notebooks[notebook.uri] = notebook
        return notebook

    def _open_cell(self, notebook: NotebookDocument, document: TextDocument) -> None:
        self.texts[document.uri] = document
        self.cell_owner[document.uri] = notebook.uri

    def change_notebook(self, params: Any, encoding: str) -> Tuple[Optional[NotebookDocument], List[str]]:
        """Apply a NotebookDocumentChangeEvent: (the notebook, the URIs of the cells it closed)."""
        identifier = param(params, "notebookDocument", dict)
        notebook = self.notebooks.get(param(identifier, "uri", str))
        if notebook is None:
            return None, []
        change = param(params, "change", dict)
        notebook.version = param(identifier, "version", int, notebook.version)
        notebook.metadata = param(change, "metadata", dict, notebook.metadata)
        closed: List[str] = []
        cells = param(change, "cells", dict, {})
        structure = param(cells, "structure", dict, None)
        if structure is not None:
            array = param(structure, "array", dict)
            start, delete = param(array, "start", int), param(array, "deleteCount", int)
            notebook.cells[start : start + delete] = [notebook_cell(cell) for cell in param(array, "cells", list, [])]
            for cell_item in param(structure, "didOpen", list, []):
                self._open_cell(notebook, text_document_item(cell_item))
            for identifier_item in param(structure, "didClose", list, []):
                uri = param(identifier_item, "uri", str)
                self.texts.pop(uri, None)
                self.cell_owner.pop(uri, None)
                closed.append(uri)
        for cell_item in param(cells, "data", list, []):  # kind or metadata changed
            changed = notebook_cell(cell_item)
            for index, cell in enumerate(notebook.cells):
                if cell.document == changed.document:
                    notebook.cells[index] = changed
        for content in param(cells, "textContent", list, []):
            self.change_text(
                {"textDocument": param(content, "document", dict), "contentChanges": content.get("changes")}, encoding
            )
        return notebook, closed

    def close_notebook(self, params: Any) -> Tuple[Optional[NotebookDocument], List[str]]:
        """(the notebook closed, the URIs of its cells)."""
        notebook = self.notebooks.pop(param(param(params, "notebookDocument", dict), "uri", str), None)
        uris = [param(item, "uri", str) for item in param(params, "cellTextDocuments", list, [])]
        if notebook is not None:
            uris = list(dict.fromkeys([*uris, *(cell.document for cell in notebook.cells)]))
        for uri in uris:
            self.texts.pop(uri, None)
            self.cell_owner.pop(uri, None)
        return notebook, uris
