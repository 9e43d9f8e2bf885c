"""The editor configurations of docs/integrations.md (and the README's copies)
parse in their own language and start `torchdet-lint server` on Python files.
The Neovim one is also run in a real Neovim (tests/test_neovim.py); this file
checks the others as far as no such editor can be had here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Union

import pytest
from conftest import ROOT
from doc_snippets import snippet, snippets
from neovim import ensure_neovim, isolated_env

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMAND = ["torchdet-lint", "server"]
ROOT_MARKERS = ["pyproject.toml", "setup.py", "setup.cfg", ".git"]
EDITORS = Path(__file__).resolve().parent / "editors"


def test_every_editor_has_its_snippet_and_the_readme_copies_them_verbatim() -> None:
    documented = snippets()
    assert set(documented) == {
        "vscode-fix-on-save",
        "neovim",
        "neovim-0.11",
        "neovim-lspconfig",
        "helix",
        "emacs-eglot",
        "sublime",
        "zed",
        "pycharm-lsp4ij",
    }
    in_readme = snippets(ROOT / "README.md")
    assert set(in_readme) == {"neovim", "helix", "emacs-eglot", "sublime", "zed", "pycharm-lsp4ij"}
    editors = (ROOT / "README.md").read_text(encoding="utf-8").split("### Editors (language server)\n", 1)[1]
    assert editors.lstrip().startswith("VS Code: install the torchdet-lint extension")
    for name, body in in_readme.items():
        assert body == documented[name], f"README.md's {name} snippet differs from docs/integrations.md's"


def test_vscode_fix_on_save_names_the_servers_fix_all_kind() -> None:
    from torchdet_lint.server import FIX_ALL_KIND

    settings = json.loads(snippet("vscode-fix-on-save"))
    assert settings["[python]"]["editor.codeActionsOnSave"] == {FIX_ALL_KIND: "explicit"}


def test_helix() -> None:
    config = tomllib.loads(snippet("helix"))
    server = config["language-server"]["torchdet-lint"]
    assert [server["command"], *server["args"]] == COMMAND
    [python] = [language for language in config["language"] if language["name"] == "python"]
    assert "torchdet-lint" in python["language-servers"]


def test_sublime_lsp() -> None:
    client = json.loads(snippet("sublime"))["clients"]["torchdet-lint"]
    assert client["command"] == COMMAND
    assert client["selector"] == "source.python" and client["enabled"] is True


def test_zed_settings_and_the_extension_they_need() -> None:
    settings = json.loads(snippet("zed"))
    assert "torchdet-lint" in settings["languages"]["Python"]["language_servers"]
    binary = settings["lsp"]["torchdet-lint"]["binary"]
    assert [binary["path"], *binary["arguments"]] == COMMAND
    manifest = tomllib.loads((ROOT / "editors" / "zed" / "extension.toml").read_text(encoding="utf-8"))
    assert manifest["language_servers"]["torchdet-lint"]["languages"] == ["Python"]
    source = (ROOT / "editors" / "zed" / "src" / "lib.rs").read_text(encoding="utf-8")
    assert 'which("torchdet-lint")' in source and '"server"' in source


def test_pycharm_lsp4ij_template() -> None:
    template = json.loads(snippet("pycharm-lsp4ij"))
    assert template["programArgs"]["default"].split() == COMMAND
    assert {"fileType": {"name": "Python"}, "languageId": "python"} in template["fileTypeMappings"]


# -- Emacs: a small reader for the s-expressions of the snippet ----------------------------------

Sexp = Union[str, List["Sexp"]]
_TOKEN = re.compile(r'\s*(?:(?P<open>\()|(?P<close>\))|(?P<quote>\')|(?P<string>"(?:[^"\\]|\\.)*")|(?P<atom>[^\s()\'"]+))')


def read_sexps(text: str) -> List[Sexp]:
    """Lists, 'quoted forms (as ["quote", form]), strings (kept with their quotes) and symbols."""
    stack: List[List[Sexp]] = [[]]
    quotes: List[int] = []  # depths at which a quote waits for its form
    position = 0
    text = text.rstrip()

    def add(form: Sexp) -> None:
        while quotes and quotes[-1] == len(stack):
            quotes.pop()
            form = ["quote", form]
        stack[-1].append(form)

    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match, f"cannot read elisp at {text[position : position + 20]!r}"
        position = match.end()
        if match["open"]:
            stack.append([])
        elif match["close"]:
            assert len(stack) > 1, "unbalanced ')'"
            add(stack.pop())
        elif match["quote"]:
            quotes.append(len(stack))
        else:
            add(match["string"] or match["atom"])
    assert len(stack) == 1, "unbalanced '('"
    return stack[0]


def test_emacs_eglot() -> None:
    [form] = read_sexps(snippet("emacs-eglot"))
    assert form[:2] == ["with-eval-after-load", ["quote", "eglot"]]
    [add] = form[2:]
    assert add[:2] == ["add-to-list", ["quote", "eglot-server-programs"]]
    modes, dot, command = add[2][1]  # '(MODES . COMMAND)
    assert dot == "." and {"python-mode", "python-ts-mode"} <= set(modes)
    assert command == [f'"{word}"' for word in COMMAND]


# -- Neovim: the other two ways, run against stand-ins of the APIs they call -------------------------


@pytest.mark.parametrize("name", ["neovim-0.11", "neovim-lspconfig"])
def test_neovim_registrations(tmp_path: Path, name: str) -> None:
    nvim = ensure_neovim()
    config = tmp_path / "init.lua"
    config.write_text(snippet(name), encoding="utf-8")
    result = tmp_path / "result.json"
    env = isolated_env(tmp_path, os.environ.get("PATH", ""))
    env.update(TDL_SNIPPET=str(config), TDL_RESULT=str(result))
    completed = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {EDITORS / 'nvim_config_check.lua'}"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.exists(), completed.stdout + completed.stderr
    recorded = json.loads(result.read_text(encoding="utf-8"))
    assert recorded.get("error") is None, recorded["error"]
    if name == "neovim-0.11":
        assert recorded["enabled"] == ["torchdet_lint"]
        registered = recorded["configs"]["torchdet_lint"]
    else:
        registered = recorded["setup"]["torchdet_lint"]
    assert registered == {"cmd": COMMAND, "filetypes": ["python"], "root_markers": ROOT_MARKERS}
