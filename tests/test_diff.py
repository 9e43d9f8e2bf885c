"""`--diff`: the diff on stdout, as GNU `diff -u` prints it, the summary on stderr; also for stdin."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHUFFLING = (
    "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds, batch_size=8, shuffle=True)\n# the end\n"
)


def _cli(project: Path, *args: str, stdin: str = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchdet_lint", "--no-cache", *args], cwd=project, input=stdin, capture_output=True, text=True
    )


def _hunks(diff: str) -> str:
    """From the first `@@` on: `diff -u` and we name the files differently in the headers."""
    return diff[diff.index("@@") :]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.torchdet-lint]\n", encoding="utf-8")
    return root


@pytest.mark.skipif(shutil.which("diff") is None, reason="needs GNU diff")
@pytest.mark.parametrize("ending", ["\n", ""], ids=["final newline", "no final newline"])
def test_the_diff_is_what_diff_u_prints_and_the_summary_goes_to_stderr(project: Path, ending: str) -> None:
    source = SHUFFLING.rstrip("\n") + ending
    (project / "train.py").write_text(source, encoding="utf-8")
    completed = _cli(project, "--diff", "train.py")
    assert completed.returncode == 1
    assert completed.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@")
    assert completed.stderr == "Would fix 1 error.\n"
    assert (project / "train.py").read_text(encoding="utf-8") == source  # --diff writes nothing
    fixed = project.parent / "fixed"
    fixed.mkdir()
    shutil.copy(project / "pyproject.toml", fixed)
    (fixed / "train.py").write_text(source, encoding="utf-8")
    assert _cli(fixed, "--fix", "train.py").returncode == 0
    expected = subprocess.run(
        ["diff", "-u", str(project / "train.py"), str(fixed / "train.py")], capture_output=True, text=True
    ).stdout
    assert _hunks(completed.stdout) == _hunks(expected)
    if not ending:
        assert completed.stdout.endswith("\\ No newline at end of file\n")


def test_diff_of_standard_input(project: Path) -> None:
    completed = _cli(project, "--diff", "--stdin-filename", "train.py", "-", stdin=SHUFFLING)
    assert completed.returncode == 1
    assert completed.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@")
    assert "+    generator=torch.Generator().manual_seed(torch.initial_seed()),\n" in completed.stdout
    assert completed.stderr == "Would fix 1 error.\n"
    clean = _cli(project, "--diff", "--stdin-filename", "train.py", "-", stdin="import torch\n")
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")
