"""Running a program that starts processes of its own (`mp.spawn`, a process group) without ever
hanging the test run: the program runs in a session of its own, and on timeout the whole session
(the program and every process it started) is killed. `subprocess.run(timeout=...)` kills the
program only; its workers keep the output pipes open and the test waits for them forever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

# The programs' own process groups time out before this (their `init_process_group` timeout).
RUN_TIMEOUT = 240


class ProgramTimeout(AssertionError):
    pass


def run_program(
    args: Sequence[str], cwd: Path, timeout: float = RUN_TIMEOUT, env: Optional[dict] = None
) -> subprocess.CompletedProcess:
    """`python *args` in `cwd`; the whole process tree is killed after `timeout` seconds."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=str(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(process)
        stdout, stderr = process.communicate()
        raise ProgramTimeout(f"`python {' '.join(args)}` ran over {timeout} s and was killed:\n{stdout}\n{stderr}")
    finally:
        if process.poll() is None:
            _kill_tree(process)
    # Workers the program left behind (a crash between spawn and join) go with it.
    _kill_tree(process)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _kill_tree(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def last_line(args: Sequence[str], cwd: Path, timeout: float = RUN_TIMEOUT) -> str:
    """The last line the program prints; it must succeed."""
    completed = run_program(args, cwd, timeout)
    assert completed.returncode == 0, f"`python {' '.join(args)}` failed ({completed.returncode}):\n{completed.stderr}"
    lines = completed.stdout.strip().splitlines()
    assert lines, f"`python {' '.join(args)}` printed nothing:\n{completed.stderr}"
    return lines[-1]
