"""`--fix` never loses a byte: encodings and line endings kept, atomic under SIGKILL,
no writes through symlinks out of the tree, and the analysed code is never imported or run."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import run_cli

HAZARD = "import torch\n\ntorch.backends.cudnn.benchmark = True  # keep me\n"

VARIANTS = {
    "bom_crlf.py": b"\xef\xbb\xbfimport torch\r\n\r\ntorch.backends.cudnn.benchmark = True  # keep me\r\n",
    "cr_only.py": b"import torch\r\rtorch.backends.cudnn.benchmark = True  # keep me\r",
    "latin1.py": (
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\ntorch.backends.cudnn.benchmark = True  # caf\xe9\n"
    ),
    "tabs.py": b"import torch\nif True:\n\ttorch.backends.cudnn.benchmark = True\t# tab\n\tx = 1\n",
    "no_final_newline.py": b"import torch\ntorch.backends.cudnn.benchmark = True",
    "mixed.py": b"import torch\r\nx = 1\ntorch.backends.cudnn.benchmark = True\r\n",
}


def test_fix_keeps_every_byte_outside_the_fix(tmp_path: Path) -> None:
    for name, data in VARIANTS.items():
        (tmp_path / name).write_bytes(data)
    code, out, err = run_cli(".", "--fix", "--select", "TDL301", "--no-cache", cwd=tmp_path)
    assert code == 0, out + err
    for name, data in VARIANTS.items():
        expected = data.replace(b"benchmark = True", b"benchmark = False")
        assert (tmp_path / name).read_bytes() == expected, name


def test_sigkill_leaves_each_file_as_it_was_or_fully_fixed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    original = (HAZARD + "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = True\n").encode()
    fixed = original.replace(b"benchmark = True", b"benchmark = False")
    for index in range(300):
        (tree / f"m{index:03}.py").write_bytes(original)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchdet_lint", ".", "--fix", "--no-cache", "--jobs", "1", "--select", "TDL301,TDL304"],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if any(path.read_bytes() != original for path in tree.glob("m*.py")):
                break  # writing has started: kill it in the middle
            time.sleep(0.005)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    states = {path.name: path.read_bytes() for path in tree.glob("m*.py")}
    assert len(states) == 300
    assert all(data in (original, fixed) for data in states.values())
    assert any(data == fixed for data in states.values()), "the run was killed before it wrote anything"


def test_no_write_through_a_symlink_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.py").write_text(HAZARD)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside / "shared.py")
    (tree / "own.py").write_text(HAZARD)
    (tree / "alias.py").symlink_to(tree / "own.py")  # inside the tree: fixed through the link
    code, _, err = run_cli(".", "--fix", "--select", "TDL301", "--no-cache", cwd=tree)
    assert (outside / "shared.py").read_text() == HAZARD
    assert "outside the linted tree" in err and code == 2
    assert "benchmark = False" in (tree / "own.py").read_text()
    assert (tree / "alias.py").is_symlink() and (tree / "link.py").is_symlink()
    # naming the link explicitly does not open the way either
    code, _, err = run_cli("link.py", "--fix", "--select", "TDL301", "--no-cache", cwd=tree)
    assert (outside / "shared.py").read_text() == HAZARD and "outside the linted tree" in err


def test_analysed_code_is_never_imported_or_run(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(payload)
    (tmp_path / "conftest.py").write_text(payload)
    (tmp_path / "setup.py").write_text(payload)
    (tmp_path / "pkg" / "helpers.py").write_text(payload + "import torch\ndef seed():\n    torch.manual_seed(0)\n")
    (tmp_path / "train.py").write_text(
        payload + "import torch\nimport pkg.helpers\nfrom pkg import helpers\n\nif __name__ == '__main__':\n"
        "    helpers.seed()\n    torch.nn.Linear(2, 2)\n    torch.backends.cudnn.benchmark = True\n"
    )
    (tmp_path / "nb.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, '
        f'"source": [{payload.splitlines()[0]!r}, "\\n", "import torch\\n", "torch.rand(3)\\n"]}}], '
        '"metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}'.replace("'", '"')
    )
    for args in (["."], [".", "--fix", "--unsafe-fixes"], ["--select", "ALL", "--statistics", "."]):
        run_cli(*args, "--no-cache", cwd=tmp_path)
        assert not marker.exists(), f"analysed code ran during {args}"
    assert "benchmark = False" in (tmp_path / "train.py").read_text()
