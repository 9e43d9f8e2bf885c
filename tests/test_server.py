"""The language server end to end: `torchdet-lint server` in a subprocess, driven
over stdio by pygls's real LanguageClient."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Callable, List, Sequence

import pytest
from conftest import run_cli
from lsp_client import (
    HAZARD,
    TIMEOUT,
    Session,
    apply_text_edits,
    codes,
    fixes_only,
    run,
    utf16_length,
    workspace_text_edits,
)
from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from torchdet_lint.checks import all_rules
from torchdet_lint.docs import rule_markdown
from torchdet_lint.server import FIX_ALL_KIND

# -- tests ---------------------------------------------------------------------------------------


def test_diagnostics_on_open_change_and_save(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Session(tmp_path) as session:
            capabilities = session.result.capabilities
            assert capabilities.hover_provider
            assert FIX_ALL_KIND in capabilities.code_action_provider.code_action_kinds
            uri = session.open("train.py", f"import torch\n{HAZARD}\n")
            diagnostics = await session.diagnostics(uri, lambda d: bool(d))
            assert codes(diagnostics) == ["TDL301"]
            diagnostic = diagnostics[0]
            assert diagnostic.range == types.Range(
                start=types.Position(line=1, character=0), end=types.Position(line=1, character=len(HAZARD))
            )
            assert diagnostic.source == "torchdet-lint"
            assert diagnostic.severity == types.DiagnosticSeverity.Warning
            href = diagnostic.code_description.href
            assert href.startswith("file:")
            assert Path(to_fs_path(href)).read_text(encoding="utf-8") == rule_markdown(all_rules()["TDL301"])

            seen = session.count(uri)
            session.replace(uri, f"import torch\n\n\n{HAZARD}\ntorch.backends.cudnn.benchmark = False\n")
            diagnostics = await session.diagnostics(uri, after=seen)
            assert [(str(d.code), d.range.start.line) for d in diagnostics] == [("TDL301", 3)]

            seen = session.count(uri)
            session.replace(uri, "import torch\ntorch.backends.cudnn.benchmark = False\n")
            assert await session.diagnostics(uri, after=seen) == []
            seen = session.count(uri)
            session.save(uri)
            assert await session.diagnostics(uri, after=seen) == []

            seen = session.count(uri)
            session.replace(uri, f"import torch\n{HAZARD}\n")
            session.save(uri)
            diagnostics = await session.diagnostics(uri, lambda d: bool(d), after=seen)
            assert codes(diagnostics) == ["TDL301"]
        assert session.returncode == 0

    run(scenario())


def test_profile_option_replaces_the_configured_profile(tmp_path: Path) -> None:
    # What the VS Code extension's `torchdetLint.profile` setting passes: `server --profile`.
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nprofile = "reproducible"\n', encoding="utf-8")
    text = f"import numpy as np\nimport torch\n{HAZARD}\nbatch = torch.tensor(np.zeros(3))\n"

    async def published_codes(server_args: Sequence[str]) -> List[str]:
        async with Session(tmp_path, server_args=server_args) as session:
            uri = session.open("train.py", text)
            return codes(await session.diagnostics(uri, lambda d: bool(d)))

    async def scenario() -> None:
        assert await published_codes([]) == ["TDL301"]
        assert "TDL401" in await published_codes(["--profile", "performance"])  # torch.tensor(array) copies

    run(scenario())


@pytest.mark.parametrize("encoding", [types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf8, None])
def test_ranges_in_the_clients_position_encoding(tmp_path: Path, encoding) -> None:
    prefix = 'note = "训练 😀 ok"; '
    text = f"import torch\n{prefix}{HAZARD}  # 中文 😀\n"

    def units(chunk: str) -> int:
        if encoding == types.PositionEncodingKind.Utf8:
            return len(chunk.encode("utf-8"))
        return utf16_length(chunk)  # UTF-16 is the protocol's default

    async def scenario() -> None:
        async with Session(tmp_path, encodings=[encoding] if encoding else None) as session:
            expected_encoding = encoding or types.PositionEncodingKind.Utf16
            assert session.result.capabilities.position_encoding in (expected_encoding, None)
            uri = session.open("emoji.py", text)
            diagnostics = await session.diagnostics(uri, lambda d: bool(d))
            [diagnostic] = diagnostics
            assert diagnostic.range.start == types.Position(line=1, character=units(prefix))
            assert diagnostic.range.end == types.Position(line=1, character=units(prefix + HAZARD))
            [action] = fixes_only(await session.code_actions(uri, diagnostic))
            fixed = apply_text_edits(text, workspace_text_edits(action.edit, uri), units)
            assert fixed == text.replace(HAZARD, HAZARD.replace("True", "False"))

    run(scenario())


def test_quick_fixes_fix_all_and_unsafe_marking(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nextend-select = ["TDL991"]\n', encoding="utf-8")
    text = f"import torch\n{HAZARD}\nunsafe_call(torch)\nif True:\n    {HAZARD}\n"

    async def scenario() -> None:
        async with Session(tmp_path, test_rules=True) as session:
            uri = session.open("fixes.py", text)
            diagnostics = await session.diagnostics(uri, lambda d: len(d) == 3)
            assert codes(diagnostics) == ["TDL301", "TDL301", "TDL991"]
            unsafe = next(d for d in diagnostics if d.code == "TDL991")
            fixes = fixes_only(await session.code_actions(uri, unsafe))
            assert [a.title for a in fixes] == ["TDL991: Call `safe_call` instead (unsafe)"]
            assert fixes[0].kind == types.CodeActionKind.QuickFix and not fixes[0].is_preferred
            assert fixes[0].diagnostics[0].code == "TDL991"
            edit = fixes[0].edit
            assert edit.document_changes[0].text_document.version == session.versions[uri]
            assert apply_text_edits(text, workspace_text_edits(edit, uri)) == text.replace("unsafe_call", "safe_call")

            safe = next(d for d in diagnostics if d.code == "TDL301" and d.range.start.line == 4)
            [fix] = fixes_only(await session.code_actions(uri, safe))
            assert fix.is_preferred and "(unsafe)" not in fix.title
            assert apply_text_edits(text, workspace_text_edits(fix.edit, uri)).count("= False") == 1

            [fix_all] = await session.code_actions(uri, only=[FIX_ALL_KIND])
            assert fix_all.kind == FIX_ALL_KIND
            fixed = apply_text_edits(text, workspace_text_edits(fix_all.edit, uri))
            assert fixed == text.replace("= True", "= False"), "fix-all applies the safe fixes only"
            assert await session.code_actions(uri, only=[types.CodeActionKind.Source]) == [fix_all]
            assert all(
                a.kind == types.CodeActionKind.QuickFix
                for a in await session.code_actions(uri, unsafe, only=[types.CodeActionKind.QuickFix])
            )

            seen = session.count(uri)
            session.replace(uri, fixed)
            remaining = await session.diagnostics(uri, after=seen)
            assert codes(remaining) == ["TDL991"]
            assert await session.code_actions(uri, only=[FIX_ALL_KIND]) == []

    run(scenario())


def test_noqa_action_appends_or_merges(tmp_path: Path) -> None:
    text = f"import torch\n{HAZARD}\n{HAZARD}  # noqa: E501\n{HAZARD}  # keep this comment\n"

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            uri = session.open("noqa.py", text)
            diagnostics = await session.diagnostics(uri, lambda d: len(d) == 3)
            lines = text.splitlines(keepends=True)
            expected = {
                1: f"{HAZARD}  # noqa: TDL301\n",
                2: f"{HAZARD}  # noqa: E501, TDL301\n",
                3: f"{HAZARD}  # keep this comment  # noqa: TDL301\n",
            }
            new_text = text
            for diagnostic in sorted(diagnostics, key=lambda d: d.range.start.line, reverse=True):
                [noqa] = [a for a in await session.code_actions(uri, diagnostic) if "noqa" in a.title]
                assert noqa.title == "TDL301: Suppress with `# noqa: TDL301`"
                line = diagnostic.range.start.line
                changed = apply_text_edits(text, workspace_text_edits(noqa.edit, uri))
                assert changed.splitlines(keepends=True)[line] == expected[line]
                assert changed.splitlines(keepends=True)[:line] == lines[:line]
                new_text = apply_text_edits(new_text, workspace_text_edits(noqa.edit, uri))
            seen = session.count(uri)
            session.replace(uri, new_text)
            assert await session.diagnostics(uri, after=seen) == []

    run(scenario())


def test_hover_shows_the_rule_documentation(tmp_path: Path) -> None:
    text = f"import torch\n{HAZARD}\nx = 1  # noqa: TDL301\n"

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            uri = session.open("hover.py", text)
            # line 3's directive suppresses nothing there: TDL900 is published beside TDL301
            published = await session.diagnostics(uri, lambda d: bool(d))
            assert sorted(d.code for d in published) == ["TDL301", "TDL900"]
            [diagnostic] = [d for d in published if d.code == "TDL301"]
            hover = await session.hover(uri, types.Position(line=1, character=10))
            assert hover.contents.kind == types.MarkupKind.Markdown
            assert hover.contents.value == rule_markdown(all_rules()["TDL301"])
            assert "## Why is this bad?" in hover.contents.value
            assert hover.range == diagnostic.range
            on_code = await session.hover(uri, types.Position(line=2, character=text.splitlines()[2].index("TDL301") + 2))
            assert on_code.contents.value.startswith("# TDL301 ")
            assert await session.hover(uri, types.Position(line=0, character=3)) is None

    run(scenario())


def test_syntax_errors_and_unreadable_documents_do_not_stop_the_server(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Session(tmp_path) as session:
            uri = session.open("broken.py", "import torch\ndef (:\n")
            [diagnostic] = await session.diagnostics(uri, lambda d: bool(d))
            assert diagnostic.code == "TDL000"
            assert diagnostic.severity == types.DiagnosticSeverity.Error
            assert diagnostic.range.start.line == 1
            assert await session.code_actions(uri, diagnostic) == []

            # A document the client never opened and that does not exist; a position past the end.
            assert await session.hover(session.uri("missing.py"), types.Position(line=0, character=0)) is None
            assert await session.code_actions(session.uri("missing.py")) == []
            assert await session.hover(uri, types.Position(line=99, character=99)) is None

            seen = session.count(uri)
            session.replace(uri, f"import torch\n{HAZARD}\n")
            diagnostics = await session.diagnostics(uri, after=seen)
            assert codes(diagnostics) == ["TDL301"]
            assert session.returncode is None
        assert session.returncode == 0

    run(scenario())


class RawConnection:
    """JSON-RPC framing by hand, to send what no well-behaved client would."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.notifications: List[dict] = []

    async def send(self, message) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.process.stdin.drain()

    async def receive(self) -> dict:
        length = 0
        while True:
            header = await self.process.stdout.readline()
            if header in (b"\r\n", b""):
                break
            name, _, value = header.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(await self.process.stdout.readexactly(length))

    async def notification(self, method: str, predicate: Callable[[dict], bool]) -> dict:
        """The first notification of `method` (received already or next) whose params satisfy `predicate`."""

        async def wait() -> dict:
            while True:
                for message in self.notifications:
                    if message["method"] == method and predicate(message["params"]):
                        return message["params"]
                message = await self.receive()
                if "method" in message and "id" not in message:
                    self.notifications.append(message)

        return await asyncio.wait_for(wait(), TIMEOUT)

    async def response(self, request_id) -> dict:
        async def wait() -> dict:
            while True:
                message = await self.receive()
                if message.get("id") == request_id and "method" not in message:
                    return message
                if "method" in message and "id" not in message:
                    self.notifications.append(message)

        return await asyncio.wait_for(wait(), TIMEOUT)


def test_malformed_messages_get_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    uri = from_fs_path(str(tmp_path / "ok.py"))

    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "torchdet_lint",
            "server",
            cwd=str(tmp_path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        connection = RawConnection(process)
        try:
            await connection.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"capabilities": {}, "rootUri": from_fs_path(str(tmp_path))},
                }
            )
            assert "capabilities" in (await connection.response(1))["result"]
            await connection.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            await connection.send(b"{this is not json")
            await connection.send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"position": "nowhere"}})
            assert "error" in await connection.response(2)
            await connection.send(
                {"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeAction", "params": {"textDocument": {}}}
            )
            assert "error" in await connection.response(3)
            await connection.send({"jsonrpc": "2.0", "id": 4, "method": "no/suchMethod", "params": {}})
            assert (await connection.response(4))["error"]["code"] == -32601
            await connection.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri}}})
            # A document that is not text the engine can take: NUL bytes, a lone surrogate.
            await connection.send(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "import torch\x00\ud800\n"}
                    },
                }
            )
            await connection.send(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "textDocument/hover",
                    "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}},
                }
            )
            assert "result" in await connection.response(5)
            published = await connection.notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
            assert [d["code"] for d in published["diagnostics"]] == ["TDL000"]
            await connection.send({"jsonrpc": "2.0", "id": 6, "method": "shutdown"})
            assert (await connection.response(6))["result"] is None
            await connection.send({"jsonrpc": "2.0", "method": "exit"})
            assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    run(scenario())


def test_config_errors_are_reported_on_the_buffer(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nselekt = ["TDL301"]\n', encoding="utf-8")

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            uri = session.open("config.py", f"import torch\n{HAZARD}\n")
            [diagnostic] = await session.diagnostics(uri, lambda d: bool(d))
            assert diagnostic.code == "TDL000"
            assert "selekt" in diagnostic.message

    run(scenario())


def test_project_rules_use_the_other_files_summaries(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nextend-select = ["TDL990"]\n', encoding="utf-8")
    (tmp_path / "helper.py").write_text("import torch\n", encoding="utf-8")
    main_text = "import helper\nimport random\n"
    (tmp_path / "main.py").write_text(main_text, encoding="utf-8")

    async def scenario() -> None:
        async with Session(tmp_path, test_rules=True) as session:
            uri = session.open("main.py", main_text)
            diagnostics = await session.diagnostics(uri, lambda d: bool(d))
            assert [(str(d.code), d.message) for d in diagnostics] == [("TDL990", "imports helper, which imports torch")]

            # helper.py stops importing torch: saved in the editor, the finding in main.py goes.
            helper = session.open("helper.py", "import torch\n")
            seen = session.count(uri)
            session.replace(helper, "import random\n")
            (tmp_path / "helper.py").write_text("import random\n", encoding="utf-8")
            session.save(helper)
            assert await session.diagnostics(uri, after=seen) == []

            # Changed on disk behind the editor's back: the watched-files notification.
            (tmp_path / "helper.py").write_text("import torch.nn\n", encoding="utf-8")
            session.client.text_document_did_close(
                types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=helper))
            )
            seen = session.count(uri)
            session.client.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=helper, type=types.FileChangeType.Changed)])
            )
            diagnostics = await session.diagnostics(uri, lambda d: bool(d), after=seen)
            assert codes(diagnostics) == ["TDL990"]

    run(scenario())


def test_a_seed_helper_that_is_not_open_counts(tmp_path: Path) -> None:
    """The editor agrees with `torchdet-lint .`: `train.py` seeds through `utils/seed.py`,
    which is never opened; the unseeded `train2.py` gets TDL001-TDL003."""
    from test_partial_runs import SEED_CODES, TRAIN, UNSEEDED, helper_seeded_project

    helper_seeded_project(tmp_path)

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            unseeded = session.open("train2.py", UNSEEDED)
            diagnostics = await session.diagnostics(unseeded, lambda d: len(d) == 3)
            assert codes(diagnostics) == SEED_CODES
            # The project is indexed by now (train2.py's findings need it): the first lint of
            # train.py runs the project phase.
            seeded = session.open("train.py", TRAIN)
            assert await session.diagnostics(seeded) == []
            # Unsaved edits count for the buffer itself: without the call, train.py is unseeded.
            seen = session.count(seeded)
            session.replace(seeded, UNSEEDED)
            diagnostics = await session.diagnostics(seeded, lambda d: len(d) == 3, after=seen)
            assert codes(diagnostics) == SEED_CODES

    run(scenario())


def test_server_subcommand_help_and_bad_option(tmp_path: Path) -> None:
    code, out, err = run_cli("server", "--help")
    assert code == 0 and "Language server" in out
    code, out, err = run_cli("server", "--no-such-option")
    assert code == 2


def test_a_changed_configuration_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchdet-lint]\n", encoding="utf-8")

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            uri = session.open("train.py", f"import torch\n{HAZARD}\n")
            assert codes(await session.diagnostics(uri, lambda d: bool(d))) == ["TDL301"]
            (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nignore = ["TDL301"]\n', encoding="utf-8")
            seen = session.count(uri)
            session.client.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    changes=[types.FileEvent(uri=session.uri("pyproject.toml"), type=types.FileChangeType.Changed)]
                )
            )
            assert await session.diagnostics(uri, after=seen) == []

    run(scenario())


def test_a_sub_project_file_is_linted_with_its_own_project(tmp_path: Path) -> None:
    """A file of a sub-project (its own config) opened from the workspace folder: its own
    selection and its own files, as `check` at the sub-project's root sees them."""
    sub = tmp_path / "sub"
    (sub / "utils").mkdir(parents=True)
    (sub / "pyproject.toml").write_text('[tool.torchdet-lint]\nignore = ["TDL301"]\n', encoding="utf-8")
    (sub / "utils" / "__init__.py").write_text("", encoding="utf-8")
    (sub / "utils" / "seed.py").write_text("import torch\n\n\ndef fix(seed):\n    torch.manual_seed(seed)\n", encoding="utf-8")
    text = f"import torch\n\nfrom utils.seed import fix\n\nfix(0)\n{HAZARD}\nprint(torch.randn(2))\n"
    (sub / "train.py").write_text(text, encoding="utf-8")
    code, out, err = run_cli("--output-format", "json", "train.py", cwd=sub)
    assert code == 0 and json.loads(out) == [], out + err

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            uri = session.open("sub/train.py", text)
            assert await session.diagnostics(uri) == []
            seen = session.count(uri)
            session.replace(uri, text.replace("fix(0)\n", ""))  # now torch is drawn from unseeded
            assert codes(await session.diagnostics(uri, after=seen)) == ["TDL001"]

    run(scenario())


def test_fix_all_and_hover_in_a_notebook_cell(tmp_path: Path) -> None:
    cells = [("markdown", "# Speed"), ("python", f"import torch\n{HAZARD}"), ("python", f"{HAZARD}\nx = 1")]

    async def scenario() -> None:
        async with Session(tmp_path) as session:
            notebook, uris = session.open_notebook("speed.ipynb", cells)
            [diagnostic] = await session.diagnostics(uris[2], lambda d: bool(d))
            assert (str(diagnostic.code), diagnostic.range.start.line) == ("TDL301", 0)
            hover = await session.hover(uris[2], types.Position(line=0, character=5))
            assert hover.contents.value == rule_markdown(all_rules()["TDL301"])
            [fix_all] = await session.code_actions(uris[2], only=[FIX_ALL_KIND])
            [change] = fix_all.edit.document_changes
            assert change.text_document.uri == uris[2]  # the cell asked about, not its neighbours
            fixed = apply_text_edits(cells[2][1], change.edits)
            assert fixed == cells[2][1].replace("True", "False")
            [noqa] = [a for a in await session.code_actions(uris[1], None) if "noqa" in a.title] or [None]
            assert noqa is None  # nothing reported at the first line of cell 2
            session.replace_cell(notebook, uris[2], fixed)
            assert await session.diagnostics(uris[2], lambda d: not d) == []

    run(scenario())


def test_a_first_lint_that_cannot_wait_for_the_project_is_followed_by_checks_diagnostics(tmp_path: Path) -> None:
    """With no wait for the project's summaries (a cold cache on a large tree passes the wait),
    the first lint may lack `data.py`'s summary (TDL102 needs its dataset); the file is linted
    again when the project is in, and what stays is what `check` reports (on a copy of the
    project, so that the server's cache stays cold)."""
    from faces_project import TRAIN, seed_faces_project

    root = seed_faces_project(tmp_path / "server")
    code, out, err = run_cli("--output-format", "json", "train.py", cwd=seed_faces_project(tmp_path / "cli"))
    assert code == 1, err
    expected = sorted((d["line"] - 1, d["code"], d["message"]) for d in json.loads(out))
    script = "import sys\nimport torchdet_lint.server as server\nserver.FIRST_PUBLISH_WAIT = 0.0\nsys.exit(server.main([]))\n"

    def published(params) -> list:
        return sorted((d.range.start.line, str(d.code), d.message) for d in params.diagnostics)

    async def scenario() -> None:
        async with Session(root, script=script) as session:
            uri = session.open("train.py", TRAIN)
            await session.wait_for(lambda: session.count(uri) > 0 and published(session.published[uri][-1]) == expected)

    run(scenario())


def test_the_first_publish_for_an_opened_file_is_checks_diagnostics(tmp_path: Path) -> None:
    """With a cold cache, the first diagnostics the server publishes for a file it opens are all
    of those `check` reports for it (TDL102 needs `data.py`'s summary, which nothing has indexed
    yet), not a partial set followed by the rest."""
    from faces_project import TRAIN, seed_faces_project

    root = seed_faces_project(tmp_path / "server")
    code, out, err = run_cli("--output-format", "json", "train.py", cwd=seed_faces_project(tmp_path / "cli"))
    assert code == 1, err
    expected = sorted((d["line"] - 1, d["code"], d["message"]) for d in json.loads(out))
    assert "TDL102" in {code for _, code, _ in expected}

    async def scenario() -> None:
        async with Session(root) as session:
            uri = session.open("train.py", TRAIN)
            await session.wait_for(lambda: session.count(uri) > 0)
            first = session.published[uri][0]
            assert sorted((d.range.start.line, str(d.code), d.message) for d in first.diagnostics) == expected

    run(scenario())
