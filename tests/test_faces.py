"""Every way in reports the same for a file inside its project: the command line on the
named file, the command line on standard input (`--stdin-filename`), the flake8 plugin, and
the language server through a real LSP client (its first publish: it waits for the
project's summaries, so it is complete). A notebook too, through the server's notebook
documents, except through flake8, which reads no notebooks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from conftest import run_cli
from faces_project import NOTEBOOK_CELLS, seed_faces_project
from lsp_client import Session, run

# (cell, line, column, code, message): 1-based, the cell None in a Python file.
Finding = Tuple[Optional[int], int, int, str, str]
_FLAKE8_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<column>\d+): (?P<code>TDL\d+) (?P<message>.*)$")


def _from_json(out: str) -> List[Finding]:
    return sorted((d.get("cell"), d["line"], d["column"], d["code"], d["message"]) for d in json.loads(out))


def cli_named(root: Path, name: str) -> List[Finding]:
    code, out, err = run_cli("--output-format", "json", name, cwd=root)
    assert code == 1, err
    return _from_json(out)


def cli_stdin(root: Path, name: str) -> List[Finding]:
    text = (root / name).read_bytes()
    code, out, err = run_cli("--output-format", "json", "-", "--stdin-filename", name, cwd=root, input=text)
    assert code == 1, err
    return _from_json(out)


def flake8(root: Path, name: str) -> List[Finding]:
    completed = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TDL", name], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 1, completed.stderr
    found = []
    for line in completed.stdout.splitlines():
        match = _FLAKE8_LINE.match(line)
        assert match and match["path"] == name, line
        found.append((None, int(match["line"]), int(match["column"]), match["code"], match["message"]))
    return sorted(found)


def server(root: Path, name: str) -> List[Finding]:
    """The first diagnostics the server publishes for the file (for each cell of a notebook)."""

    async def scenario() -> List[Finding]:
        async with Session(root) as session:
            if name.endswith(".ipynb"):
                _, cells = session.open_notebook(name, NOTEBOOK_CELLS)
                published: Dict[int, list] = {}
                for number, (cell, (language, _)) in enumerate(zip(cells, NOTEBOOK_CELLS), 1):
                    if language != "markdown":
                        published[number] = await session.diagnostics(cell)
            else:
                published = {0: await session.diagnostics(session.open(name, (root / name).read_text(encoding="utf-8")))}
        # The texts are ASCII: UTF-16 columns are code-point columns.
        return sorted(
            (number or None, d.range.start.line + 1, d.range.start.character + 1, str(d.code), d.message)
            for number, diagnostics in published.items()
            for d in diagnostics
        )

    return run(scenario())


@pytest.mark.parametrize("cache", ["cold", "warm"])
@pytest.mark.parametrize("name", ["train.py", "explore.ipynb"])
def test_every_face_reports_the_same_for_a_file_in_its_project(tmp_path: Path, name: str, cache: str) -> None:
    root = seed_faces_project(tmp_path)
    first = server(root, name) if cache == "cold" else None  # its project's summaries are computed, none cached
    named = cli_named(root, name)
    # What needs the other files: NumPy unseeded though `fix_seed` seeds torch and `random`
    # (so no TDL001 or TDL002), and the workers copying a dataset's RNG object; in train.py, a
    # `noqa` that silences nothing (TDL900, judged on the file's final findings).
    only_py = {"TDL301", "TDL900"} if name == "train.py" else set()
    assert {finding[3] for finding in named} == {"TDL003", "TDL101", "TDL102"} | only_py
    assert cli_stdin(root, name) == named
    if name.endswith(".py"):
        assert flake8(root, name) == named
    assert (first if first is not None else server(root, name)) == named


def test_a_notebooks_cells_get_their_findings_and_follow_edits(tmp_path: Path) -> None:
    """Each code cell gets its own findings at cell positions; an edit of one cell lints the
    notebook as a whole again; a quick fix edits the cell it belongs to; closing clears them."""
    root = seed_faces_project(tmp_path)

    async def scenario() -> None:
        async with Session(root) as session:
            notebook, cells = session.open_notebook("explore.ipynb", NOTEBOOK_CELLS)
            loader_cell = cells[4]
            diagnostics = await session.diagnostics(loader_cell, lambda d: bool(d))
            assert sorted((str(d.code), d.range.start.line, d.range.start.character) for d in diagnostics) == [
                ("TDL101", 1, 9),
                ("TDL102", 1, 9),
            ]
            assert "(explore.ipynb:cell 3:3)" in next(d.message for d in diagnostics if d.code == "TDL102")
            assert [str(d.code) for d in await session.diagnostics(cells[1], lambda d: bool(d))] == ["TDL003"]

            # The quick fix of TDL101 edits the loader's cell only.
            tdl101 = next(d for d in diagnostics if d.code == "TDL101")
            actions = await session.code_actions(loader_cell, tdl101, only=["quickfix"])
            [action] = [a for a in actions if a.title.startswith("TDL101:") and "noqa" not in a.title]
            [change] = action.edit.document_changes
            assert change.text_document.uri == loader_cell
            assert "generator=" in change.edits[0].new_text

            # Seeding NumPy in the loader's cell: TDL003 leaves the first cell.
            seen = session.count(cells[1])
            session.replace_cell(notebook, loader_cell, "np.random.seed(0)\n" + NOTEBOOK_CELLS[4][1])
            assert await session.diagnostics(cells[1], after=seen) == []
            moved = await session.diagnostics(loader_cell, lambda d: bool(d))
            assert sorted((str(d.code), d.range.start.line) for d in moved) == [("TDL101", 2), ("TDL102", 2)]

            seen = session.count(loader_cell)
            session.close_notebook(notebook, cells)
            await session.wait_for(lambda: session.count(loader_cell) > seen)
            assert not session.published[loader_cell][-1].diagnostics

    run(scenario())
