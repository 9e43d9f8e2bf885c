"""`--watch`: a running process lints again when a file changes, and the report covers the
files whose findings depend on the changed one (an entry point seeded by a helper)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

from torchdet_lint.engine.watch import changed_paths, snapshot, wait_for_change

TRAIN = (
    "import torch\n\nfrom utils.seed import fix_seed\n\nif __name__ == '__main__':\n    fix_seed()\n    print(torch.rand(2))\n"
)
SEED = "import torch\n\n\ndef fix_seed():\n    torch.manual_seed(0)\n"
UNSEEDED = "import torch\n\n\ndef fix_seed():\n    pass\n"
DEADLINE = 90  # seconds for the whole conversation with the process


class Watcher:
    """The process and its standard output, read line by line in a thread."""

    def __init__(self, project: Path) -> None:
        env = dict(os.environ, NO_COLOR="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "torchdet_lint", "--watch", ".", "--output-format", "concise"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: the whole tree is killed at the end
        )
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.errors: List[str] = []
        threading.Thread(target=self._pump, args=(self.process.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.process.stderr, self.errors.append), daemon=True).start()
        self.deadline = time.monotonic() + DEADLINE

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line)

    def next_report(self) -> List[str]:
        """The lines of the next report, up to its summary line."""
        report = []
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no report in time; stdout so far {report}, stderr {''.join(self.errors)}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            report.append(line.rstrip("\n"))
            if line.startswith(("Found ", "All checks passed!")):
                while not self.lines.empty() or self.process.poll() is None:
                    try:  # the "[*] N fixable" lines that follow a summary
                        extra = self.lines.get(timeout=0.3)
                    except queue.Empty:
                        break
                    report.append(extra.rstrip("\n"))
                return report

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_watch_relints_the_changed_file_and_its_dependents(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.torchdet-lint]\n")
    _write(tmp_path / "train.py", TRAIN)
    _write(tmp_path / "utils" / "__init__.py", "")
    _write(tmp_path / "utils" / "seed.py", SEED)
    watcher = Watcher(tmp_path)
    try:
        assert watcher.next_report() == ["All checks passed!"]
        # The helper stops seeding: train.py, unchanged, is reported (it depends on the helper).
        time.sleep(0.1)
        _write(tmp_path / "utils" / "seed.py", UNSEEDED)
        report = watcher.next_report()
        assert any(line.startswith("train.py:5:1: TDL001 ") for line in report), report
        # A new file with a hazard is picked up too.
        _write(tmp_path / "bench.py", "import torch\n\ntorch.backends.cudnn.benchmark = True\n")
        report = watcher.next_report()
        assert any(line.startswith("bench.py:3:1: TDL301 ") for line in report), report
        # Fixing both: the next report is clean again.
        _write(tmp_path / "utils" / "seed.py", SEED)
        (tmp_path / "bench.py").unlink()
        report = watcher.next_report()
        if report != ["All checks passed!"]:  # the two changes may land in two polls
            report = watcher.next_report()
        assert report == ["All checks passed!"]
        errors = "".join(watcher.errors)
        assert errors.startswith("Starting linter in watch mode...") and "File change detected: utils/seed.py" in errors
        assert watcher.process.poll() is None  # still watching
    finally:
        watcher.stop()
    assert (tmp_path / ".torchdet_lint_cache").is_dir()  # the re-runs go through the cache


def test_polling_helpers(tmp_path: Path) -> None:
    first = tmp_path / "a.py"
    first.write_text("x = 1\n", encoding="utf-8")
    before = snapshot([first, tmp_path / "missing.py"])
    assert list(before) == [first]
    first.write_text("x = 12\n", encoding="utf-8")
    assert changed_paths(before, snapshot([first])) == [first]
    sleeps = []
    after, changed = wait_for_change(lambda: snapshot([first]), before, interval=0.01, sleep=sleeps.append, rounds=3)
    assert changed == [first] and len(sleeps) == 1 and after[first] != before[first]
    same, nothing = wait_for_change(lambda: after, after, interval=0.01, sleep=sleeps.append, rounds=3)
    assert nothing == [] and len(sleeps) == 4
