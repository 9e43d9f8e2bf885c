"""The VS Code extension (editors/vscode): its JavaScript tests pass under node's
test runner, and `vsce` packages it into the `.vsix` a user installs: one
script bundled by esbuild, with the manifest and the documents.

Both run in a copy of the extension with its locked dependencies installed by
`npm ci` (npm's cache under ~/.cache keeps later runs fast). No VS Code build is
downloaded: the extension's tests drive it through a fake `vscode` module and
the real `torchdet-lint server` (see editors/vscode/test/).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

EXTENSION = ROOT / "editors" / "vscode"
NPM = shutil.which("npm")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NPM is None or NODE is None, reason="node and npm are needed to test and package the VS Code extension"
)


def _npm_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchdet-lint-tests" / "npm"


def _run(*args: str, cwd: Path, env=None, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def extension(tmp_path_factory) -> Path:
    """A copy of the extension with its locked dependencies installed."""
    copy = tmp_path_factory.mktemp("vscode") / "extension"
    # No local build either: packaging must make the bundle itself.
    shutil.copytree(EXTENSION, copy, ignore=shutil.ignore_patterns("node_modules", "dist", "*.vsix"))
    installed = _run(NPM, "ci", "--cache", str(_npm_cache()), "--prefer-offline", "--no-audit", "--no-fund", cwd=copy)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return copy


def test_extension_tests_pass(extension: Path) -> None:
    # The server test starts this interpreter's torchdet-lint (PYTHONPATH and all).
    env = dict(os.environ, TORCHDET_LINT_PYTHON=sys.executable)
    completed = _run(NPM, "test", cwd=extension, env=env, timeout=300)
    report = completed.stdout + completed.stderr
    assert completed.returncode == 0, report
    counts = {key: int(value) for key, value in re.findall(r"^# (pass|fail|skipped) (\d+)$", report, re.MULTILINE)}
    assert counts["fail"] == 0 and counts["skipped"] == 0, report
    assert counts["pass"] >= 58, report  # every test file ran


def test_vsix_holds_one_bundled_script_the_manifest_and_the_documents(extension: Path) -> None:
    vsix = extension / "torchdet-lint.vsix"
    completed = _run(NPM, "exec", "--no", "--", "vsce", "package", "--out", str(vsix), cwd=extension, timeout=300)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "WARNING" not in output, output  # e.g. "you should bundle your extension"
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
        readme = archive.read("extension/readme.md").decode("utf-8")
        bundle = archive.read("extension/dist/extension.js").decode("utf-8")
    assert manifest["name"] == "torchdet-lint"
    assert manifest["main"] == "./dist/extension.js"
    assert names == {
        "[Content_Types].xml",
        "extension.vsixmanifest",
        "extension/package.json",
        "extension/readme.md",
        "extension/changelog.md",
        "extension/LICENSE.txt",
        "extension/dist/extension.js",
    }
    # The marketplace page is the extension's README.
    assert readme == (EXTENSION / "README.md").read_text(encoding="utf-8")
    # The bundle holds the language client (nothing else of node_modules is shipped) and its licence.
    assert "vscode-languageclient" in bundle and 'require("vscode")' in bundle
    client = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))["devDependencies"]["vscode-languageclient"]
    assert f"\nvscode-languageclient {client}\n" in bundle
