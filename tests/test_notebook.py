"""Jupyter notebooks: cell-aware positions, IPython magics, fixes written back
into the JSON (nothing else changed), broken notebooks, and the API the fixer uses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import List

import pytest
from conftest import ROOT, lint_json, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from torchdet_lint.core.diagnostics import Edit
from torchdet_lint.core.source import SourceText
from torchdet_lint.engine.notebook import NotebookError, lint_notebook, load_notebook
from torchdet_lint.engine.runner import make_options
from torchdet_lint.testing import settings_from

DATA = ROOT / "tests" / "data" / "notebooks"
HAZARD = "torch.backends.cudnn.benchmark = True"


def _notebook(cells, indent=1, **metadata) -> str:
    """A notebook as nbformat writes it (sorted keys, one-space indent)."""
    data = {
        "cells": [
            {
                "cell_type": kind,
                "metadata": {},
                "source": source,
                **({"outputs": [], "execution_count": None} if kind == "code" else {}),
            }
            for kind, source in cells
        ],
        "metadata": metadata,
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"


def _copy(tmp_path: Path, name: str = "training.ipynb") -> Path:
    target = tmp_path / name
    shutil.copy2(DATA / name, target)
    return target


# -- linting through the command line -------------------------------------------------------


def test_diagnostics_are_placed_in_cells(tmp_path: Path) -> None:
    notebook = _copy(tmp_path)
    code, out, err = run_cli("--output-format", "concise", "--no-cache", "--select", "TDL301", "training.ipynb", cwd=tmp_path)
    assert code == 1, err
    lines = [line for line in out.splitlines() if "TDL301" in line]
    # Cells count markdown cells too (cell 1, cell 4); cell 3's %%time, `!ls` and `?`
    # lines keep their places; the %%bash cell (5) and the noqa'd line (cell 6) stay quiet.
    assert [line.split(": TDL301")[0] for line in lines] == ["training.ipynb:cell 3:4:1", "training.ipynb:cell 8:1:1"]

    [first, second] = lint_json("--select", "TDL301", str(notebook), cwd=tmp_path)
    assert (first["path"], first["cell"], first["line"], first["column"], first["end_line"], first["end_column"]) == (
        "training.ipynb",
        3,
        4,
        1,
        4,
        len(HAZARD) + 1,
    )
    assert (second["cell"], second["line"]) == (8, 1)
    # Fix edits stay in joined-code coordinates (documented): cell 3's line 4 is line 8 of the joined code.
    assert first["fix"]["edits"][0]["location"] == {"line": 8, "column": len(HAZARD) - 3}


NOISY_DATASET = (
    "class Noisy(Dataset):\n"
    "    def __init__(self):\n"
    "        self.rng = np.random.default_rng(0)\n"
    "\n"
    "    def __getitem__(self, i):\n"
    "        return self.rng.random()\n"
)


@pytest.mark.parametrize("how", ["named", "stdin"])
def test_project_findings_are_placed_in_cells_like_file_findings(tmp_path: Path, how: str) -> None:
    """TDL102 is a project rule, TDL101 a file rule: the same loader gets the same cell and
    cell line from both, and the dataset's line that TDL102 cites is a cell line too."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    text = _notebook(
        [
            ("markdown", ["# Noisy workers"]),
            ("code", ["import numpy as np\n", "import torch\n", "from torch.utils.data import DataLoader, Dataset\n"]),
            ("code", NOISY_DATASET),
            ("code", "x = 1\ny = 2\nz = 3\nw = 4\nloader = DataLoader(Noisy(), num_workers=2, shuffle=True)\n"),
        ]
    )
    (tmp_path / "t.ipynb").write_text(text, encoding="utf-8")
    args = ("t.ipynb",) if how == "named" else ("-", "--stdin-filename", "t.ipynb")
    code, out, err = run_cli(
        "--output-format", "json", "--no-cache", "--select", "TDL101,TDL102", *args, cwd=tmp_path, input=text.encode()
    )
    assert code == 1, err
    found = {d["code"]: d for d in json.loads(out)}
    for rule in ("TDL101", "TDL102"):
        assert (found[rule]["cell"], found[rule]["line"], found[rule]["column"]) == (4, 5, 10), rule
    assert "made outside the workers (t.ipynb:cell 3:3)" in found["TDL102"]["message"]


def test_full_output_shows_the_cell_lines_as_written(tmp_path: Path) -> None:
    _copy(tmp_path)
    code, out, err = run_cli("--no-cache", "--select", "TDL301", "training.ipynb", cwd=tmp_path)
    assert code == 1, err
    assert "training.ipynb:cell 3:4:1: TDL301" in out
    assert "3 | ?torch.manual_seed" in out  # the magic line as the user wrote it, numbered within the cell
    assert f"4 | {HAZARD}" in out
    # Context lines come from the diagnostic's own cell: cell 8 has one line, cell 7 is empty.
    cell_8 = out[out.index("training.ipynb:cell 8:1:1") :]
    assert [line for line in cell_8.splitlines() if "| " in line and line.split("|")[0].strip()] == [f"1 | {HAZARD}"]


def test_fix_changes_only_the_edited_cell_sources(tmp_path: Path) -> None:
    notebook = _copy(tmp_path)
    before = notebook.read_text(encoding="utf-8")
    code, out, err = run_cli("--fix", "--no-cache", "--select", "TDL301", "training.ipynb", cwd=tmp_path)
    assert code == 0, out + err
    after = notebook.read_text(encoding="utf-8")
    old, new = json.loads(before), json.loads(after)
    assert new["cells"][2]["source"][3] == "torch.backends.cudnn.benchmark = False\n"
    assert new["cells"][7]["source"] == "torch.backends.cudnn.benchmark = False"
    # Everything else is byte for byte the same: magics, outputs, metadata, key order, indentation.
    for index in (2, 7):
        old["cells"][index]["source"] = new["cells"][index]["source"]
    assert new == old
    assert list(new["cells"][2]) == list(json.loads(before)["cells"][2])
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert changed == [
        (f'    "{HAZARD}\\n",', '    "torch.backends.cudnn.benchmark = False\\n",'),
        (f'   "source": "{HAZARD}"', '   "source": "torch.backends.cudnn.benchmark = False"'),
    ]
    assert len(before.splitlines()) == len(after.splitlines()) and after.endswith("}\n")
    code, out, err = run_cli("--no-cache", "--select", "TDL301", "training.ipynb", cwd=tmp_path)
    assert code == 0, out


def test_fix_keeps_a_gallery_style_layout(tmp_path: Path) -> None:
    """sphinx-gallery's layout: two-space indent, ASCII escapes, one string per cell, no final newline."""
    notebook = _copy(tmp_path, "gallery.ipynb")
    before = notebook.read_text(encoding="utf-8")
    [diagnostic] = lint_json("--select", "TDL301", "gallery.ipynb", cwd=tmp_path)
    assert (diagnostic["cell"], diagnostic["line"]) == (3, 4)
    code, out, err = run_cli("--fix", "--no-cache", "--select", "TDL301", "gallery.ipynb", cwd=tmp_path)
    assert code == 0, out + err
    assert notebook.read_text(encoding="utf-8") == before.replace("benchmark = True", "benchmark = False")


def test_insertion_fixes_land_in_a_python_cell(tmp_path: Path) -> None:
    setup = ("code", ["%pip install torch"])
    deterministic = ["import torch\n", "torch.use_deterministic_algorithms(True)"]
    (tmp_path / "timed.ipynb").write_text(
        _notebook([("markdown", ["Setup"]), setup, ("code", ["%%time\n", *deterministic])]), encoding="utf-8"
    )
    (tmp_path / "plain.ipynb").write_text(_notebook([("markdown", ["Setup"]), setup, ("code", deterministic)]), encoding="utf-8")
    code, out, err = run_cli("--fix", "--no-cache", "--select", "TDL303", "--torch-version", "2.3", ".", cwd=tmp_path)
    assert code == 0, out + err
    # Two import blocks around the assignment, as isort keeps them (blank lines between).
    inserted = 'import os\n\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
    timed = json.loads((tmp_path / "timed.ipynb").read_text(encoding="utf-8"))["cells"]
    # Before `import torch`, below the cell magic, which must stay the cell's first line.
    assert "".join(timed[2]["source"]) == "%%time\n" + inserted + "\n" + "".join(deterministic)
    assert timed[1]["source"] == ["%pip install torch"]
    # On a cell boundary: the end of the previous code cell, which runs just before.
    plain = json.loads((tmp_path / "plain.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(plain[1]["source"]) == "%pip install torch\n" + inserted
    assert plain[2]["source"] == deterministic


def test_seeding_helper_import_stays_below_the_cells_sys_path_line(tmp_path: Path) -> None:
    """dinov2's notebooks put the repository on `sys.path` in their first cell: the project's
    seeding helper is never imported above that line. Where the imports end before it, the fix
    seeds torch itself; where the project's own imports follow it (dinov2's second cell), the
    helper's import joins them."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "utils.py").write_text(
        "import torch\n\n\ndef fix_random_seeds(seed=0):\n    torch.manual_seed(seed)\n", encoding="utf-8"
    )
    (tmp_path / "pkg" / "hub.py").write_text(
        "from torch import nn\n\n\ndef build():\n    return nn.Linear(2, 2)\n", encoding="utf-8"
    )
    setup = ["import sys\n", "\n", "import torch\n", "\n", "print(sys.version)\n", 'sys.path.append("..")']
    (tmp_path / "plain.ipynb").write_text(_notebook([("code", setup), ("code", ["print(torch.randn(2))"])]), encoding="utf-8")
    dinov2 = [
        "import sys\n",
        "\n",
        "INSTALL = False  # Switch this to install dependencies\n",
        "if INSTALL:\n",
        "    !{sys.executable} -m pip install -e .\n",
        "else:\n",
        '    REPO_PATH = ".."\n',
        "    sys.path.append(REPO_PATH)",
    ]
    uses = ["from pkg.hub import build\n", "model = build()"]
    (tmp_path / "dinov2.ipynb").write_text(_notebook([("code", dinov2), ("code", uses)]), encoding="utf-8")
    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--select", "TDL001", ".", cwd=tmp_path)
    assert code == 0, out + err
    plain = ["".join(cell["source"]) for cell in json.loads((tmp_path / "plain.ipynb").read_text(encoding="utf-8"))["cells"]]
    assert plain[0] == 'import sys\n\nimport torch\n\ntorch.manual_seed(0)\n\nprint(sys.version)\nsys.path.append("..")'
    cells = ["".join(cell["source"]) for cell in json.loads((tmp_path / "dinov2.ipynb").read_text(encoding="utf-8"))["cells"]]
    assert cells[0] == "".join(dinov2)
    assert (
        cells[1]
        == "from pkg.hub import build\nfrom pkg.utils import fix_random_seeds\n\nfix_random_seeds(seed=0)\nmodel = build()"
    )


def test_magics_are_tolerated(tmp_path: Path) -> None:
    source = [
        "%load_ext autoreload\n",
        "%autoreload 2\n",
        "!pip install -q timm \\\n",
        "    torchvision\n",
        "x = !ls\n",
        "a, b = %sx echo 1 2\n",
        "torch?\n",
        "%timeit?\n",
        "if x:\n",
        "    %time y = 1\n",
        "value = (3\n",
        "%2)\n",
        "import torch\n",
        HAZARD,
    ]
    (tmp_path / "magics.ipynb").write_text(_notebook([("code", source)]), encoding="utf-8")
    [diagnostic] = lint_json("--select", "TDL301", "magics.ipynb", cwd=tmp_path)  # TDL000 is always reported
    assert (diagnostic["code"], diagnostic["cell"], diagnostic["line"]) == ("TDL301", 1, 14)


def test_broken_notebooks_are_reported_not_crashed_on(tmp_path: Path) -> None:
    (tmp_path / "invalid.ipynb").write_text('{"cells": [\n  {"cell_type": "code",,}\n]}\n', encoding="utf-8")
    (tmp_path / "no_cells.ipynb").write_text('{"metadata": {}, "nbformat": 4}\n', encoding="utf-8")
    (tmp_path / "old.ipynb").write_text('{"worksheets": [{"cells": []}], "nbformat": 3}\n', encoding="utf-8")
    (tmp_path / "list.ipynb").write_text("[1, 2]\n", encoding="utf-8")
    (tmp_path / "bad_source.ipynb").write_text('{"cells": [{"cell_type": "code", "source": 3}]}\n', encoding="utf-8")
    (tmp_path / "empty.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n', encoding="utf-8")
    (tmp_path / "r.ipynb").write_text(
        _notebook([("code", [HAZARD])], kernelspec={"language": "R", "name": "ir"}), encoding="utf-8"
    )
    (tmp_path / "syntax.ipynb").write_text(_notebook([("code", ["import torch"]), ("code", ["def (:"])]), encoding="utf-8")
    code, out, err = run_cli("--output-format", "json", "--no-cache", "--select", "TDL301", ".", cwd=tmp_path)
    assert code == 1 and "Traceback" not in err, err
    found = {d["path"]: d for d in json.loads(out)}
    assert len(found) == len(json.loads(out))
    assert set(found) == {"invalid.ipynb", "no_cells.ipynb", "old.ipynb", "list.ipynb", "bad_source.ipynb", "syntax.ipynb"}
    assert all(d["code"] == "TDL000" for d in found.values())
    assert (found["invalid.ipynb"]["line"], found["invalid.ipynb"]["column"]) == (2, 24)
    assert "invalid JSON" in found["invalid.ipynb"]["message"]
    assert "no `cells`" in found["no_cells.ipynb"]["message"]
    assert "nbformat 3" in found["old.ipynb"]["message"]
    assert (found["syntax.ipynb"]["cell"], found["syntax.ipynb"]["line"]) == (2, 1)
    # --fix leaves every one of them as it was.
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    run_cli("--fix", "--no-cache", "--select", "TDL301", ".", cwd=tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_notebook_summary_marks_an_entry_point(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    options = make_options(settings_from({}, tmp_path, select=["TDL301"]))
    result = lint_notebook(SourceText(path.read_text(encoding="utf-8")), path, "training.ipynb", options)
    assert result.summary.is_notebook and result.summary.module_name is None
    assert result.source.raw.text == path.read_text(encoding="utf-8")
    assert [(d.cell, d.line) for d in result.diagnostics] == [(3, 4), (8, 1)]


# -- the API the fixer uses --------------------------------------------------------------------


def test_joined_code_and_positions() -> None:
    notebook = load_notebook((DATA / "training.ipynb").read_text(encoding="utf-8"))
    assert [cell.number for cell in notebook.cells] == [2, 3, 5, 6, 7, 8]
    assert len(notebook.code) == len(notebook.display_code)
    assert notebook.code.splitlines()[0] == "0#atplotlib inline"  # same length, valid Python
    assert notebook.display_code.splitlines()[0] == "%matplotlib inline"
    offset = notebook.code.index(HAZARD)
    assert notebook.cell_position(offset) == (3, 4, 0)
    assert notebook.cell_position(offset + 6) == (3, 4, 6)
    assert notebook.cell_position(0) == (2, 1, 0)
    assert notebook.cell_position(len(notebook.code) - 1) == (8, 1, len(HAZARD))


def test_apply_edits_keeps_magics_and_refuses_what_would_break_them() -> None:
    text = (DATA / "training.ipynb").read_text(encoding="utf-8")
    notebook = load_notebook(text)
    third = notebook.cells[1]
    magic_line = third.start + third.code.index("files = 0#s data") + len("files = ")  # the `!ls data` part
    with pytest.raises(ValueError):
        notebook.apply_edits([Edit(magic_line, magic_line + 3, "x")])
    bash = notebook.cells[2]
    with pytest.raises(ValueError):  # inside a %%bash cell
        notebook.apply_edits([Edit(bash.start + 8, bash.start + 8, "x = 1\n")])
    with pytest.raises(ValueError):  # across two cells
        notebook.apply_edits([Edit(third.end - 2, third.end + 2, "")])
    # An insertion on the boundary before the %%bash cell goes to the end of cell 3.
    rendered = json.loads(notebook.apply_edits([Edit(bash.start, bash.start, "done = True\n")]))
    assert rendered["cells"][2]["source"][-2:] == ["    !echo {name}\n", "done = True"]
    assert notebook.apply_edits([]) == text
    assert notebook.render(notebook.display_code) == text
    value = notebook.code.index(HAZARD) + len(HAZARD) - len("True")
    edited = notebook.display_code[:value] + "False" + notebook.display_code[value + 4 :]
    assert notebook.render(edited) == notebook.apply_edits([Edit(value, value + 4, "False")]) != text


def test_layouts_are_kept() -> None:
    compact = json.dumps({"cells": [{"cell_type": "code", "source": [], "metadata": {}, "outputs": []}], "nbformat": 4})
    notebook = load_notebook(compact)
    assert notebook.apply_edits([Edit(0, 0, "import torch\nx = 1\n")]) == compact.replace(
        '"source": []', '"source": ["import torch\\n", "x = 1\\n"]'
    )
    escaped = json.dumps({"cells": [{"cell_type": "code", "source": ["s = 'é'\n", "x = 1"]}]}, indent=2)
    notebook = load_notebook(escaped)
    result = notebook.apply_edits([Edit(notebook.code.index("1"), notebook.code.index("1") + 1, "'ü'")])
    assert result.isascii() and json.loads(result)["cells"][0]["source"] == ["s = 'é'\n", "x = 'ü'"]
    assert "\"s = '\\u00e9'\\n\"" in result  # the untouched line keeps its original spelling
    nested = _notebook([("code", [])], indent=4)
    notebook = load_notebook(nested)
    result = notebook.apply_edits([Edit(0, 0, "a = 1\nb = 2\n")])
    assert '"source": [\n                "a = 1\\n",\n                "b = 2\\n"\n            ]' in result


def test_load_errors() -> None:
    with pytest.raises(NotebookError) as error:
        load_notebook('{"cells": [}')
    assert (error.value.line, error.value.column) == (1, 12)
    with pytest.raises(NotebookError):
        load_notebook('{"cells": {}}')
    with pytest.raises(NotebookError):
        load_notebook('{"cells": [1]}')
    with pytest.raises(NotebookError):
        load_notebook('{"cells": [{"cell_type": "code"}]}')
    assert load_notebook('{"cells": [{"cell_type": "markdown"}]}').code == ""


# -- round trips on generated notebooks ------------------------------------------------------------

_LINES = st.sampled_from(
    [
        "import torch",
        "x = 1",
        "%matplotlib inline",
        "!ls -la",
        "y = !pwd",
        "obj?",
        "s = '''",
        "%not a magic inside a string'''",
        "    z = (1,",
        "%2)",
        "",
        "# 注释 😀",
        "if x:",
        "    !echo hi",
        "%%time",
        "%%bash",
    ]
)
_CELLS = st.lists(
    st.tuples(st.sampled_from(["code", "code", "markdown"]), st.lists(_LINES, max_size=6), st.booleans()), max_size=6
)


def _source(lines: List[str], final_newline: bool) -> List[str]:
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    return [line for line in text.splitlines(keepends=True)]


@settings(max_examples=150, deadline=None)
@given(_CELLS, st.sampled_from([1, 2, None]))
def test_round_trip_and_cell_edits(cells, indent) -> None:
    text = _notebook([(kind, _source(lines, newline)) for kind, lines, newline in cells], indent=indent or 1)
    if indent is None:
        text = json.dumps(json.loads(text))
    notebook = load_notebook(text)
    assert len(notebook.code) == len(notebook.display_code)
    assert notebook.code.count("\n") == notebook.display_code.count("\n")
    assert notebook.render(notebook.display_code) == text
    original = json.loads(text)
    for cell in notebook.cells:
        assert notebook.cell_position(cell.start)[:2] == (cell.number, 1)
        if not cell.python:
            continue
        # Append a line to the cell: only that cell's source changes, and it gains the line.
        result = json.loads(notebook.apply_edits([Edit(cell.end, cell.end, "added = 1\n")]))
        expected_source = cell.display + "added = 1\n"
        if cell.added_newline:
            expected_source = expected_source[:-1]
        new_source = result["cells"][cell.number - 1]["source"]
        assert new_source == expected_source.splitlines(keepends=True)
        result["cells"][cell.number - 1]["source"] = original["cells"][cell.number - 1]["source"]
        assert result == original


def test_report_rows_and_evidence_of_a_notebook_keep_their_cells(tmp_path: Path) -> None:
    """The report places a notebook's row and evidence as `check` places its diagnostics: by
    cell and cell line, never by line of the joined cells."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    cells = [
        ("markdown", "# Training"),
        ("code", "import torch\nfrom torch.utils.data import DataLoader"),
        ("code", "torch.manual_seed(0)\nloader = DataLoader(list(range(8)), batch_size=2, shuffle=True)"),
    ]
    (tmp_path / "train.ipynb").write_text(_notebook(cells), encoding="utf-8")
    [finding] = [d for d in lint_json("--select", "TDL101", "train.ipynb", cwd=tmp_path)]
    assert (finding["cell"], finding["line"]) == (3, 2)
    code, out, err = run_cli("report", "--output-format", "json", "train.ipynb", cwd=tmp_path)
    assert code in (0, 1), err
    [entry] = json.loads(out)["entry_points"]
    assert (entry["path"], entry.get("cell"), entry["line"]) == ("train.ipynb", 2, 1)
    loaders = entry["checks"]["dataloaders"]
    assert loaders["status"] == "missing"
    assert [(e["path"], e.get("cell"), e["line"]) for e in loaders["evidence"]] == [("train.ipynb", 3, 2)]
    seeded = entry["checks"]["torch-seed"]
    assert seeded["status"] == "ok" and (seeded["evidence"][0].get("cell"), seeded["evidence"][0]["line"]) == (3, 1)
