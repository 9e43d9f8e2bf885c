"""The fixer: one round of edits (conflicts, shared imports, CRLF), the loop
(re-lint with the project phase, convergence, cycles, broken fixes), writes
(atomic, mode, encoding, BOM, symlinks), and the CLI's --fix / --diff /
--show-fixes / --exit-non-zero-on-fix / standard input.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List

import libcst as cst
import pytest
from conftest import run_cli
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from torchdet_lint.checks import extra_rules
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix, FixBuilder
from torchdet_lint.core.rule import ProjectRule, Rule
from torchdet_lint.core.source import SourceText
from torchdet_lint.engine import fixer
from torchdet_lint.engine.config import Settings
from torchdet_lint.engine.discovery import discover
from torchdet_lint.engine.fixer import TouchedRegions, apply_fixes, fix_run, unified_diff
from torchdet_lint.engine.runner import first_party_names, make_options, run

BENCHMARK_ON = "import torch\n\ntorch.backends.cudnn.benchmark = True  # speed\n"
BENCHMARK_OFF = "import torch\n\ntorch.backends.cudnn.benchmark = False  # speed\n"


def _diagnostic(code: str, *edits: Edit, applicability: Applicability = Applicability.SAFE) -> Diagnostic:
    start = min(edit.start for edit in edits) if edits else 0
    return Diagnostic(
        "x.py", 1, 1, 1, 1, code, code.lower(), "m", Fix(f"fix {code}", applicability, tuple(edits)), start_offset=start
    )


def _apply_by_hand(text: str, edits: List[Edit]) -> str:
    """Edits one at a time, front to back, shifting offsets (ties keep their order)."""
    shift = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        text = text[: edit.start + shift] + edit.content + text[edit.end + shift :]
        shift += len(edit.content) - (edit.end - edit.start)
    return text


# -- one round ---------------------------------------------------------------------------


def test_non_overlapping_fixes_are_applied_together() -> None:
    text = "a = 1\nb = 2\n"
    first = _diagnostic("TDL901", Edit(4, 5, "10"))
    second = _diagnostic("TDL902", Edit(10, 11, "20"))
    new_text, fixed, _ = apply_fixes(text, [second, first])
    assert new_text == "a = 10\nb = 20\n"
    assert fixed == [first, second]


def test_overlapping_fix_waits_for_the_next_round() -> None:
    text = "value = call(x)\n"
    whole = _diagnostic("TDL901", Edit(8, 15, "sorted(call(x))"))
    inner = _diagnostic("TDL902", Edit(13, 14, "y"))
    new_text, fixed, _ = apply_fixes(text, [inner, whole])
    assert new_text == "value = sorted(call(x))\n"
    assert fixed == [whole]


def test_different_insertions_at_one_offset_wait_identical_ones_are_shared() -> None:
    text = "import torch\nx = 1\ny = 2\n"
    import_os = Edit(0, 0, "import os\n")
    first = _diagnostic("TDL901", import_os, Edit(17, 18, "os.getpid()"))
    same_import = _diagnostic("TDL902", import_os, Edit(23, 24, "os.sep"))
    other_import = _diagnostic("TDL903", Edit(0, 0, "import random\n"), Edit(23, 24, "3"))
    new_text, fixed, _ = apply_fixes(text, [other_import, same_import, first])
    assert new_text == "import os\nimport torch\nx = os.getpid()\ny = os.sep\n"
    assert fixed == [first, same_import]  # the random import's order would be a guess: next round


def test_an_insertion_touching_a_replacement_waits() -> None:
    text = "x = 1\n"
    replace = _diagnostic("TDL901", Edit(0, 5, "x = 2"))
    insert = _diagnostic("TDL902", Edit(0, 0, "import os\n"))
    _, fixed, _ = apply_fixes(text, [replace, insert])
    assert len(fixed) == 1


def test_a_fix_whose_own_edits_overlap_or_leave_the_text_is_never_applied() -> None:
    text = "x = 1\n"
    overlapping = _diagnostic("TDL901", Edit(0, 3, "y ="), Edit(2, 5, "= 3"))
    outside = _diagnostic("TDL902", Edit(4, 40, "2"))
    new_text, fixed, _ = apply_fixes(text, [overlapping, outside])
    assert new_text == text and fixed == []


def test_fix_text_gets_the_file_line_endings() -> None:
    text = "import torch\r\nx = 1\r\n"
    insert = _diagnostic("TDL901", Edit(14, 14, "import os\nos.sep\n"))
    new_text, _, _ = apply_fixes(text, [insert])
    assert new_text == "import torch\r\nimport os\r\nos.sep\r\nx = 1\r\n"


_edit_lists = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6), st.text("ab\n", max_size=4)), min_size=1, max_size=3)


@hypothesis_settings(max_examples=300, deadline=None, database=None)
@given(st.text("xyz \n", min_size=0, max_size=30), st.lists(_edit_lists, max_size=6))
def test_a_round_applies_exactly_the_accepted_fixes_and_they_do_not_conflict(text: str, raw_fixes) -> None:
    diagnostics = []
    for number, raw in enumerate(raw_fixes):
        edits = [Edit(min(s, len(text)), min(s + n, len(text)), c) for s, n, c in raw]
        diagnostics.append(_diagnostic(f"TDL9{number:02d}", *edits))
    new_text, fixed, applied = apply_fixes(text, diagnostics)
    assert new_text == _apply_by_hand(text, applied)
    fixed_edits = {edit for d in fixed for edit in d.fix.edits}
    assert set(applied) == fixed_edits
    for index, one in enumerate(applied):
        for other in applied[index + 1 :]:
            assert not (one.start < other.end and other.start < one.end), (one, other)
    for diagnostic in diagnostics:
        if diagnostic in fixed:
            continue
        edits = diagnostic.fix.edits
        # Rejected only for a reason: broken edits, or a conflict with an accepted edit.
        broken = not fixer._valid_edits(edits, len(text))
        conflicting = any(fixer._conflict(e, a) for e in edits if e not in fixed_edits for a in applied)
        assert broken or conflicting, diagnostic


@hypothesis_settings(max_examples=300, deadline=None, database=None)
@given(st.text("xyz\n", min_size=0, max_size=25), st.lists(_edit_lists, min_size=1, max_size=4))
def test_touched_regions_track_what_changed_over_rounds(text: str, rounds) -> None:
    original = text
    regions = TouchedRegions()
    for number, raw in enumerate(rounds):
        diagnostics = [_diagnostic("TDL900", Edit(min(s, len(text)), min(s + n, len(text)), c)) for s, n, c in raw]
        text, _, applied = apply_fixes(text, diagnostics)
        regions.apply(applied)
    position_original = position_current = 0
    for (o_start, o_end), (c_start, c_end) in zip(regions.original_spans(), regions.current_spans()):
        assert o_start >= position_original and c_start >= position_current
        assert original[position_original:o_start] == text[position_current:c_start]
        position_original, position_current = o_end, c_end
    assert original[position_original:] == text[position_current:]


# -- the loop, with rules made for the test ----------------------------------------------


@pytest.fixture
def test_rules() -> Iterator[None]:
    """Rules with misbehaving fixes, registered for one test only."""

    class OneToTwo(Rule):
        code, name, summary = "TDL991", "one-to-two", "1 should be 2"

        def visit_Integer(self, node: cst.Integer) -> None:
            if node.value == "1":
                self.report(node, fix=FixBuilder("2", Applicability.SAFE).replace(node, "2"))

    class TwoToOne(Rule):
        code, name, summary = "TDL992", "two-to-one", "2 should be 1"

        def visit_Integer(self, node: cst.Integer) -> None:
            if node.value == "2":
                self.report(node, fix=FixBuilder("1", Applicability.SAFE).replace(node, "1"))

    class AlwaysMore(Rule):
        code, name, summary = "TDL993", "always-more", "never satisfied"

        def visit_Module(self, node: cst.Module) -> None:
            self.report(node.body[0], fix=FixBuilder("more", Applicability.SAFE).insert_at_top("more = 1"))

    class Breaks(Rule):
        code, name, summary = "TDL994", "breaks", "fixes into a syntax error"

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == "break_me":
                self.report(node, fix=FixBuilder("break", Applicability.UNSAFE).replace(node, "(("))

    class NeedsOs(ProjectRule):
        code, name, summary = "TDL995", "needs-os", "a project rule whose fix imports os"

        def check(self, project):
            for path, summary in sorted(project.summaries.items()):
                if summary.imports_torch and "os" not in summary.imports:
                    yield Diagnostic(
                        path,
                        1,
                        1,
                        1,
                        1,
                        self.code,
                        self.name,
                        self.summary,
                        Fix("import os", Applicability.SAFE, (Edit(0, 0, "import os\n"),)),
                    )

    with extra_rules(OneToTwo, TwoToOne, AlwaysMore, Breaks, NeedsOs):
        yield


def _fix_tree(root: Path, select, unsafe: bool = True, write: bool = True):
    settings = Settings(root=root, select=tuple(select))
    files, _ = discover([str(root)], root, cwd=root)
    options = make_options(settings, first_party_names(files))
    return fix_run(run(files, options, jobs=1), unsafe=unsafe, write=write, jobs=1)


def test_fixes_that_undo_each_other_leave_the_file_and_say_so(tmp_path: Path, test_rules) -> None:
    (tmp_path / "m.py").write_text("import torch\nx = 1\n")
    report = _fix_tree(tmp_path, ["TDL991", "TDL992"])
    assert report.errors and "undo each other" in report.errors[0]
    assert (tmp_path / "m.py").read_text() == "import torch\nx = 1\n"
    assert report.fixed_count == 0 and not report.changed


def test_fixes_that_never_converge_stop_at_the_bound(tmp_path: Path, test_rules, monkeypatch) -> None:
    monkeypatch.setattr(fixer, "MAX_ITERATIONS", 4)
    (tmp_path / "m.py").write_text("import torch\n")
    report = _fix_tree(tmp_path, ["TDL993"])
    assert report.errors and "did not converge after 4" in report.errors[0]
    assert (tmp_path / "m.py").read_text() == "import torch\n"


def test_a_fix_that_breaks_the_file_is_not_written(tmp_path: Path, test_rules) -> None:
    source = "import torch\nbreak_me = 1\nother = 1\n"
    (tmp_path / "m.py").write_text(source)
    report = _fix_tree(tmp_path, ["TDL994", "TDL991"])
    assert report.errors and "invalid Python" in report.errors[0]
    assert (tmp_path / "m.py").read_text() == source
    assert {d.code for d in report.remaining} == {"TDL991", "TDL994"}  # what was there is still reported


def test_unsafe_fixes_need_the_option(tmp_path: Path, test_rules) -> None:
    (tmp_path / "m.py").write_text("import torch\nbreak_me = 1\n")
    report = _fix_tree(tmp_path, ["TDL994"], unsafe=False)
    assert not report.errors and report.fixed_count == 0
    assert [d.code for d in report.remaining] == ["TDL994"]


def test_project_rule_fixes_are_applied_and_the_project_phase_reruns(tmp_path: Path, test_rules) -> None:
    (tmp_path / "a.py").write_text("import torch\nx = 1\n")
    (tmp_path / "b.py").write_text("import os\nimport torch\n")
    report = _fix_tree(tmp_path, ["TDL995", "TDL991"])
    # Applied once (a stale project diagnostic would add a second import), with the file rule's fix.
    assert (tmp_path / "a.py").read_text() == "import os\nimport torch\nx = 2\n"
    assert (tmp_path / "b.py").read_text() == "import os\nimport torch\n"
    assert sorted(f.code for f in report.applied) == ["TDL991", "TDL995"]
    assert report.remaining == []


# -- writing -------------------------------------------------------------------------------


def test_write_keeps_mode_encoding_bom_crlf_tabs_and_symlinks(tmp_path: Path) -> None:
    latin = "# -*- coding: latin-1 -*-\nimport torch\n# caf\xe9\ntorch.backends.cudnn.benchmark = True\n"
    (tmp_path / "latin.py").write_bytes(latin.encode("latin-1"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + BENCHMARK_ON.replace("\n", "\r\n").encode())
    tabbed = "import torch\nif True:\n\ttorch.backends.cudnn.benchmark = True\t# tab\n"
    (tmp_path / "tabs.py").write_text(tabbed)
    os.chmod(tmp_path / "tabs.py", 0o751)
    real = tmp_path / "real"
    real.mkdir()
    (real / "target.py").write_text(BENCHMARK_ON)
    (tmp_path / "link.py").symlink_to(real / "target.py")
    report = _fix_tree(tmp_path, ["TDL301"])
    assert not report.errors
    assert (tmp_path / "latin.py").read_bytes() == latin.replace("True", "False").encode("latin-1")
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbf" + BENCHMARK_OFF.replace("\n", "\r\n").encode()
    assert (tmp_path / "tabs.py").read_text() == tabbed.replace("True\t", "False\t")
    assert stat.S_IMODE(os.stat(tmp_path / "tabs.py").st_mode) == 0o751
    assert (tmp_path / "link.py").is_symlink() and (real / "target.py").read_text() == BENCHMARK_OFF
    assert not [p for p in tmp_path.rglob("*tdl-tmp*")], "temporary files left behind"


def test_a_file_changed_on_disk_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(BENCHMARK_ON)
    settings = Settings(root=tmp_path, select=("TDL301",))
    files, _ = discover([str(tmp_path)], tmp_path, cwd=tmp_path)
    options = make_options(settings)
    result = run(files, options)
    path.write_text(BENCHMARK_ON + "# edited in an editor\n")
    report = fix_run(result, unsafe=False)
    assert report.errors and "changed on disk" in report.errors[0]
    assert path.read_text() == BENCHMARK_ON + "# edited in an editor\n"


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff(SourceText("a = 1\nb = True"), "a = 1\nb = False", "x.py")
    assert diff.endswith("-b = True\n\\ No newline at end of file\n+b = False\n\\ No newline at end of file\n")


# -- the command line ------------------------------------------------------------------------


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    (root / "train.py").write_text(BENCHMARK_ON)
    (root / "crlf.py").write_bytes(b"import torch\r\n\r\n\r\n\r\n\r\nx = 1\r\ntorch.backends.cudnn.benchmark = True\r\ny = 2\r\n")
    (root / "bom.py").write_bytes(b"\xef\xbb\xbf" + b"import torch\ntorch.backends.cudnn.benchmark = True")
    (root / "clean.py").write_text(BENCHMARK_OFF)
    sub = root / "pkg"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "flags.py").write_text("from torch.backends import cudnn\n\ncudnn.benchmark = True\ncudnn.deterministic = True\n")
    return root


def _snapshot(root: Path) -> dict:
    return {
        p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts
    }


def test_diff_is_accepted_by_git_apply_and_equals_the_fix(tmp_path: Path) -> None:
    root = _project(tmp_path)
    before = _snapshot(root)
    code, diff, err = run_cli("--diff", "--no-cache", "--select", "TDL301,TDL304", ".", cwd=root)
    assert code == 1, err
    assert "Would fix 5 errors." in err
    assert _snapshot(root) == before, "--diff wrote files"
    assert "+++ b/crlf.py" in diff and "clean.py" not in diff
    git = shutil.which("git")
    assert git, "git is needed for this test"
    subprocess.run([git, "init", "-q", str(root)], check=True)
    patch = tmp_path / "fix.patch"
    patch.write_bytes(diff.encode("utf-8"))
    checked = subprocess.run([git, "apply", "--check", str(patch)], cwd=root, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    subprocess.run([git, "apply", str(patch)], cwd=root, check=True)
    patched = _snapshot(root)
    # The same tree, fixed by --fix instead of the patch.
    other = _project(tmp_path / "again")
    code, _, err = run_cli("--fix", "--no-cache", "--select", "TDL301,TDL304", ".", cwd=other)
    assert code == 0, err
    assert _snapshot(other) == patched
    assert patched["crlf.py"].count(b"\r\n") == 8 and b"\n" not in patched["crlf.py"].replace(b"\r\n", b"")


def test_diff_without_changes_exits_zero_and_prints_nothing(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(BENCHMARK_OFF)
    code, out, err = run_cli("--diff", "--no-cache", "clean.py", cwd=tmp_path)
    assert (code, out) == (0, ""), err


def test_show_fixes_and_exit_non_zero_on_fix(tmp_path: Path) -> None:
    root = _project(tmp_path)
    code, out, err = run_cli(
        "--fix", "--show-fixes", "--exit-non-zero-on-fix", "--no-cache", "--select", "TDL301,TDL304", ".", cwd=root
    )
    assert code == 1, (out, err)
    assert "Fixed 5 errors:" in err and "- pkg/flags.py:" in err and "1 \u00d7 TDL304 (contradictory-cudnn-flags)" in err
    assert "Found 5 errors (5 fixed, 0 remaining)." in out
    code, out, err = run_cli("--fix", "--exit-non-zero-on-fix", "--no-cache", "--select", "TDL301,TDL304", ".", cwd=root)
    assert code == 0, (out, err)


def test_unsafe_fixes_from_config(tmp_path: Path) -> None:
    source = 'import torch\n\nif __name__ == "__main__":\n    torch.randn(3, requires_grad=True).cuda().sum().backward()\n'
    (tmp_path / "train.py").write_text(source)
    code, out, _ = run_cli("--fix", "--no-cache", "--select", "TDL302", "train.py", cwd=tmp_path)
    if "TDL302" not in out:  # the project rule is not there yet: nothing to compare
        pytest.fail("TDL302 did not report; the test needs the deterministic-mode rule")
    assert (tmp_path / "train.py").read_text() == source, "an unsafe fix was applied without --unsafe-fixes"
    (tmp_path / "pyproject.toml").write_text("[tool.torchdet-lint]\nunsafe-fixes = true\n")
    code, out, err = run_cli("--fix", "--no-cache", "--select", "TDL302", "train.py", cwd=tmp_path)
    fixed = (tmp_path / "train.py").read_text()
    assert "torch.use_deterministic_algorithms(True)" in fixed, (out, err)
    ast.parse(fixed)


def test_standard_input_fix_prints_the_fixed_source(tmp_path: Path) -> None:
    source = BENCHMARK_ON.replace("\n", "\r\n").encode()
    code, out, err = run_cli("--fix", "--select", "TDL301", "--stdin-filename", "train.py", "-", cwd=tmp_path, input=source)
    assert code == 0, err
    assert out.encode() == BENCHMARK_OFF.replace("\n", "\r\n").encode()
    assert not (tmp_path / "train.py").exists()


def test_broken_fix_from_the_cli_exits_2_and_writes_nothing(tmp_path: Path, test_rules, monkeypatch, capsys) -> None:
    from torchdet_lint.cli import main

    source = "import torch\nbreak_me = 1\n"
    (tmp_path / "m.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    code = main(["--fix", "--unsafe-fixes", "--no-cache", "--select", "TDL994", "m.py"])
    err = capsys.readouterr().err
    assert code == 2
    assert "m.py: a fix made the file invalid Python" in err
    assert (tmp_path / "m.py").read_text() == source


def test_the_fixer_never_imports_torch() -> None:
    check = "import sys, torchdet_lint.engine.fixer, torchdet_lint.cli; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], check=True)


# -- real code: a sample of the installed torch package ------------------------------------

TORCH_SAMPLE = (
    "utils/benchmark",
    "_lobpcg.py",
    "distributed/launch.py",
    "distributed/run.py",
    "utils/model_dump/__main__.py",
    "utils/collect_env.py",
    "testing/_internal/fake_config_module.py",
    "testing/_internal/fake_config_module2.py",
)


def _installed_torch() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    assert spec is not None and spec.submodule_search_locations, "the tests need torch installed"
    return Path(list(spec.submodule_search_locations)[0])


def _copy_torch_sample(destination: Path) -> Path:
    """The sample, as a `torch` package (with its `__init__.py` chain, so module names hold)."""
    source = _installed_torch()
    target = destination / "torch"
    for relative in TORCH_SAMPLE:
        path = source / relative
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            for directory in [file.parent, *file.parent.parents]:
                if directory == source.parent:
                    break
                init = directory / "__init__.py"
                copy = target / init.relative_to(source)
                if init.exists() and not copy.exists():
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(init, copy)
            copy = target / file.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, copy)
    return target


def test_fix_over_a_sample_of_torch_parses_and_is_stable(tmp_path: Path) -> None:
    package = _copy_torch_sample(tmp_path)
    before = _snapshot(package)
    code, out, err = run_cli(
        "--fix", "--unsafe-fixes", "--no-cache", "--show-fixes", "--quiet", "torch", cwd=tmp_path, timeout=600
    )
    assert code in (0, 1), err
    assert "error:" not in err, err
    after = _snapshot(package)
    changed = [path for path in before if after[path] != before[path]]
    assert changed, "the sample holds fixable findings (TDL002, TDL005, ...): nothing was fixed"
    assert "Fixed " in err
    for path in changed:
        ast.parse(after[path], filename=path)
        cst.parse_module(after[path])
    code, diff, err = run_cli("--diff", "--unsafe-fixes", "--no-cache", "torch", cwd=tmp_path, timeout=600)
    assert (code, diff) == (0, ""), f"a second run would change more:\n{diff}\n{err}"


def test_a_fix_the_file_encoding_cannot_hold_is_not_applied(tmp_path: Path, monkeypatch) -> None:
    from torchdet_lint.checks.switches import cudnn_benchmark_enabled

    monkeypatch.setattr(
        cudnn_benchmark_enabled,
        "false_fix",
        lambda value, what: FixBuilder("x", Applicability.SAFE).replace(value, "False  # \u2603"),
    )
    source = "# -*- coding: latin-1 -*-\nimport torch\ntorch.backends.cudnn.benchmark = True\n"
    (tmp_path / "m.py").write_bytes(source.encode("latin-1"))
    report = _fix_tree(tmp_path, ["TDL301"])
    assert report.errors and "cannot hold" in report.errors[0]
    assert (tmp_path / "m.py").read_bytes() == source.encode("latin-1")
