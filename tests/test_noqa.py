"""`noqa` as a user meets it on the command line: file-level directives with codes (project
findings included), TDL900 through standard input and in notebooks, and `--fix` removing
what suppresses nothing. The shapes themselves are fixtures (fixtures/TDL900)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cli_in_process

UNSEEDED = "import torch\n\nif __name__ == '__main__':\n    print(torch.rand(2))\n"


def _concise(*args: str, cwd: Path, input: bytes = None):
    return cli_in_process(*args, "--output-format", "concise", "--no-cache", cwd=cwd, input=input)


def test_file_level_codes_suppress_file_and_project_findings(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        UNSEEDED + "import torch.backends.cudnn as cudnn\ncudnn.benchmark = True\n", encoding="utf-8"
    )
    code, out, _ = _concise(".", cwd=tmp_path)
    assert code == 1 and {line.split()[1] for line in out.splitlines() if ": TDL" in line} == {"TDL001", "TDL301"}
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    (tmp_path / "train.py").write_text("# torchdet-lint: noqa: TDL001\n" + text, encoding="utf-8")
    code, out, _ = _concise(".", cwd=tmp_path)
    assert code == 1 and [line.split()[1] for line in out.splitlines() if ": TDL" in line] == ["TDL301"]
    (tmp_path / "train.py").write_text("# torchdet-lint: noqa: TDL001, TDL301\n" + text, encoding="utf-8")
    assert _concise(".", cwd=tmp_path)[:2] == (0, "All checks passed!\n")
    # the directive must stand alone on its line, as Ruff's
    (tmp_path / "train.py").write_text(
        text.replace("import torch\n", "import torch  # torchdet-lint: noqa: TDL001\n", 1), encoding="utf-8"
    )
    assert "TDL001" in _concise(".", cwd=tmp_path)[1]


def test_bare_file_level_directive_still_skips_the_file(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("# torchdet-lint: noqa\n" + UNSEEDED + "x = 1  # noqa: TDL999\n", encoding="utf-8")
    assert _concise(".", cwd=tmp_path)[:2] == (0, "All checks passed!\n")


def test_unused_noqa_through_standard_input(tmp_path: Path) -> None:
    source = b"import torch\n\ntorch.backends.cudnn.benchmark = False  # noqa: TDL301\n"
    code, out, _ = _concise("-", "--stdin-filename", "train.py", cwd=tmp_path, input=source)
    assert code == 1 and out.splitlines()[0] == "train.py:3:41: TDL900 [*] unused `noqa` directive (unused: `TDL301`)"
    code, out, _ = cli_in_process("-", "--stdin-filename", "train.py", "--fix", "--no-cache", cwd=tmp_path, input=source)
    assert code == 0 and out == "import torch\n\ntorch.backends.cudnn.benchmark = False\n"
    # deselected: the directive is not judged
    code, out, _ = _concise("-", "--stdin-filename", "train.py", "--ignore", "TDL900", cwd=tmp_path, input=source)
    assert code == 0


def test_unused_noqa_in_a_notebook_is_placed_and_fixed_in_its_cell(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import torch\n"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["text"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["x = torch.ones(2)\n", "torch.backends.cudnn.benchmark = False  # noqa: TDL301, E501"],
        },
    ]
    notebook = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "explore.ipynb"
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    code, out, _ = _concise(".", cwd=tmp_path)
    assert code == 1 and out.splitlines()[0] == (
        "explore.ipynb:cell 3:2:41: TDL900 [*] unused `noqa` directive (unused: `TDL301`)"
    )
    assert cli_in_process(".", "--fix", "--no-cache", cwd=tmp_path)[0] == 0
    fixed = json.loads(path.read_text(encoding="utf-8"))
    assert fixed["cells"][2]["source"][1] == "torch.backends.cudnn.benchmark = False  # noqa: E501"
