"""The performance profile (TDL401-TDL407): fixed programs run on the real torch
and compute what they computed before, profiles select the right rules through
the real command line, and the rule documentation states the expected speed-up
and when the advice does not apply.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli_in_process

from torchdet_lint.checks import all_rules
from torchdet_lint.testing import lint_sources

PERFORMANCE_CODES = [code for code in all_rules() if code.startswith("TDL4")]
RUNNABLE = sorted(FIXTURES.glob("TDL4[0-9][0-9]/runnable.py"))


def _run_program(path: Path, cwd: Path) -> str:
    completed = subprocess.run([sys.executable, str(path)], cwd=str(cwd), capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, f"{path.name} failed:\n{completed.stderr}"
    return completed.stdout


def test_every_fixable_performance_rule_has_a_runnable_fixture() -> None:
    fixable = {code for code in PERFORMANCE_CODES if all_rules()[code].fix_availability.value != "none"}
    assert fixable == {path.parent.name for path in RUNNABLE}


@pytest.mark.slow  # runs each program on torch, before and after the fix
@pytest.mark.parametrize("program", RUNNABLE, ids=lambda p: p.parent.name)
def test_fixed_program_runs_and_computes_the_same(program: Path, tmp_path: Path) -> None:
    """The reviewed `.fixed.py` expectation (what the real fixer produces, checked by
    test_fixtures) runs on the CPU torch and prints exactly what the original printed."""
    fixed = program.with_name("runnable.fixed.py")
    assert fixed.exists(), f"{fixed} is missing: run pytest --update-fixtures"
    assert fixed.read_text() != program.read_text()
    shutil.copy(program, tmp_path / "before.py")
    shutil.copy(fixed, tmp_path / "after.py")
    before = _run_program(tmp_path / "before.py", tmp_path)
    after = _run_program(tmp_path / "after.py", tmp_path)
    assert before.strip(), "the program prints nothing to compare"
    assert after == before


def test_fixed_programs_are_clean(tmp_path: Path) -> None:
    """After the fix, the rule has nothing left to say about the runnable programs."""
    for program in RUNNABLE:
        code = program.parent.name
        target = tmp_path / code / "runnable.py"
        target.parent.mkdir()
        shutil.copy(program.with_name("runnable.fixed.py"), target)
        exit_code, out, err = cli_in_process(
            "--select", code, "--no-cache", "--output-format", "concise", str(target), cwd=tmp_path
        )
        assert exit_code == 0, out + err


def test_tdl401_fix_is_unsafe_because_memory_is_shared() -> None:
    """What TDL401's fix safety section says, checked on the real torch: `as_tensor`
    shares the array's memory where `tensor` copied it, and raises on negative strides."""
    program = (
        "import numpy as np, torch\n"
        "a = np.zeros(3)\n"
        "copied, shared = torch.tensor(a), torch.as_tensor(a)\n"
        "a[0] = 7.0\n"
        "print(copied[0].item(), shared[0].item())\n"
        "try:\n"
        "    torch.as_tensor(np.arange(3.0)[::-1])\n"
        "except ValueError:\n"
        "    print('negative strides raise')\n"
    )
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split("\n")[:2] == ["0.0 7.0", "negative strides raise"]


def test_tdl405_replacements_exist_in_torch() -> None:
    """The names TDL405's fix writes are real, and take "cuda" first."""
    program = (
        "import warnings, torch\n"
        "warnings.simplefilter('ignore')\n"
        "with torch.amp.autocast('cuda', enabled=False, dtype=torch.bfloat16, cache_enabled=True):\n"
        "    pass\n"
        "scaler = torch.amp.GradScaler('cuda', 2.0**10, 2.0, 0.5, 100, enabled=False)\n"
        "print(type(scaler).__module__, scaler.is_enabled())\n"
    )
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "torch.amp.grad_scaler False"


# -- profiles through the real command line ---------------------------------------------------

_PROJECT = {
    "train.py": (
        "import numpy as np\n"
        "import torch\n"
        "from torch import nn\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "\n"
        "def evaluate(model, x):\n"
        "    model.eval()\n"
        "    return model(x)\n"
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    torch.backends.cudnn.benchmark = True\n"
        '    data = torch.tensor(np.load("data.npy"))\n'
        "    noise = torch.zeros(8).cuda()\n"
        "    loader = DataLoader(data, batch_size=4)\n"
        "    model = nn.DataParallel(nn.Conv2d(3, 8, 3).cuda())\n"
        "    scaler = torch.cuda.amp.GradScaler()\n"
        "    for batch in loader:\n"
        "        with torch.cuda.amp.autocast():\n"
        "            model(batch.cuda()).sum().backward()\n"
    ),
    "infer.py": (
        "import torch\n"
        "from torch import nn\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    model = nn.Conv2d(3, 8, 3).cuda()\n"
        "    print(model(torch.randn(1, 3, 8, 8).cuda()))\n"
    ),
}


def _write_project(root: Path) -> None:
    for name, text in _PROJECT.items():
        (root / name).write_text(text)


def _codes(root: Path, *args: str):
    exit_code, out, err = cli_in_process(*args, "--output-format", "json", "--no-cache", str(root), cwd=root)
    assert exit_code in (0, 1), err
    return {d["code"] for d in json.loads(out)}, err


def test_performance_profile_turns_tdl4_on_and_tdl301_off(tmp_path: Path) -> None:
    _write_project(tmp_path)
    codes, err = _codes(tmp_path, "--profile", "performance")
    assert {"TDL401", "TDL402", "TDL403", "TDL404", "TDL405", "TDL406", "TDL407"} <= codes
    assert "TDL301" not in codes
    assert "TDL301" not in err and "TDL406" not in err  # no opposing-rules warning


@pytest.mark.parametrize("profile", ["reproducible", "strict"])
def test_other_profiles_never_report_tdl4(tmp_path: Path, profile: str) -> None:
    _write_project(tmp_path)
    codes, _ = _codes(tmp_path, "--profile", profile)
    assert "TDL301" in codes  # the project does trip the reproducibility rules
    assert not {code for code in codes if code.startswith("TDL4")}


def test_default_profile_never_reports_tdl4(tmp_path: Path) -> None:
    _write_project(tmp_path)
    codes, _ = _codes(tmp_path)
    assert not {code for code in codes if code.startswith("TDL4")}


@pytest.mark.parametrize(
    "args",
    [("--select", "TDL"), ("--select", "TDL301,TDL406"), ("--profile", "performance", "--extend-select", "TDL301")],
    ids=["select-all", "select-both", "performance-plus-301"],
)
def test_opposing_rules_warn_once_and_both_report(tmp_path: Path, args) -> None:
    _write_project(tmp_path)
    codes, err = _codes(tmp_path, *args)
    assert {"TDL301", "TDL406"} <= codes
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert "TDL301" in warnings[0] and "TDL406" in warnings[0]
    assert "reproducibility" in warnings[0] and "speed" in warnings[0]


def test_select_tdl4_reports_only_performance_rules(tmp_path: Path) -> None:
    _write_project(tmp_path)
    codes, err = _codes(tmp_path, "--select", "TDL4")
    assert codes == {"TDL401", "TDL402", "TDL403", "TDL404", "TDL405", "TDL406", "TDL407"}
    assert "warning:" not in err


def test_rule_metadata_lists_only_the_performance_profile() -> None:
    for code in PERFORMANCE_CODES:
        assert all_rules()[code].profiles == frozenset({"performance"}), code
        assert not all_rules()[code].is_default()
    assert "performance" not in all_rules()["TDL301"].profiles


# -- documentation ---------------------------------------------------------------------------

# A speed-up stated as a factor, a percentage or a cost (1.5-3x, 10-30%, O(n), 1 ms).
_SPEED_UP = re.compile(r"\d(?:\.\d+)?(?:-\d(?:\.\d+)?)?x\b|\d+%|O\(\w+\)|\d+\s?ms\b")


@pytest.mark.parametrize("code", PERFORMANCE_CODES)
def test_documentation_states_speed_up_and_limits(code: str) -> None:
    doc = all_rules()[code].documentation()
    why = all_rules()[code].doc_section("Why is this bad?")
    assert _SPEED_UP.search(why), f"{code}: `Why is this bad?` does not say what speed-up to expect"
    assert re.search(r"does not apply|nothing to gain|negligible|not reported", doc), (
        f"{code}: the documentation does not say when the advice does not apply"
    )


def test_cudnn_benchmark_documentation_covers_varying_shapes() -> None:
    doc = all_rules()["TDL406"].documentation()
    assert "shapes vary" in doc and "TDL301" in doc


def test_rule_command_renders_performance_docs() -> None:
    for code in PERFORMANCE_CODES:
        exit_code, out, err = cli_in_process("rule", code, cwd=ROOT)
        assert exit_code == 0, err
        assert out.startswith(f"# {code} ") and "Why is this bad?" in out


# -- targeted behaviour beyond the fixtures ----------------------------------------------------


def _report(code: str, source: str, config=None):
    return [d for d in lint_sources({"example.py": source}, config or {}, select=[code]) if d.code == code]


@pytest.mark.parametrize(
    "source",
    [
        # the fallback after a failed import of the new API
        "import torch\ntry:\n    s = torch.amp.GradScaler('cuda')\nexcept AttributeError:\n    s = torch.cuda.amp.GradScaler()\n",
        # a version-guarded conditional expression (Lightning's style)
        "import torch\ns = torch.amp.GradScaler('cuda') if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()\n",
        "import torch\nif hasattr(torch, 'amp'):\n    pass\nelse:\n    s = torch.cuda.amp.GradScaler()\n",
    ],
)
def test_tdl405_ignores_compatibility_fallbacks(source: str) -> None:
    assert not _report("TDL405", source, {"torch-version": "2.13"})


def test_tdl402_random_factories_are_unsafe_and_exact_ones_safe() -> None:
    source = "import torch\na = torch.zeros(3).cuda()\nb = torch.randn(3).cuda()\nc = torch.arange(0, 1, 0.25).cuda()\n"
    fixes = {d.line: d.fix.applicability.value for d in _report("TDL402", source)}
    assert fixes == {2: "safe", 3: "unsafe", 4: "unsafe"}


def test_tdl407_one_diagnostic_per_model_call_outside_no_grad() -> None:
    source = (
        "import torch\n\n"
        "def run(model, xs):\n"
        "    model.eval()\n"
        "    first = model(xs[0])\n"
        "    with torch.no_grad():\n"
        "        second = model(xs[1])\n"
        "    third = model(xs[2])\n"
        "    return first, second, third\n"
    )
    assert [(d.line, d.column) for d in _report("TDL407", source)] == [(5, 13), (8, 13)]


def test_tdl407_caller_in_another_branch_keeps_the_report() -> None:
    """A helper called once under no_grad and once without still runs with autograd."""
    source = (
        "import torch\n\n"
        "def predict(model, x):\n"
        "    model.eval()\n"
        "    return model(x)\n\n"
        "with torch.no_grad():\n"
        "    predict(net, a)\n"
        "predict(net, b)\n"
    )
    assert len(_report("TDL407", source)) == 1
