"""End to end: small training programs that give different results in two
runs, fixed by `torchdet-lint --fix --unsafe-fixes`, then run twice more in
fresh processes with `torch.use_deterministic_algorithms(True)`: the final
loss and the hash of the weights must be bit-identical.

Each program prints one line, `<final loss repr> <sha256 of the weights>`.
The programs live in tests/e2e/programs/<name>/ and are copied before fixing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import run_cli

PROGRAMS = Path(__file__).resolve().parent / "programs"
# What each program gets wrong, i.e. what the linter must report and fix.
EXPECTED: Dict[str, set] = {
    # Module-level script: unseeded data, init, dropout, shuffling loader.
    "mlp_script": {"TDL001", "TDL101"},
    # Main block; global `random`/NumPy in the main process, two shuffling workers.
    "workers_augment": {"TDL001", "TDL002", "TDL003", "TDL101"},
    # Seeded by a first-party helper; the Dataset owns unseeded RNG objects; two workers.
    "dataset_rng": {"TDL005", "TDL101", "TDL102"},
    # Helper seeds torch only; `random` noise, NumPy order. Its convolution runs on the CPU (nothing
    # moves to a device), where deterministic mode changes nothing: no TDL302.
    "helper_partial": {"TDL002", "TDL003"},
}
# Runs in fresh processes with deterministic mode on before the program starts.
DETERMINISTIC_RUNNER = (
    "import runpy, sys, torch\n"
    "torch.use_deterministic_algorithms(True)\n"
    "sys.path.insert(0, '.')\n"
    "runpy.run_path('train.py', run_name='__main__')\n"
)
PLAIN_RUNNER = "import runpy, sys\nsys.path.insert(0, '.')\nrunpy.run_path('train.py', run_name='__main__')\n"
RUN_TIMEOUT = 120  # generous: importing torch alone takes seconds on a loaded machine


def _run_program(directory: Path, deterministic: bool) -> Tuple[str, float]:
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-c", DETERMINISTIC_RUNNER if deterministic else PLAIN_RUNNER],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    elapsed = time.monotonic() - started
    assert completed.returncode == 0, f"{directory.name} failed:\n{completed.stderr}"
    lines = completed.stdout.strip().splitlines()
    assert lines, f"{directory.name} printed nothing:\n{completed.stderr}"
    return lines[-1], elapsed


def _lint(directory: Path) -> List[dict]:
    code, out, err = run_cli("--output-format", "json", "--no-cache", "--unsafe-fixes", ".", cwd=directory)
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixed_program_reproduces(name: str, tmp_path: Path) -> None:
    program = tmp_path / name
    shutil.copytree(PROGRAMS / name, program)

    first, first_time = _run_program(program, deterministic=False)
    second, _ = _run_program(program, deterministic=False)
    assert first != second, f"{name} should not reproduce as written, but printed {first} twice"

    before = _lint(program)
    reported = {d["code"] for d in before}
    missing = EXPECTED[name] - reported
    assert not missing, f"{name}: expected {sorted(missing)} to be reported; got {sorted(reported)}"
    assert all(d["fix"] is not None for d in before if d["code"] in EXPECTED[name]), [
        (d["code"], d["path"], d["line"]) for d in before if d["code"] in EXPECTED[name] and d["fix"] is None
    ]

    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--show-fixes", ".", cwd=program)
    assert code in (0, 1), f"--fix failed ({code}):\n{out}\n{err}"
    assert "error:" not in err, err
    after = _lint(program)
    left = sorted((d["code"], d["path"], d["line"]) for d in after if d["code"] in EXPECTED[name])
    assert not left, f"{name}: still reported after --fix: {left}"
    # The fixed sources parse and a second --fix changes nothing.
    code, diff, err = run_cli("--diff", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code == 0 and diff == "", f"a second --fix would change:\n{diff}\n{err}"

    fixed_first, fixed_time = _run_program(program, deterministic=True)
    fixed_second, _ = _run_program(program, deterministic=True)
    assert fixed_first == fixed_second, (
        f"{name} after --fix still differs:\n{fixed_first}\n{fixed_second}\n{_changes(name, program)}"
    )
    print(f"{name}: {first_time:.1f} s as written, {fixed_time:.1f} s fixed; result {fixed_first}")


def _changes(name: str, program: Path) -> str:
    """What the fixes did, for the failure message."""
    completed = subprocess.run(["diff", "-ru", str(PROGRAMS / name), str(program)], capture_output=True, text=True)
    return completed.stdout
