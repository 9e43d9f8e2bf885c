"""Shared test set-up: `--update-fixtures` and helpers to run the real engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def pytest_addoption(parser):
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        default=False,
        help="rewrite the expected .txt / .fixed.py files of fixtures/ from the current output (review the diff)",
    )


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
    completed = subprocess.run(
        [sys.executable, "-m", "torchdet_lint", *args],
        cwd=str(cwd) if cwd else None,
        input=input,
        capture_output=True,
        env=full_env,
        timeout=timeout,
    )
    return completed.returncode, completed.stdout.decode("utf-8", "replace"), completed.stderr.decode("utf-8", "replace")


def lint_json(*args: str, cwd: Optional[Path] = None) -> List[dict]:
    code, out, err = run_cli(*args, "--output-format", "json", "--no-cache", cwd=cwd)
    assert code in (0, 1), err
    return json.loads(out)
