"""File discovery: .gitignore, default excludes, explicit paths, --force-exclude."""

from __future__ import annotations

from pathlib import Path

from conftest import cli_in_process as run_cli  # in process: many short runs on small projects
from conftest import lint_json

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"


def _tree(root: Path) -> None:
    for name in (
        "src/train.py",
        "src/generated/big.py",
        "venv/lib/x.py",
        ".venv/y.py",
        "build/z.py",
        "node_modules/n.py",
        "src/__pycache__/c.py",
        "notes.txt",
        "script",
    ):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HAZARD, encoding="utf-8")
    (root / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (root / ".git").mkdir()


def test_gitignore_and_default_excludes(tmp_path: Path) -> None:
    _tree(tmp_path)
    paths = sorted({d["path"] for d in lint_json(".", cwd=tmp_path)})
    assert paths == ["src/train.py"]


def test_explicit_paths_are_always_linted(tmp_path: Path) -> None:
    _tree(tmp_path)
    paths = {d["path"] for d in lint_json("src/generated/big.py", "build/z.py", "script", cwd=tmp_path)}
    assert paths == {"src/generated/big.py", "build/z.py", "script"}


def test_force_exclude_applies_excludes_to_explicit_paths(tmp_path: Path) -> None:
    _tree(tmp_path)
    paths = {d["path"] for d in lint_json("--force-exclude", "src/generated/big.py", "build/z.py", "src/train.py", cwd=tmp_path)}
    assert paths == {"src/train.py"}


def test_config_exclude_and_extend_exclude(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "src/legacy.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nextend-exclude = ["src/legacy.py"]\n', encoding="utf-8")
    paths = sorted({d["path"] for d in lint_json(".", cwd=tmp_path)})
    assert paths == ["src/train.py"]


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("nothere.py", cwd=tmp_path)
    assert code == 2 and "nothere.py" in err and len(err.strip().splitlines()) == 1
