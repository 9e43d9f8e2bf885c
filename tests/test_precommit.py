"""The pre-commit hooks through the real `pre-commit`: a temporary git repository
uses this checkout's `.pre-commit-hooks.yaml`; pre-commit builds the hook's
own environment (from PyPI wheels) exactly as it would for a user.

The hook repository is a snapshot of the working tree committed into a
temporary git repository, so the test exercises the code under test whether
or not it is committed (pre-commit installs hooks from a commit).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from conftest import ROOT

HOOK_MANIFEST = ROOT / ".pre-commit-hooks.yaml"
# What building and installing the package needs (pyproject.toml's build config).
PACKAGE_PARTS = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "torchdet_lint", "rules")
HAZARD = "torch.backends.cudnn.benchmark = True"


def _git(*args: str, cwd: Path, env: Dict[str, str]) -> str:
    completed = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip()


def _pre_commit(*args: str, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def _snapshot_hook_repo(destination: Path, env: Dict[str, str]) -> str:
    """Commit the package as it is on disk into a fresh repository: its revision."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in PACKAGE_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=ignore)
        else:
            shutil.copy2(source, destination / part)
    _git("init", "-q", cwd=destination, env=env)
    _git("add", "-A", cwd=destination, env=env)
    _git("commit", "-q", "-m", "snapshot", cwd=destination, env=env)
    return _git("rev-parse", "HEAD", cwd=destination, env=env)


@pytest.fixture
def git_env(tmp_path: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        GIT_AUTHOR_NAME="test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        NO_COLOR="1",
    )
    (tmp_path / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    return env


def test_manifest_declares_both_hooks() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOK_MANIFEST.read_text(encoding="utf-8"))}
    assert set(hooks) == {"torchdet-lint", "torchdet-lint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is True
        assert "--force-exclude" in hook["entry"].split()
        assert "torch" not in hook.get("additional_dependencies", [])
    assert "--fix" in hooks["torchdet-lint-fix"]["entry"].split()
    assert "--fix" not in hooks["torchdet-lint"]["entry"].split()


def test_hooks_in_a_real_repository(tmp_path: Path, git_env: Dict[str, str]) -> None:
    hook_repo = tmp_path / "hook-repo"
    hook_repo.mkdir()
    revision = _snapshot_hook_repo(hook_repo, git_env)

    project = tmp_path / "project"
    project.mkdir()
    _git("init", "-q", cwd=project, env=git_env)
    config = {
        "repos": [
            {
                "repo": str(hook_repo),
                "rev": revision,
                "hooks": [{"id": "torchdet-lint"}, {"id": "torchdet-lint-fix", "stages": ["manual"]}],
            }
        ]
    }
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # Excluded by the config: pre-commit names it explicitly, --force-exclude keeps it out.
    (project / "pyproject.toml").write_text('[tool.torchdet-lint]\nextend-exclude = ["vendored"]\n', encoding="utf-8")
    (project / "vendored").mkdir()
    (project / "vendored" / "third_party.py").write_text(f"import torch\n{HAZARD}\n", encoding="utf-8")
    train = project / "train.py"
    train.write_text(f"import torch\n\n{HAZARD}\nmodel = torch.nn.Linear(2, 2)\n", encoding="utf-8")
    (project / "clean.py").write_text("import torch\ntorch.backends.cudnn.benchmark = False\n", encoding="utf-8")
    _git("add", "-A", cwd=project, env=git_env)

    installed = _pre_commit("install", cwd=project, env=git_env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    # The commit is refused, with the diagnostic in the hook's output.
    commit = subprocess.run(
        ["git", "commit", "-m", "add training"], cwd=project, env=git_env, capture_output=True, text=True, timeout=900
    )
    output = commit.stdout + commit.stderr
    assert commit.returncode != 0, output
    assert "train.py:3:1: TDL301" in output, output
    assert "third_party.py" not in output, output
    assert "clean.py:" not in output, output

    # The fix hook rewrites the file (and fails, as pre-commit does for a changed file) ...
    fixed = _pre_commit("run", "--hook-stage", "manual", "torchdet-lint-fix", "--all-files", cwd=project, env=git_env)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "files were modified by this hook" in fixed.stdout
    assert train.read_text(encoding="utf-8") == "import torch\n\ntorch.backends.cudnn.benchmark = False\nmodel = torch.nn.Linear(2, 2)\n"
    assert (project / "vendored" / "third_party.py").read_text(encoding="utf-8").endswith("= True\n")

    # ... after which the lint hook passes and the commit goes through.
    _git("add", "-A", cwd=project, env=git_env)
    again = _pre_commit("run", "torchdet-lint", "--all-files", cwd=project, env=git_env)
    assert again.returncode == 0, again.stdout + again.stderr
    commit = subprocess.run(
        ["git", "commit", "-m", "add training"], cwd=project, env=git_env, capture_output=True, text=True, timeout=900
    )
    assert commit.returncode == 0, commit.stdout + commit.stderr

    # The hook's environment has torchdet-lint and not torch.
    environments = _hook_pythons(Path(git_env["PRE_COMMIT_HOME"]))
    assert environments, "pre-commit built no Python environment"
    for python in environments:
        probe = subprocess.run(
            [str(python), "-c", "import importlib.util as u; print(u.find_spec('torchdet_lint') is not None, u.find_spec('torch') is not None)"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert probe.stdout.split() == ["True", "False"], probe.stdout + probe.stderr


def _hook_pythons(home: Path) -> List[Path]:
    return sorted(home.glob("repo*/py_env-*/bin/python"))
