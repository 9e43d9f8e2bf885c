"""Shared test set-up: `--update-fixtures` and helpers to run the real engine."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from torchdet_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def pytest_addoption(parser):
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        default=False,
        help="rewrite the expected .txt / .fixed.py files of fixtures/ from the current output (review the diff)",
    )
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run the slow tier too (training runs on torch, the wheel, fresh virtual environments, editors, "
        "pre-commit): the README's test command and CI do",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, run with --full (processes that train, install or start editors)")


# Whole files of the slow tier: each test starts training programs on torch, builds and installs
# the package, or drives pre-commit and the editors.
SLOW_FILES = ("e2e/", "test_wheel.py", "test_precommit.py", "test_vscode_extension.py", "test_neovim.py")


def pytest_collection_modifyitems(config, items):
    """Without `--full`, the slow tier is left out: the default `pytest` is the inner loop."""
    tests = Path(__file__).resolve().parent
    for item in items:
        path = Path(str(item.path)).resolve()
        where = path.relative_to(tests).as_posix() if path.is_relative_to(tests) else ""
        if where.startswith(SLOW_FILES):
            item.add_marker(pytest.mark.slow)
    if config.getoption("--full") or config.getoption("-m"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config.hook.pytest_deselected(items=slow)


def pytest_report_header(config):
    if not config.getoption("--full"):
        return "tiers: fast only (the slow tier is deselected: `pytest --full` runs everything)"
    return "tiers: all (--full)"


@pytest.fixture
def update_fixtures(request) -> bool:
    return request.config.getoption("--update-fixtures")


def run_cli(
    *args: str, cwd: Optional[Path] = None, input: Optional[bytes] = None, env: Optional[dict] = None, timeout: int = 120
):
    """The real command line, in a subprocess: (exit code, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env.pop("FORCE_COLOR", None)
    full_env["NO_COLOR"] = "1"
    if env:
        full_env.update(env)
    # A session of its own, killed whole on timeout: a worker of `--jobs` left holding the output
    # pipes would otherwise keep the test waiting after the linter itself was killed.
    process = subprocess.Popen(
        [sys.executable, "-m", "torchdet_lint", *args],
        cwd=str(cwd) if cwd else None,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(process)
        process.communicate()
        raise
    return process.returncode, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")


def cli_in_process(*args: str, cwd: Path, env: Optional[dict] = None, input: Optional[bytes] = None) -> Tuple[int, str, str]:
    """The command line's `main` in this process, from `cwd`, with `env` added to the environment,
    `input` as standard input and colour off as `run_cli` has it: (exit code, stdout, stderr).
    For tests that run it many times on small projects; what only a real process shows
    (start-up, signals, the console, `--jobs` workers) stays with `run_cli`."""
    # Byte streams under the text ones: the command line reads standard input's bytes and
    # writes a fixed text's bytes (`sys.stdin.buffer`, `sys.stdout.buffer`).
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)
    err = io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8", newline="")
    previous = os.getcwd()
    changes = {"NO_COLOR": "1", "FORCE_COLOR": None, **(env or {})}
    saved = {name: os.environ.get(name) for name in changes}
    _set_environment(changes)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stdin(stdin):
            try:
                code = main(list(args))
            except SystemExit as stop:  # argparse's --help and usage errors
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
    finally:
        os.chdir(previous)
        _set_environment(saved)
    return code, out.buffer.getvalue().decode("utf-8", "replace"), err.getvalue()


@contextlib.contextmanager
def _stdin(stream):
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def _set_environment(values: dict) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _kill_session(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def lint_json(*args: str, cwd: Optional[Path] = None) -> List[dict]:
    code, out, err = run_cli(*args, "--output-format", "json", "--no-cache", cwd=cwd)
    assert code in (0, 1), err
    return json.loads(out)
