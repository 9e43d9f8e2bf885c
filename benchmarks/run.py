"""Reproducible speed and memory measurements for torchdet-lint.

    python benchmarks/run.py                 # the installed torch package and examples/
    python benchmarks/run.py --tree DIR      # other trees (repeatable)
    python benchmarks/run.py --no-torchfix   # skip the TorchFix comparison
    python benchmarks/run.py --torchfix-jobs 1   # TorchFix with one job only
    python benchmarks/run.py --pairs 3       # bare parse and cold lint alternated, median ratio (and the
                                             # named file and the small one, and the small one
                                             # with `import libcst`, alternated likewise: wall and CPU)
    python benchmarks/run.py --startup-only --pairs 5   # only the one-file run against the LibCST import
    python benchmarks/run.py --editor-only   # the language server's measures only

In one run and on the same trees it measures, each in a fresh process: a bare
LibCST parse of the files torchdet-lint parses; torchdet-lint cold with one
job and with all cores; a warm re-run with the cache; TorchFix
(`torchfix --select ALL`, in its own virtual environment under
`benchmarks/.venv-torchfix`, since it pins an older libcst) with one job and
with all cores; one small file end to end; and one file named inside the
warm tree (`torch/nn/functional.py`: a pre-commit run on one staged file of a
big project, whose other files come from the summary index); and the language
server as an editor meets it, through a language client over stdio: process
start to the first diagnostics of one file (cold and warm cache), and edit to
diagnostics, with `ruff server` on the same file beside it when ruff is
installed. It prints wall and CPU times, ratios, files parsed and skipped,
per-phase times and peak memory.

Each tree is measured on a copy of its source files in a scratch directory,
which is then the project root: the measurements never depend on where the
tree is installed (a tree inside this repository's virtual environment would
otherwise belong to this repository's project).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Optional, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TORCHFIX_ENV = HERE / ".venv-torchfix"
TORCHFIX_VERSION = "0.7.0"

# Runs in a child process: parse every file that torchdet-lint would parse.
_BARE_PARSE = r"""
import json, resource, sys, time
import libcst
from pathlib import Path
from torchdet_lint.engine.discovery import discover
from torchdet_lint.engine.file_pass import MAX_FILE_BYTES, _relevant_re
from torchdet_lint.engine.suppressions import file_exempt
from torchdet_lint.core.source import decode_source, read_bytes
root = Path(sys.argv[1])
files, _ = discover([str(root)], root, cwd=root)
parsed = skipped = failed = lines = 0
cpu = time.process_time(); wall = time.perf_counter()
for file in files:
    if file.path.suffix != ".py":
        continue
    try:
        text = decode_source(read_bytes(file.path)).text
    except Exception:
        failed += 1
        continue
    if file_exempt(text) or not _relevant_re().search(text) or len(text) > MAX_FILE_BYTES:
        skipped += 1
        continue
    try:
        libcst.parse_module(text)
        parsed += 1
        lines += text.count("\n")
    except Exception:
        failed += 1
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "parsed": parsed, "skipped": skipped, "failed": failed, "lines": lines,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


# Runs one command and reports its own resource usage: RUSAGE_CHILDREN's
# ru_maxrss is the largest child *so far*, so each measured command gets a
# fresh parent whose only child it is.
_USAGE_OF = r"""
import json, resource, subprocess, sys
completed = subprocess.run(sys.argv[2:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    cpu = usage.ru_utime + usage.ru_stime
    json.dump({"cpu": cpu, "peak_mb": usage.ru_maxrss / 1024, "returncode": completed.returncode}, out)
"""


def measure(command, cwd=None, env=None) -> dict:
    """Wall time, CPU time of the process tree and peak RSS of one command."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-c", _USAGE_OF, report.name, *map(str, command)], cwd=cwd, env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - started
        usage = json.load(report)
    return {
        "wall": wall,
        "cpu": usage["cpu"],
        "peak_mb": usage["peak_mb"],  # the largest single process: the parent or one pool worker
        "returncode": usage["returncode"],
        "stdout": completed.stdout,
        "stderr": completed.stderr,
    }


def torch_tree() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed: pip install torch==2.13.0, or pass --tree")
    return Path(list(spec.submodule_search_locations)[0])


def ensure_torchfix() -> Path:
    executable = TORCHFIX_ENV / "bin" / "torchfix"
    if not executable.exists():
        print(f"creating {TORCHFIX_ENV} with torchfix=={TORCHFIX_VERSION} ...", file=sys.stderr)
        venv.create(TORCHFIX_ENV, with_pip=True)
        subprocess.run(
            [str(TORCHFIX_ENV / "bin" / "python"), "-m", "pip", "install", "--quiet", f"torchfix=={TORCHFIX_VERSION}"],
            check=True,
        )
    return executable


def lint_command(tree: Path, jobs: int, extra=()) -> list:
    return [
        sys.executable,
        "-m",
        "torchdet_lint",
        str(tree),
        "--select",
        "ALL",
        "--exit-zero",
        "--quiet",
        "--output-format",
        "concise",
        "--jobs",
        str(jobs),
        "--verbose",
        *extra,
    ]


def default_check_command(tree: Path, jobs: int) -> list:
    return [
        sys.executable,
        "-m",
        "torchdet_lint",
        "check",
        str(tree),
        "--exit-zero",
        "--quiet",
        "--output-format",
        "concise",
        "--jobs",
        str(jobs),
    ]


def report_command(tree: Path, jobs: int) -> list:
    return [
        sys.executable,
        "-m",
        "torchdet_lint",
        "report",
        str(tree),
        "--exit-zero",
        "--quiet",
        "--output-format",
        "json",
        "--jobs",
        str(jobs),
    ]


def phases(stderr: str) -> dict:
    for line in stderr.splitlines():
        if line.startswith("timings: "):
            return json.loads(line[len("timings: ") :])
    return {}


def copy_sources(tree: Path, destination: Path) -> Path:
    """The tree's Python files and notebooks, copied under `destination` (timestamps kept)."""
    target = destination / tree.name
    for path in tree.rglob("*"):
        if path.suffix in (".py", ".ipynb") and path.is_file():
            copy = target / path.relative_to(tree)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
    return target


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(command: Sequence[str], cwd: Path) -> tuple:
    """(wall, CPU) of one run of a command, timed directly (measure()'s wrapper process would
    add its own start-up); its CPU is what the finished child adds to this process's children."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cpu, started = _children_cpu(), time.perf_counter()
    completed = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    assert completed.returncode == 0, completed.stderr
    return wall, _children_cpu() - cpu


def timed_runs(command: Sequence[str], cwd: Path, repeat: int = 7) -> dict:
    """The median and best wall time (and the median CPU time) of a command after a warm-up
    run (which writes the .pyc files a normal install has, and fills the cache)."""
    timed_run(command, cwd)
    runs = [timed_run(command, cwd) for _ in range(repeat)]
    walls = sorted(wall for wall, _ in runs)
    return {"median_wall": walls[len(walls) // 2], "best_wall": walls[0], "median_cpu": statistics.median(c for _, c in runs)}


def startup_pairs(project: Path, name: str, pairs: int) -> dict:
    """`python -c "import libcst"` and one small file with `--no-cache` end to end, alternated
    `pairs` times (the two runs of a pair see the same machine load): each pair's ratios of wall
    and of CPU time, with the load average."""
    work = Path(tempfile.mkdtemp(prefix="torchdet-bench-"))
    try:
        copy = copy_sources(project, work)
        (copy / "pyproject.toml").write_text("", encoding="utf-8")
        ours = [console_script(), str(copy / name), "--exit-zero", "--quiet", "--no-cache"]
        floor = [sys.executable, "-c", "import libcst"]
        timed_run(ours, work), timed_run(floor, work)  # warm-up: .pyc files and the start-up caches
        wall_ratios, cpu_ratios, loads = [], [], []
        for _ in range(pairs):
            (wall, cpu), (floor_wall, floor_cpu) = timed_run(ours, work), timed_run(floor, work)
            wall_ratios.append(wall / max(floor_wall, 1e-9))
            cpu_ratios.append(cpu / max(floor_cpu, 1e-9))
            loads.append(os.getloadavg()[0])
        return {"wall_ratios": wall_ratios, "cpu_ratios": cpu_ratios, "load": [min(loads), max(loads)]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def console_script() -> str:
    script = Path(sys.executable).with_name("torchdet-lint")
    return str(script) if script.exists() else shutil.which("torchdet-lint")


def bench_tree(tree: Path, cores: int, torchfix_jobs: Sequence[int], named: Optional[str] = None, pairs: int = 1) -> dict:
    """Every measurement of one tree, each in a fresh process, on a copy of the tree in a
    scratch working directory (the project root). The bare parse and the cold one-job lint
    run one after the other `pairs` times; the pair with the median ratio is kept (on a
    shared machine both drift together over minutes, so a ratio within a pair is steadier
    than either time)."""
    work = Path(tempfile.mkdtemp(prefix="torchdet-bench-"))
    try:
        report = {"tree": str(tree)}
        tree = copy_sources(tree, work)
        # A marker makes the scratch directory the project root, where the cache lives (with no
        # marker the root would be the named tree itself, and "cold" runs would find its cache).
        (work / "pyproject.toml").write_text("", encoding="utf-8")
        cache = work / ".torchdet_lint_cache"
        measured = []
        for _ in range(pairs):
            bare = measure([sys.executable, "-c", _BARE_PARSE, str(tree)], cwd=work)
            shutil.rmtree(cache, ignore_errors=True)
            measured.append((bare, measure(lint_command(tree, 1), cwd=work)))

        def ratio(pair) -> float:  # the lint's CPU over the parse's own CPU (as printed)
            return pair[1]["cpu"] / max(json.loads(pair[0]["stdout"])["cpu"], 1e-9)

        measured.sort(key=ratio)
        bare, result = measured[(len(measured) - 1) // 2]
        report["bare_parse"] = {**json.loads(bare["stdout"]), "peak_mb": bare["peak_mb"], "wall": bare["wall"]}
        report["cold_1_job"] = {k: result[k] for k in ("wall", "cpu", "peak_mb", "returncode")} | {
            "phases": phases(result["stderr"])
        }
        report["cold_1_job_ratios"] = [ratio(pair) for pair in measured]
        shutil.rmtree(cache, ignore_errors=True)
        result = measure(lint_command(tree, cores), cwd=work)
        report[f"cold_{cores}_jobs"] = {k: result[k] for k in ("wall", "cpu", "peak_mb", "returncode")} | {
            "phases": phases(result["stderr"])
        }
        result = measure(lint_command(tree, cores), cwd=work)
        report["warm"] = {k: result[k] for k in ("wall", "cpu", "peak_mb", "returncode")} | {"phases": phases(result["stderr"])}
        if named and (tree / named).is_file():
            # Nothing changed, the warm run answers from its record; after an edit of one file the
            # project phase runs again over the cached summaries: what a user waits for while coding.
            with open(tree / named, "a", encoding="utf-8") as edited:
                edited.write("\n# edited by the benchmark\n")
            result = measure(lint_command(tree, cores), cwd=work)
            report["warm_after_edit"] = {k: result[k] for k in ("wall", "cpu", "returncode")} | {
                "phases": phases(result["stderr"])
            }
        # The report against check with the default selection (which contains every code the
        # report needs, so the two share the cache), cold and then warm. A warm run takes a few
        # seconds, where one scheduling hiccup shows: warm runs alternate, three each, median.
        for state, repeat in (("cold", 1), ("warm", 3)):
            check_walls, report_walls = [], []
            for _ in range(repeat):
                if state == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
                check_walls.append(measure(default_check_command(tree, cores), cwd=work)["wall"])
                if state == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
                report_walls.append(measure(report_command(tree, cores), cwd=work)["wall"])
            report[f"report_{state}"] = {
                "check_wall": statistics.median(check_walls),
                "report_wall": statistics.median(report_walls),
            }
        if named and (tree / named).is_file():
            # The rule selection of the warm run: its results and summaries are in the cache.
            command = [console_script(), str(tree / named), "--select", "ALL", "--exit-zero", "--quiet"]
            report["named_in_warm_tree"] = {"file": f"{tree.name}/{named}", **timed_runs(command, work)}
            if pairs > 1:
                report["named_in_warm_tree"]["pair_ratios"] = named_pairs(command, work, pairs)
        if torchfix_jobs:
            executable = ensure_torchfix()
            for jobs in torchfix_jobs:
                result = measure([str(executable), "--select", "ALL", "--jobs", str(jobs), str(tree)], cwd=work)
                report[f"torchfix_{jobs}_jobs"] = {k: result[k] for k in ("wall", "cpu", "peak_mb", "returncode")}
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def named_pairs(command: Sequence[str], cwd: Path, pairs: int) -> list:
    """The named file in the warm tree over one small file end to end, alternated `pairs`
    times (each pair's two runs see the same machine load): the ratio of each pair."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    small_work = Path(tempfile.mkdtemp(prefix="torchdet-bench-"))
    try:
        small = copy_sources(ROOT / "examples", small_work)
        small_command = [console_script(), str(small / "train.py"), "--exit-zero", "--quiet"]
        ratios = []
        for _ in range(pairs):
            walls = []
            for each, where in ((command, cwd), (small_command, small_work)):
                started = time.perf_counter()
                subprocess.run(each, env=env, cwd=where, capture_output=True)
                walls.append(time.perf_counter() - started)
            ratios.append(walls[0] / max(walls[1], 1e-9))
        return ratios
    finally:
        shutil.rmtree(small_work, ignore_errors=True)


def one_file(project: Path, name: str, repeat: int = 7) -> dict:
    """The installed console script on one file of a small project, as a user, pre-commit
    or an editor runs it (the project's other files from a warm cache)."""
    work = Path(tempfile.mkdtemp(prefix="torchdet-bench-"))
    try:
        copy = copy_sources(project, work)
        command = [console_script(), str(copy / name), "--exit-zero", "--quiet"]
        # --no-cache: the file is parsed and analysed every time (an edited file, as
        # pre-commit and editors see it), so LibCST is imported and used.
        uncached = timed_runs(command + ["--no-cache"], work, repeat)
        return {"file": f"{project.name}/{name}", **timed_runs(command, work, repeat), "no_cache": uncached}
    finally:
        shutil.rmtree(work, ignore_errors=True)


class LspClient:
    """A language client over the server's stdio, JSON-RPC framed by hand (no client library's
    start-up in the way): a reader thread stamps every message with its arrival time."""

    def __init__(self, command: Sequence[str], cwd: Path, root: Path) -> None:
        import queue
        import threading

        self.started = time.perf_counter()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed tool runs
        self.process = subprocess.Popen(
            list(command), cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.messages: "queue.Queue" = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        uri = root.as_uri()
        self.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": uri, "capabilities": {}, "workspaceFolders": [{"uri": uri, "name": root.name}]},
        )
        self.notify("initialized", {})

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put((time.perf_counter(), json.loads(stream.read(length))))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params) -> object:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            _, message = self.messages.get(timeout=120)
            if message.get("id") == self.next_id and "method" not in message:
                return message.get("result")

    def diagnostics(self, uri: str, version: Optional[int] = None) -> tuple:
        """(arrival time, diagnostics) of the next publish for `uri` (of `version`, when given)."""
        while True:
            arrived, message = self.messages.get(timeout=120)
            params = message.get("params") or {}
            if message.get("method") == "textDocument/publishDiagnostics" and params.get("uri") == uri:
                if version is None or params.get("version") == version:
                    return arrived, params["diagnostics"]

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def process_cpu(pid: int) -> Optional[float]:
    """The CPU time a running process has used so far (Linux: /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def editor_session(command: Sequence[str], root: Path, name: str, edits: int = 0) -> dict:
    """Server process start to the first diagnostics of one opened file; then `edits` edits
    (a line added and removed in turn), each timed from the change to its diagnostics."""
    path = root / name
    text = path.read_text(encoding="utf-8")
    client = LspClient(command, root, root)
    try:
        uri = path.as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
        arrived, first = client.diagnostics(uri)
        cpu = process_cpu(client.process.pid)
        report = {"open": arrived - client.started, "open_cpu": cpu, "first_count": len(first), "edits": []}
        for version in range(2, edits + 2):
            new_text = text + ("x = 1\n" if version % 2 == 0 else "")
            sent = time.perf_counter()
            client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": new_text}]},
            )
            arrived, _ = client.diagnostics(uri, version)
            report["edits"].append(arrived - sent)
        return report
    finally:
        client.close()


def editor_measures(project: Path, name: str, repeat: int = 7, edits: int = 10) -> dict:
    """The language server on one file of a small project, as an editor meets it: process
    start to the first diagnostics with a cold cache and with a warm one, and edit to
    diagnostics (the debounce included); `ruff server` on the same file beside it."""
    work = Path(tempfile.mkdtemp(prefix="torchdet-bench-"))
    try:
        root = copy_sources(project, work)
        (root / "pyproject.toml").write_text("", encoding="utf-8")
        cache = root / ".torchdet_lint_cache"
        ours = [sys.executable, "-m", "torchdet_lint", "server"]
        report: dict = {"file": f"{project.name}/{name}"}
        cold, warm, edit_times, counts, cold_cpu, loads = [], [], [], set(), [], []
        editor_session(ours, root, name)  # warm-up: .pyc files and the start-up caches, as an installed tool has them
        for _ in range(repeat):
            shutil.rmtree(cache, ignore_errors=True)
            session = editor_session(ours, root, name)
            cold.append(session["open"])
            if session["open_cpu"] is not None:
                cold_cpu.append(session["open_cpu"])
            loads.append(os.getloadavg()[0])
            counts.add(session["first_count"])
            session = editor_session(ours, root, name, edits)
            warm.append(session["open"])
            counts.add(session["first_count"])
            edit_times.extend(session["edits"])
        report["ours"] = {
            "open_cold_cache": statistics.median(cold),
            "open_cold_cache_cpu": statistics.median(cold_cpu) if cold_cpu else None,
            "load": [min(loads), max(loads)],
            "open_warm_cache": statistics.median(warm),
            "edit": statistics.median(edit_times),
            "first_counts": sorted(counts),
        }
        ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
        if ruff:
            opens, ruff_edits = [], []
            editor_session([ruff, "server"], root, name)
            for _ in range(repeat):
                session = editor_session([ruff, "server"], root, name, edits)
                opens.append(session["open"])
                ruff_edits.extend(session["edits"])
            report["ruff"] = {"open": statistics.median(opens), "edit": statistics.median(ruff_edits)}
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def libcst_import(repeat: int = 7) -> dict:
    """`python -c "import libcst"`: the floor under any LibCST tool's start-up."""
    return timed_runs([sys.executable, "-c", "import libcst"], ROOT, repeat)


def print_report(report: dict, cores: int) -> None:
    bare = report["bare_parse"]
    cold1, coldn, warm = report["cold_1_job"], report[f"cold_{cores}_jobs"], report["warm"]
    print(f"\n== {report['tree']}")
    print(
        f"files parsed {bare['parsed']}, skipped by the pre-filter {bare['skipped']}, "
        f"unparsable {bare['failed']}, {bare['lines']} lines parsed"
    )
    print(f"bare LibCST parse        cpu {bare['cpu']:8.2f} s   peak {bare['peak_mb']:7.0f} MB")
    print(
        f"torchdet-lint cold -j1   cpu {cold1['cpu']:8.2f} s   wall {cold1['wall']:7.2f} "
        f"s   peak {cold1['peak_mb']:7.0f} MB   phases {cold1['phases']}"
    )
    print(
        f"torchdet-lint cold -j{cores}   cpu {coldn['cpu']:8.2f} s   "
        f"wall {coldn['wall']:7.2f} s   peak {coldn['peak_mb']:7.0f} MB"
    )
    print(f"torchdet-lint warm -j{cores}   cpu {warm['cpu']:8.2f} s   wall {warm['wall']:7.2f} s   phases {warm['phases']}")
    print(f"  cold -j1 / bare parse (CPU):        {cold1['cpu'] / max(bare['cpu'], 1e-9):6.2f}x   (target <= 1.1)")
    if len(report.get("cold_1_job_ratios", ())) > 1:
        print(
            f"    (median of {len(report['cold_1_job_ratios'])} pairs: "
            f"{', '.join(f'{r:.2f}x' for r in report['cold_1_job_ratios'])})"
        )
    print(f"  parallel speed-up (wall, -j1/-j{cores}):  {cold1['wall'] / max(coldn['wall'], 1e-9):6.2f}x   (target >= 1.8)")
    print(f"  warm / cold -j{cores} (wall):             {warm['wall'] / max(coldn['wall'], 1e-9):6.1%}   (target <= 5%)")
    edited = report.get("warm_after_edit")
    if edited:
        print(
            f"  warm after one file edited (wall):  {edited['wall']:6.2f} s, "
            f"{edited['wall'] / max(coldn['wall'], 1e-9):6.1%} of cold   phases {edited['phases']}"
        )
    print(f"  peak memory / bare parse:           {cold1['peak_mb'] / max(bare['peak_mb'], 1e-9):6.2f}x   (target <= 1.0)")
    for state in ("cold", "warm"):
        timing = report.get(f"report_{state}")
        if timing:
            ratio = timing["report_wall"] / max(timing["check_wall"], 1e-9)
            print(
                f"  report / check, {state} (wall):      {ratio:6.2f}x   (report {timing['report_wall']:.2f} s, "
                f"check {timing['check_wall']:.2f} s; target <= 1.1)"
            )
    ours = {1: cold1, cores: coldn}
    for key in sorted(k for k in report if k.startswith("torchfix_")):
        jobs = int(key.split("_")[1])
        torchfix = report[key]
        print(
            f"TorchFix -j{jobs}             cpu {torchfix['cpu']:8.2f} s   wall "
            f"{torchfix['wall']:7.2f} s   peak {torchfix['peak_mb']:7.0f} MB"
        )
        if jobs in ours:
            print(
                f"  TorchFix / torchdet-lint, -j{jobs} (wall):  "
                f"{torchfix['wall'] / max(ours[jobs]['wall'], 1e-9):6.1f}x   (target >= 5)"
            )


def compile_package() -> None:
    """Write the measured package's bytecode, as `pip install` does. A process that finds a `.pyc`
    missing or older than its source compiles the module again (about 3 ms for a small one), and
    never saves it under `PYTHONDONTWRITEBYTECODE`: measured from a fresh checkout, every start-up
    would carry the compilation of the whole package."""
    spec = importlib.util.find_spec("torchdet_lint")
    if spec is not None and spec.origin:
        compileall.compile_dir(str(Path(spec.origin).parent), quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tree", action="append", type=Path, help="a tree to measure (default: the installed torch and examples/)"
    )
    parser.add_argument("--no-torchfix", action="store_true", help="skip the TorchFix comparison")
    parser.add_argument(
        "--torchfix-jobs",
        type=lambda text: [int(part) for part in text.split(",")],
        help="TorchFix's job counts, e.g. 1 (default: 1 and all cores; the whole torch tree takes it ~40 min per count)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--named", default="nn/functional.py", help="the file named inside each warm tree (relative to it)")
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="alternate the bare parse and the cold one-job lint this many times, keep the median ratio",
    )
    parser.add_argument("--startup-only", action="store_true", help="only the one-file run against the LibCST import")
    parser.add_argument(
        "--editor-only", action="store_true", help="only the language server's measures against the LibCST import"
    )
    args = parser.parse_args()
    compile_package()
    if args.editor_only:
        floor = libcst_import()
        editor = editor_measures(ROOT / "examples", "train.py")
        print_editor(editor, floor)
        if args.json:
            args.json.write_text(json.dumps({"editor": editor, "libcst_import": floor}, indent=2))
        return 0
    cores = len(os.sched_getaffinity(0))
    trees = [] if args.startup_only else (args.tree or [torch_tree(), ROOT / "examples"])
    reports = []
    for tree in trees:
        torchfix_jobs = [] if args.no_torchfix else (args.torchfix_jobs or [1, cores])
        report = bench_tree(tree.resolve(), cores, torchfix_jobs, args.named, max(1, args.pairs))
        print_report(report, cores)
        reports.append(report)
    # Interleaved in one run, so both see the same machine load.
    floor = libcst_import()
    small = one_file(ROOT / "examples", "train.py")
    print(
        f"\n== one small file end to end: {small['file']}: median {small['median_wall']:.3f} s, best {small['best_wall']:.3f} s"
    )
    uncached = small["no_cache"]
    print(
        "== the same file with --no-cache (parsed and analysed): median "
        f"{uncached['median_wall']:.3f} s, best {uncached['best_wall']:.3f} s"
    )
    print(
        f"== python -c 'import libcst': median {floor['median_wall']:.3f} s, best {floor['best_wall']:.3f} s: "
        f"one file --no-cache / LibCST import {uncached['median_wall'] / max(floor['median_wall'], 1e-9):.2f}x (target <= 1.2), "
        f"cached {small['median_wall'] / max(floor['median_wall'], 1e-9):.2f}x"
    )
    if args.pairs > 1:
        pairs = startup_pairs(ROOT / "examples", "train.py", args.pairs)
        print(
            f"== alternated with import libcst, {args.pairs} pairs (load average {pairs['load'][0]:.1f}-{pairs['load'][1]:.1f}): "
            f"one file --no-cache / LibCST import: wall {statistics.median(pairs['wall_ratios']):.2f}x "
            f"({min(pairs['wall_ratios']):.2f}-{max(pairs['wall_ratios']):.2f}), CPU "
            f"{statistics.median(pairs['cpu_ratios']):.2f}x ({min(pairs['cpu_ratios']):.2f}-{max(pairs['cpu_ratios']):.2f}) "
            "(target <= 1.2)"
        )
        small["pairs"] = pairs
    for report in reports:
        named = report.get("named_in_warm_tree")
        if named:
            ratio = named["median_wall"] / max(small["median_wall"], 1e-9)
            print(
                f"== one file named inside the warm tree: {named['file']}: median {named['median_wall']:.3f} s, "
                f"best {named['best_wall']:.3f} s: {ratio:.2f}x the one small file (target <= 2.0)"
            )
            if named.get("pair_ratios"):
                ratios = named["pair_ratios"]
                print(
                    f"   alternated with the small file, {len(ratios)} pairs: median {statistics.median(ratios):.2f}x "
                    f"({', '.join(f'{r:.2f}x' for r in ratios)})"
                )
    editor = editor_measures(ROOT / "examples", "train.py")
    print_editor(editor, floor)
    if args.json:
        args.json.write_text(
            json.dumps({"trees": reports, "one_file": small, "libcst_import": floor, "editor": editor}, indent=2)
        )
    return 0


def print_editor(editor: dict, floor: dict) -> None:
    ours = editor["ours"]
    libcst = max(floor["median_wall"], 1e-9)
    if ours.get("open_cold_cache_cpu") is not None:
        print(
            f"== language server: CPU of the server process at its first diagnostics (cold cache): "
            f"{ours['open_cold_cache_cpu']:.3f} s, "
            f"{ours['open_cold_cache_cpu'] / max(floor['median_cpu'], 1e-9):.2f}x the CPU of import libcst "
            f"({floor['median_cpu']:.3f} s); load average {ours['load'][0]:.1f}-{ours['load'][1]:.1f}"
        )
    print(
        f"== language server, {editor['file']}: server start -> first diagnostics, median: cold cache "
        f"{ours['open_cold_cache']:.3f} s ({ours['open_cold_cache'] / libcst:.2f}x import libcst), warm cache "
        f"{ours['open_warm_cache']:.3f} s ({ours['open_warm_cache'] / libcst:.2f}x) (target <= 0.5 s and <= 2x); "
        f"edit -> diagnostics {ours['edit'] * 1000:.0f} ms (target <= 250 ms); first publish carried "
        f"{'/'.join(map(str, ours['first_counts']))} diagnostics"
    )
    ruff = editor.get("ruff")
    if ruff:
        print(
            f"== ruff server, the same file: start -> first diagnostics {ruff['open']:.3f} s, "
            f"edit -> diagnostics {ruff['edit'] * 1000:.0f} ms"
        )


if __name__ == "__main__":
    sys.exit(main())
