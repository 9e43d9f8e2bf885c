"""Never crash on bad input: each bad file is one clear TDL000 (or is linted), the run goes on, no traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"


def _lint(directory: Path, *args: str):
    code, out, err = run_cli(".", "--output-format", "json", "--no-cache", *args, cwd=directory, timeout=300)
    assert "Traceback" not in err, err
    assert code in (0, 1), err
    return {(d["path"], d["code"]): d for d in json.loads(out)}, json.loads(out)


BAD_FILES = {
    "syntax.py": (b"import torch\ndef f(:\n", "syntax error"),
    "undecodable.py": (b"import torch\nx = '\xff\xfe\xfa'\n", "cannot decode"),
    "nul.py": (b"import torch\nx = 1\x00\n", "null bytes"),
    "minus.py": (b"import torch\nx = " + b"-" * 100_000 + b"1\n", "too deeply nested"),
    "parens.py": (b"import torch\nx = " + b"(" * 1000 + b"1" + b")" * 1000 + b"\n", "too many nested parentheses"),
    "calls.py": (b"import torch\nx = " + b"f(" * 5000 + b"1" + b")" * 5000 + b"\n", "syntax error"),
}

GOOD_FILES = {
    "latin1.py": b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\ntorch.backends.cudnn.benchmark = True\n",
    "bom.py": b"\xef\xbb\xbfimport torch\ntorch.backends.cudnn.benchmark = True\n",
    "crlf.py": b"import torch\r\n\r\ntorch.backends.cudnn.benchmark = True\r\n",
    "cr.py": b"import torch\r\rtorch.backends.cudnn.benchmark = True\r",
    "tabs.py": b"import torch\nif True:\n\ttorch.backends.cudnn.benchmark = True\n",
    "sum.py": b"import torch\ntorch.backends.cudnn.benchmark = True\nx = " + b" + ".join([b"a"] * 1000) + b"\n",
    "empty.py": b"",
}


def test_bad_inputs_are_tdl000_and_good_ones_are_linted(tmp_path: Path) -> None:
    for name, (data, _) in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    for name, data in GOOD_FILES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "dir.py").mkdir()  # a directory named like a module
    (tmp_path / "broken_link.py").symlink_to(tmp_path / "does_not_exist.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    found, everything = _lint(tmp_path)
    for name, (_, reason) in BAD_FILES.items():
        assert reason in found[(name, "TDL000")]["message"], (name, found.get((name, "TDL000")))
    for name in ("broken_link.py", "loop_a.py", "loop_b.py"):
        assert "cannot read" in found[(name, "TDL000")]["message"]
    for name in GOOD_FILES:
        if name != "empty.py":
            assert (name, "TDL301") in found, name
    assert found[("latin1.py", "TDL301")]["line"] == 4
    assert found[("cr.py", "TDL301")]["line"] == 3
    assert not any(path in ("empty.py", "dir.py") for path, _ in found)
    assert len([d for d in everything if d["code"] == "TDL000"]) == len(BAD_FILES) + 3


def test_explicit_directory_named_like_a_file(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_text(HAZARD)
    code, out, err = run_cli("pkg.py", "--output-format", "concise", cwd=tmp_path)
    assert code == 1 and out.startswith("pkg.py/inner.py:2:1: TDL301"), (out, err)


def test_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / "secret.py").write_text(HAZARD)
    (tmp_path / "ok.py").write_text(HAZARD)
    os.chmod(tmp_path / "secret.py", 0)
    command = [sys.executable, "-m", "torchdet_lint", ".", "--output-format", "concise", "--no-cache"]
    if os.geteuid() == 0:
        # root reads everything: drop the capabilities that bypass file permissions
        setpriv = shutil.which("setpriv")
        assert setpriv, "util-linux setpriv is needed to test permissions as root"
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *command]
    completed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert "Traceback" not in completed.stderr, completed.stderr
    assert "secret.py:1:1: TDL000 cannot read: Permission denied" in completed.stdout, completed.stdout + completed.stderr
    assert "ok.py:2:1: TDL301" in completed.stdout


def test_ten_megabyte_generated_file(tmp_path: Path) -> None:
    """LibCST needs about 7 GB to parse 10 MB: such a file is one TDL000, the run goes on, memory stays low."""
    line = "x{0} = torch.zeros(3) + {0}\n"
    body = "".join(line.format(i) for i in range(330_000))
    (tmp_path / "generated.py").write_text("import torch\n" + body + "torch.backends.cudnn.benchmark = True\n")
    (tmp_path / "train.py").write_text(HAZARD)
    assert (tmp_path / "generated.py").stat().st_size > 10_000_000
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.argv = ['torchdet-lint', '.', '--no-cache', '--output-format', 'concise']\n"
            "from torchdet_lint.cli import main\ncode = main()\n"
            # VmHWM, not ru_maxrss: Linux carries the parent's (pytest's) peak across exec into ru_maxrss
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
            "print('peak_mb', int(hwm) // 1024, file=sys.stderr)\nsys.exit(code)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 1, completed.stderr
    assert re.search(r"generated\.py:1:1: TDL000 not analysed: 1\d\.\d MB is over the 5 MB limit", completed.stdout)
    assert "train.py:2:1: TDL301" in completed.stdout
    peak = int(completed.stderr.split("peak_mb")[1].split()[0])
    assert peak < 400, peak


def _copy_project(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".torchdet_lint_cache", "__pycache__"))
    return target


@pytest.mark.parametrize("variant", ["hashseed", "jobs", "order"])
def test_output_is_byte_identical(tmp_path: Path, variant: str) -> None:
    project = _copy_project(ROOT / "examples", tmp_path / "examples")
    for i in range(20):  # enough files for the process pool to be used
        (project / f"extra_{i}.py").write_text(HAZARD + f"torch.use_deterministic_algorithms(True, warn_only=True)  # {i}\n")
    base = ["--output-format", "json", "--no-cache", "--select", "ALL"]
    reference = run_cli(".", *base, "--jobs", "1", cwd=project, env={"PYTHONHASHSEED": "0"})[1]
    assert reference.count('"code"') > 20
    if variant == "hashseed":
        others = [
            run_cli(".", *base, "--jobs", "1", cwd=project, env={"PYTHONHASHSEED": seed})[1] for seed in ("1", "12345", "random")
        ]
    elif variant == "jobs":
        others = [run_cli(".", *base, "--jobs", "2", cwd=project, env={"PYTHONHASHSEED": "7"})[1]]
    else:
        names = sorted(str(p.relative_to(project)) for p in project.rglob("*.py"))
        others = [run_cli(*reversed(names), *base, cwd=project)[1], run_cli(*names[::2], *names[1::2], *base, cwd=project)[1]]
    for other in others:
        assert other == reference


@pytest.mark.parametrize("enabled_before", [True, False])
def test_linting_leaves_the_cycle_collector_as_the_host_had_it(enabled_before: bool) -> None:
    """The engine pauses the collector per file; a host (flake8, the editor) must get its setting back."""
    import gc

    from torchdet_lint.testing import lint_sources

    was = gc.isenabled()
    try:
        gc.enable() if enabled_before else gc.disable()
        diagnostics = lint_sources({"train.py": "import torch\ntorch.backends.cudnn.benchmark = True\n"})
        assert any(d.code == "TDL301" for d in diagnostics)
        assert gc.isenabled() is enabled_before
    finally:
        gc.enable() if was else gc.disable()


def test_a_run_hands_every_object_it_froze_back_to_the_collector() -> None:
    """The results a run keeps are frozen out of the collector's sight while it runs (and a large
    file's freed memory is handed back); a long-lived host (the language server) drops them for
    the next run's, so none stays frozen after it."""
    import gc

    from torchdet_lint.testing import lint_sources

    big = "import torch\n" + "".join(f"def f{i}(x):\n    return torch.index_add(x, 0, x, x)\n" for i in range(3000))
    assert len(big) > 100_000  # past the size after which the run hands memory back
    gc.unfreeze()
    diagnostics = lint_sources({"big.py": big, "train.py": "import torch\ntorch.backends.cudnn.benchmark = True\n"})
    assert gc.get_freeze_count() == 0
    assert any(d.code == "TDL301" for d in diagnostics)


def test_a_keyword_dict_with_keys_that_are_not_identifiers(tmp_path: Path) -> None:
    """`**{"np.bool_": ...}` can only reach a **kwargs parameter: it is not taken for keywords (it crashed once)."""
    (tmp_path / "train.py").write_text(
        'import numpy as np\nfrom torch.utils.data import DataLoader\n\naliases = {"np.bool_": np.bool_}\n\n\n'
        'def main(ds):\n    options = {"shuffle": True, "np.float_": 1}\n'
        "    DataLoader(ds, **options)\n    register(**aliases)\n",
        encoding="utf-8",
    )
    code, out, err = run_cli("--output-format", "concise", "--no-cache", "train.py", cwd=tmp_path)
    assert code == 1 and "internal error" not in err, err
    assert "train.py:9:5: TDL101" in out
