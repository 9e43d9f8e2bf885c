"""fixtures/TDLnnn/<case>.py (or a <case>/ project directory) against <case>.txt,
and, when the diagnostics carry fixes, against <case>.fixed.py (<case>.fixed/).

Each case is linted with only its directory's rule selected (a `# fixture: {...}`
line, or `fixture.json` in a project directory, can change the settings).
Every fix (safe and unsafe) is applied by the real fixer, in memory, from
the results of that same run (nothing on disk is written), and must keep the
invariants: the result parses, a second run over a fresh lint of the fixed
texts changes nothing, comments are kept, imports are added once, nothing
outside the fixes' spans changes, and a CRLF version of the case is fixed to
the CRLF version of the expectation.
`pytest --update-fixtures` rewrites the expectations for review in the diff.
"""

from __future__ import annotations

import ast
import io
import re
import shutil
import tokenize
from collections import Counter
from pathlib import Path
from typing import Dict, List

import libcst as cst
import pytest
from conftest import FIXTURES

from torchdet_lint.checks import all_rules
from torchdet_lint.core.rule import FixAvailability
from torchdet_lint.core.source import SourceText, decode_source, encode_source
from torchdet_lint.engine.fixer import FixReport, fix_run
from torchdet_lint.engine.runner import RunResult, run
from torchdet_lint.testing import concise, fixture_config, lint_tree, settings_from

FIXED_SUFFIX = ".fixed"


def _cases():
    for rule_dir in sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]")):
        for case in sorted(rule_dir.iterdir()):
            if case.is_dir() and not case.name.endswith(FIXED_SUFFIX):
                yield pytest.param(rule_dir.name, case, id=f"{rule_dir.name}/{case.stem}")
            elif case.suffix == ".py" and not case.name.endswith(".fixed.py"):
                yield pytest.param(rule_dir.name, case, id=f"{rule_dir.name}/{case.stem}")


def _config(case: Path) -> dict:
    if case.is_dir():
        header = case / "fixture.json"
        return fixture_config("# fixture: " + header.read_text()) if header.exists() else {}
    return fixture_config(case.read_text(encoding="utf-8"))


def _fixed_path(case: Path) -> Path:
    """Where a case's expected fixed result lives: `x.fixed.py` or the `x.fixed/` directory."""
    return case.with_name(case.stem + ".fixed.py") if case.is_file() else case.with_name(case.name + FIXED_SUFFIX)


@pytest.mark.parametrize("code, case", list(_cases()))
def test_fixture(code: str, case: Path, update_fixtures: bool) -> None:
    root = case if case.is_dir() else case.parent
    settings = settings_from(_config(case), root, select=[code])
    result = lint_tree(root, settings, paths=[case])
    actual = concise(result.diagnostics)
    expected_path = case.with_suffix(".txt") if case.is_file() else case.parent / (case.name + ".txt")
    if update_fixtures:
        expected_path.write_text(actual, encoding="utf-8")
    assert expected_path.exists(), f"{expected_path} is missing: run pytest --update-fixtures"
    assert actual == expected_path.read_text(encoding="utf-8")
    _check_fixes(case, result, update_fixtures)


@pytest.mark.parametrize("rule_dir", sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]")), ids=lambda p: p.name)
def test_each_rule_directory_shows_its_rule_firing(rule_dir: Path) -> None:
    expectations = [p.read_text(encoding="utf-8") for p in rule_dir.glob("*.txt")]
    assert any(f" {rule_dir.name} " in text for text in expectations), f"no case in {rule_dir} reports {rule_dir.name}"


@pytest.mark.parametrize("code", [code for code, rule in all_rules().items() if rule.fix_availability != FixAvailability.NONE])
def test_every_fixable_rule_has_a_fixed_fixture(code: str) -> None:
    rule_dir = FIXTURES / code
    fixed = list(rule_dir.glob("*.fixed.py")) + [p for p in rule_dir.glob("*" + FIXED_SUFFIX) if p.is_dir()]
    assert fixed, f"{code} has fixes but no fixture shows one: add fixtures/{code}/<case>.py, run pytest --update-fixtures"


# -- the fix checks ------------------------------------------------------------------


def _fix(result: RunResult) -> FixReport:
    """Every fix (safe and unsafe) of a run applied by the real fixer, in memory: the fixer
    starts from the run's own results and leaves the case's files on disk as they are."""
    return fix_run(result, unsafe=True, write=False, jobs=1)


def _relint(result: RunResult, texts: Dict[str, SourceText]) -> RunResult:
    """The run's files linted again inside their project, with `texts` in place of their bytes."""
    project = result.projects[0]
    return run(project.files, project.options, jobs=1, texts=texts)


def _fixed_bytes(report: FixReport) -> Dict[str, bytes]:
    return {path: encode_source(report.states[path].original, report.states[path].text) for path in report.changed}


def _check_fixes(case: Path, result: RunResult, update: bool) -> None:
    report = _fix(result)
    assert not report.errors, report.errors
    fixed = _fixed_bytes(report)
    expected_path = _fixed_path(case)
    if update:
        _write_expectation(case, expected_path, fixed)
    expected = _read_expectation(case, expected_path)
    assert fixed.keys() == expected.keys(), (
        f"files changed by the fixes: {sorted(fixed)}, expected: {sorted(expected)} (run pytest --update-fixtures and review)"
    )
    for path, data in fixed.items():
        assert data == expected[path], (
            f"{path}: the fixed text differs from {expected_path} (run pytest --update-fixtures and review)"
        )
    if not fixed:
        return
    assert report.fixed_count > 0
    for path in report.changed:
        state = report.states[path]
        _check_parses(path, state)
        _check_comments_kept(path, state, [fix for fix in report.applied if fix.path == path])
        _check_imports_added_once(path, state)
        _check_only_spans_changed(path, state)
    # A second run, from a fresh lint of the fixed texts, finds nothing more to fix.
    again = _fix(_relint(result, {path: decode_source(data) for path, data in fixed.items()}))
    assert again.fixed_count == 0 and not again.changed, f"a second --fix run changed {again.changed}: {again.applied}"
    original = case.read_bytes() if case.is_file() else b""
    if case.is_file() and b"\r" not in original:
        crlf_report = _fix(_relint(result, {case.name: decode_source(original.replace(b"\n", b"\r\n"))}))
        assert not crlf_report.errors, crlf_report.errors
        crlf_fixed = _fixed_bytes(crlf_report)
        assert crlf_fixed.get(case.name) == fixed[case.name].replace(b"\n", b"\r\n"), "CRLF line endings were not kept"


def _write_expectation(case: Path, expected_path: Path, fixed: Dict[str, bytes]) -> None:
    if expected_path.is_dir():
        shutil.rmtree(expected_path)
    elif expected_path.exists():
        expected_path.unlink()
    if not fixed:
        return
    if case.is_file():
        expected_path.write_bytes(fixed[case.name])
        return
    for relative, data in fixed.items():
        target = expected_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _read_expectation(case: Path, expected_path: Path) -> Dict[str, bytes]:
    if case.is_file():
        return {case.name: expected_path.read_bytes()} if expected_path.exists() else {}
    if not expected_path.is_dir():
        return {}
    return {p.relative_to(expected_path).as_posix(): p.read_bytes() for p in sorted(expected_path.rglob("*")) if p.is_file()}


def _code(text: str, notebook: bool) -> str:
    if not notebook:
        return text
    from torchdet_lint.engine.notebook import load_notebook

    return load_notebook(text).code


def _check_parses(path: str, state) -> None:
    code = _code(state.text, state.is_notebook)
    try:
        cst.parse_module(code)
        ast.parse(code)
    except (cst.ParserSyntaxError, SyntaxError) as error:  # pragma: no cover - the failure message
        pytest.fail(f"{path}: the fixed text does not parse: {error}")


def _comments(code: str) -> List[str]:
    return [tok.string for tok in tokenize.generate_tokens(io.StringIO(code).readline) if tok.type == tokenize.COMMENT]


# TDL900's fix takes stale `noqa` directives away: what is left of each comment, with the
# directives (and a whole file-level directive) removed, must be kept.
_CODES = r"[A-Za-z]+[0-9]+(?:[ \t]*,?[ \t]*[A-Za-z]+[0-9]+)*"
_DIRECTIVE_RE = re.compile(rf"#[ \t]*(?:torchdet-lint:[ \t]*)?noqa(?::[ \t]*{_CODES})?", re.I)


def _without_directives(comments: List[str]) -> List[str]:
    kept = []
    for comment in comments:
        rest = _DIRECTIVE_RE.sub("", comment).strip(" \t#")
        if rest:
            kept.append(rest)
    return kept


def _check_comments_kept(path: str, state, applied) -> None:
    before = Counter(_comments(_code(state.original.text, state.is_notebook)))
    after = Counter(_comments(_code(state.text, state.is_notebook)))
    if any(fix.code == "TDL900" for fix in applied):
        before = Counter(_without_directives(list(before.elements())))
        after = Counter(_without_directives(list(after.elements())))
    lost = before - after
    assert not lost, f"{path}: the fixes dropped comments: {list(lost.elements())}"


def _imports(code: str) -> Counter:
    found: Counter = Counter()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found.update((alias.name, None, alias.asname) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.update(("." * node.level + (node.module or ""), alias.name, alias.asname) for alias in node.names)
    return found


def _check_imports_added_once(path: str, state) -> None:
    before = _imports(_code(state.original.text, state.is_notebook))
    after = _imports(_code(state.text, state.is_notebook))
    repeated = [key for key, count in after.items() if count > 1 and count > before[key]]
    assert not repeated, f"{path}: the fixes import the same name twice: {repeated}"


def _check_only_spans_changed(path: str, state) -> None:
    """Between the regions the fixes replaced, the original and fixed texts are identical."""
    if state.regions is None:  # a notebook: its JSON outside the edited cells is checked by the notebook tests
        return
    original, fixed = state.original.text, state.text
    original_position = fixed_position = 0
    for (original_start, original_end), (fixed_start, fixed_end) in zip(
        state.regions.original_spans(), state.regions.current_spans()
    ):
        assert original[original_position:original_start] == fixed[fixed_position:fixed_start], (
            f"{path}: text outside the fix spans changed near original offset {original_position}"
        )
        original_position, fixed_position = original_end, fixed_end
    assert original[original_position:] == fixed[fixed_position:], f"{path}: text after the last fix span changed"
