"""The pre-commit hooks through the real `pre-commit`: a temporary git repository
uses this checkout's `.pre-commit-hooks.yaml`; pre-commit builds the hook's
own environment (from PyPI wheels) exactly as it would for a user.

The hook repository is a snapshot of the working tree committed into a
temporary git repository, so the test exercises the code under test whether
or not it is committed (pre-commit installs hooks from a commit).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

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


@pytest.fixture(scope="module")
def git_env(tmp_path_factory) -> Dict[str, str]:
    """git and pre-commit isolated from the user's set-up; one pre-commit home for the
    module, so that the hook environment is built once."""
    home = tmp_path_factory.mktemp("pre-commit")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        GIT_AUTHOR_NAME="test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_HOME=str(home / "pre-commit-home"),
        NO_COLOR="1",
    )
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    return env


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory, git_env: Dict[str, str]) -> Tuple[Path, str]:
    """This checkout's hooks, as a repository pre-commit can install from: (path, revision)."""
    repository = tmp_path_factory.mktemp("hook-repo")
    return repository, _snapshot_hook_repo(repository, git_env)


def _project_using_hooks(project: Path, hook_repo: Tuple[Path, str], git_env: Dict[str, str], hooks) -> None:
    project.mkdir()
    _git("init", "-q", cwd=project, env=git_env)
    config = {"repos": [{"repo": str(hook_repo[0]), "rev": hook_repo[1], "hooks": hooks}]}
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


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


def test_hooks_in_a_real_repository(tmp_path: Path, git_env: Dict[str, str], hook_repo) -> None:
    project = tmp_path / "project"
    _project_using_hooks(
        project, hook_repo, git_env, [{"id": "torchdet-lint"}, {"id": "torchdet-lint-fix", "stages": ["manual"]}]
    )
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
    assert (
        train.read_text(encoding="utf-8")
        == "import torch\n\ntorch.backends.cudnn.benchmark = False\nmodel = torch.nn.Linear(2, 2)\n"
    )
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
            [
                str(python),
                "-c",
                "import importlib.util as u; print(u.find_spec('torchdet_lint') is not None, u.find_spec('torch') is not None)",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert probe.stdout.split() == ["True", "False"], probe.stdout + probe.stderr


def test_a_staged_entry_point_sees_the_unstaged_seed_helper(tmp_path: Path, git_env: Dict[str, str], hook_repo) -> None:
    """pre-commit passes only the staged files: `train.py`, seeded through the committed
    `utils/seed.py`, passes; the unseeded `train2.py` fails the commit with TDL001."""
    from test_partial_runs import TRAIN, UNSEEDED, helper_seeded_project

    project = tmp_path / "project"
    _project_using_hooks(project, hook_repo, git_env, [{"id": "torchdet-lint"}])
    shutil.rmtree(project / ".git")
    helper_seeded_project(project)
    shutil.rmtree(project / ".git")
    _git("init", "-q", cwd=project, env=git_env)
    (project / "train.py").unlink()
    (project / "train2.py").unlink()
    _git("add", ".pre-commit-config.yaml", "utils/seed.py", cwd=project, env=git_env)
    _git("commit", "-q", "-m", "the seed helper", "--no-verify", cwd=project, env=git_env)

    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    (project / "train2.py").write_text(UNSEEDED, encoding="utf-8")  # on disk, not staged
    _git("add", "train.py", cwd=project, env=git_env)
    staged_only = _pre_commit("run", cwd=project, env=git_env)
    assert staged_only.returncode == 0, staged_only.stdout + staged_only.stderr

    _git("add", "train2.py", cwd=project, env=git_env)
    both = _pre_commit("run", cwd=project, env=git_env)
    output = both.stdout + both.stderr
    assert both.returncode == 1, output
    main_line = UNSEEDED.splitlines().index('if __name__ == "__main__":') + 1
    assert f"train2.py:{main_line}:1: TDL001" in output and "train.py:" not in output.replace("train2.py:", ""), output


def _hook_pythons(home: Path) -> List[Path]:
    return sorted(home.glob("repo*/py_env-*/bin/python"))


# -- the snippets of the README and docs/integrations.md, as written -------------------------------


def _snippets(marker: str) -> List[Tuple[str, str]]:
    """(file, block) for each block that follows `<!-- pre-commit: marker -->` in the README and the docs."""
    found = []
    for path in (ROOT / "README.md", ROOT / "docs" / "integrations.md"):
        text = path.read_text(encoding="utf-8")
        for block in re.findall(rf"<!-- pre-commit: {marker} -->\n```\w+\n(.*?)```", text, re.S):
            found.append((path.name, block))
    return found


def test_the_docs_show_both_forms_and_the_torch_version() -> None:
    assert {name for name, _ in _snippets("remote")} == {"README.md", "integrations.md"}
    assert {name for name, _ in _snippets("local")} == {"README.md", "integrations.md"}
    for _, block in _snippets("config"):
        assert "[tool.torchdet-lint]" in block and re.search(r'^torch-version = "\d+\.\d+"$', block, re.M), block
    for _, block in _snippets("local"):
        (hook,) = yaml.safe_load(block)["repos"][0]["hooks"]
        manifest = {entry["id"]: entry for entry in yaml.safe_load(HOOK_MANIFEST.read_text(encoding="utf-8"))}
        assert hook["entry"] == manifest["torchdet-lint"]["entry"] and hook["types_or"] == manifest["torchdet-lint"]["types_or"]


def _run_in_project(project: Path, config_text: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    project.mkdir()
    _git("init", "-q", cwd=project, env=env)
    (project / ".pre-commit-config.yaml").write_text(config_text, encoding="utf-8")
    (project / "train.py").write_text(f"import torch\n\n{HAZARD}\n", encoding="utf-8")
    _git("add", "-A", cwd=project, env=env)
    return _pre_commit("run", "--all-files", cwd=project, env=env)


@pytest.mark.parametrize("source", [name for name, _ in _snippets("remote")])
def test_remote_snippet_with_the_documented_commands(tmp_path: Path, git_env: Dict[str, str], hook_repo, source: str) -> None:
    """`repo: URL` / `rev: COMMIT` filled in with the documented commands' answers: the URL of the
    repository, and `git ls-remote URL HEAD` for the commit."""
    block = dict(_snippets("remote"))[source]
    url = str(hook_repo[0])
    commit = _git("ls-remote", url, "HEAD", cwd=tmp_path, env=git_env).split()[0]
    assert commit == hook_repo[1]
    config_text = block.replace("repo: URL", f"repo: {url}").replace("rev: COMMIT", f"rev: {commit}")
    project = tmp_path / "project"
    run = _run_in_project(project, config_text, git_env)
    output = run.stdout + run.stderr
    assert run.returncode == 1 and "files were modified by this hook" in output, output
    assert (project / "train.py").read_text(encoding="utf-8") == "import torch\n\ntorch.backends.cudnn.benchmark = False\n"
    # The hook's environment has no torch: without torch-version the run says which it assumed ...
    assert "note: no `torch-version` configured and no torch installed here" in output, output
    # ... and with the documented configuration it does not.
    (project / "pyproject.toml").write_text(dict(_snippets("config"))[source], encoding="utf-8")
    (project / "train.py").write_text(f"import torch\n\n{HAZARD}\n", encoding="utf-8")
    _git("add", "-A", cwd=project, env=git_env)
    again = _pre_commit("run", "--all-files", cwd=project, env=git_env)
    assert again.returncode == 1 and "note:" not in again.stdout + again.stderr, again.stdout


@pytest.mark.parametrize("source", [name for name, _ in _snippets("local")])
def test_local_snippet_uses_the_installed_torchdet_lint(tmp_path: Path, git_env: Dict[str, str], source: str) -> None:
    env = dict(git_env, PATH=f"{Path(sys.executable).parent}{os.pathsep}{git_env.get('PATH', '')}")
    assert shutil.which("torchdet-lint", path=env["PATH"]), "torchdet-lint is not installed beside the tests' Python"
    run = _run_in_project(tmp_path / "project", dict(_snippets("local"))[source], env)
    output = run.stdout + run.stderr
    assert run.returncode == 1 and "train.py:3:1: TDL301" in output, output
