"""The benchmark's child scripts import the engine's internals: they run against today's engine."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import run as benchmark  # noqa: E402


def test_the_bare_parse_runs_on_the_examples() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", benchmark._BARE_PARSE, str(ROOT / "examples")], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    measured = json.loads(completed.stdout)
    assert measured["parsed"] > 0 and measured["failed"] == 0, measured
