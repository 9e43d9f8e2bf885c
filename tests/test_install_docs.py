"""Every `pip install` the README, CONTRIBUTING.md, docs/ and editors/ tell a user to type works as written:
each one is found in those files, and each is run here in a fresh virtual environment
with the pip that `venv` ships (no upgrade first, as a new user has it), or checked
against the repository when it cannot run offline. The README's test command is what
`.ci/run` runs (tests/test_readme.py checks that they are the same).

URL stands for the repository's address: the tests give it a `file://localhost/...` one
(a host is needed: pip's requirement parser refuses a URL without one, as it would a
mistyped `https://`), which pip and git treat as they treat an `https://` one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import ROOT

from torchdet_lint import __version__

# Every install command the documentation holds, and how this file exercises it.
CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
README_FIRST = "pip install . && torchdet-lint examples/"
README_TESTS = 'pip install -e ".[test]" && pytest --full -n auto'
FROM_CLONE = "pip install ."
FROM_CLONE_SERVER = "pip install '.[server]'"
FROM_URL_SERVER = 'pip install "torchdet-lint[server] @ git+$URL"'
FROM_URL_SERVER_PLACEHOLDER = 'pip install "torchdet-lint[server] @ git+URL"'
FROM_URL = 'pip install "torchdet-lint @ git+URL"'
KNOWN = {
    README_FIRST: "run in a fresh venv (test_readme_set_up_and_every_install_command_in_a_fresh_venv)",
    README_TESTS: ".ci/run runs it in a fresh venv (test_readme.test_two_setup_commands)",
    FROM_CLONE: "run in a fresh venv (part of README_FIRST)",
    FROM_CLONE_SERVER: "run in a fresh venv",
    FROM_URL_SERVER: "run in a fresh venv, in a clone whose origin is the URL",
    FROM_URL_SERVER_PLACEHOLDER: "run in a fresh venv with URL replaced",
    FROM_URL: "run in a fresh venv with URL replaced",
    CPU_TORCH: "checked against the test extras' pin (test_cpu_torch_command_matches_the_pin): the index is offline here",
}

_ARG = r"""(?:'[^'\n]*'|"[^"\n]*"|-{1,2}[\w-]+|\.[^\s'"`;)]*|[\w.-]+==[\w.+]+|https?://[^\s'"`)]+)"""
_PIP_RE = re.compile(rf"(?<![%!\w])pip install(?: {_ARG})+(?: && [^\n`#]*[^\s`#])?")
# What a package built from the repository needs (pyproject.toml's build configuration), and the example.
PACKAGE_PARTS = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "torchdet_lint", "rules", "examples")


def _documentation_files() -> List[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for path in sorted((ROOT / "editors").rglob("*")):
        if path.is_file() and not {"node_modules", "test"} & set(path.parts) and path.suffix in (".md", ".js", ".rs", ".toml"):
            files.append(path)
    return files


def _normalised(text: str) -> str:
    """Source strings as a user reads them: escaped quotes and Rust's line continuations undone."""
    return re.sub(r"\\\n\s*", "", text).replace('\\"', '"')


def documented_commands() -> Dict[str, List[str]]:
    """Each `pip install ...` command in the documentation -> where it is."""
    found: Dict[str, List[str]] = {}
    for path in _documentation_files():
        for number, line in enumerate(_normalised(path.read_text(encoding="utf-8")).splitlines(), 1):
            if ".replace(" in line:  # code that edits a hint, not a hint
                continue
            for match in _PIP_RE.finditer(line):
                found.setdefault(match.group(0), []).append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_every_documented_pip_install_is_exercised() -> None:
    found = documented_commands()
    unknown = {command: where for command, where in found.items() if command not in KNOWN}
    assert not unknown, f"documented install commands no test runs or checks: {unknown}"
    # The hints the editors show, and the README's two set-up commands, are among them.
    assert {README_FIRST, README_TESTS, FROM_URL_SERVER, FROM_CLONE_SERVER, CPU_TORCH} <= set(found)
    for hint_file in ("editors/vscode/src/resolve.js", "editors/zed/src/lib.rs", "editors/vscode/README.md"):
        assert any(where.startswith(hint_file) for places in found.values() for where in places), hint_file
    # Nothing that cannot work: the package is not on PyPI, and there are no release tags.
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = _normalised(path.read_text(encoding="utf-8"))
        assert "pip install 'torchdet-lint[server]'" not in text and "pip install torchdet-lint" not in text, path
        assert "OWNER" not in text and "rev: v0." not in text, path


def test_cpu_torch_command_matches_the_pin() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pin = re.search(r'"(torch==[\d.]+)"', pyproject).group(1)
    assert CPU_TORCH == f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu"


def _shell(script: str, cwd: Path, env: Dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _git(*args: str, cwd: Path) -> str:
    completed = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of the repository as it is on disk, whose `origin` is a `file://` URL."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".torchdet_lint_cache")
    for part in PACKAGE_PARTS:
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(
            ROOT / part, source / part, **({"ignore": ignore} if (ROOT / part).is_dir() else {})
        )
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x"]):
        _git(*command, cwd=source)
    _git("clone", "-q", "--bare", str(source), str(base / "torchdet-lint.git"), cwd=base)
    _git("clone", "-q", "file://localhost" + str(base / "torchdet-lint.git"), str(base / "clone"), cwd=base)
    return base / "clone"


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory) -> Dict[str, str]:
    """A new virtual environment with the pip `venv` ships, first on PATH, and nothing of this
    checkout on the Python path."""
    environment = tmp_path_factory.mktemp("venv") / "env"
    venv.create(environment, with_pip=True)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=f"{environment / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(environment), NO_COLOR="1")
    return env


def _readme_block(first_line: str) -> str:
    """The README's shell block that starts with `first_line`'s command, as written."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        if first_line in block:
            return block
    raise AssertionError(f"no README block with {first_line!r}")


@pytest.mark.slow  # installs into fresh virtual environments
def test_readme_set_up_and_every_install_command_in_a_fresh_venv(clone: Path, fresh_env: Dict[str, str]) -> None:
    pip_version = _shell("pip --version", clone, fresh_env).stdout
    assert pip_version.startswith("pip ") and str(Path(fresh_env["VIRTUAL_ENV"])) in pip_version

    # The README's first set-up command, exactly as written, from the clone's root.
    first = _readme_block(README_FIRST).strip()
    assert first == README_FIRST
    completed = _shell(first, clone, fresh_env)
    assert completed.returncode == 1, completed.stdout + completed.stderr  # the example project has findings
    assert re.search(r"^Found \d+ errors\.$", completed.stdout, re.M), completed.stdout
    assert "examples/train.py:" in completed.stdout

    # With the language server, from the clone.
    # (the server needs nothing more: the extra is kept, empty, so this command still works)
    completed = _shell(FROM_CLONE_SERVER, clone, fresh_env)
    assert completed.returncode == 0, completed.stderr
    assert _shell("torchdet-lint server --help", clone, fresh_env).returncode == 0

    # From the repository's URL: the README's block, as written, in a clone (its origin is the URL).
    _shell("pip uninstall -q -y torchdet-lint", clone, fresh_env)
    block = _readme_block(FROM_URL_SERVER)
    assert FROM_URL_SERVER in block and "git remote get-url origin" in block
    completed = _shell(block, clone, fresh_env)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    freeze = _shell("pip freeze", clone, fresh_env).stdout
    assert re.search(r"^torchdet-lint @ git\+file://localhost/\S+torchdet-lint\.git@[0-9a-f]{40}$", freeze, re.M), freeze
    assert _shell("torchdet-lint version", clone, fresh_env).stdout == f"torchdet-lint {__version__}\n"

    # The docs' forms with URL written out (the linter alone, and with the server).
    url = _git("remote", "get-url", "origin", cwd=clone)
    for command in (FROM_URL, FROM_URL_SERVER_PLACEHOLDER):
        _shell("pip uninstall -q -y torchdet-lint", clone, fresh_env)
        completed = _shell(command.replace("git+URL", f"git+{url}"), clone.parent, fresh_env)
        assert completed.returncode == 0, command + "\n" + completed.stderr
        assert _shell("torchdet-lint version", clone.parent, fresh_env).stdout == f"torchdet-lint {__version__}\n"

    # And the linter alone from the clone, with no torch brought in.
    _shell("pip uninstall -q -y torchdet-lint", clone, fresh_env)
    assert _shell(FROM_CLONE, clone, fresh_env).returncode == 0
    assert "torch==" not in _shell("pip freeze", clone, fresh_env).stdout
