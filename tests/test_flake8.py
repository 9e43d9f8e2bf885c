"""The flake8 plugin through the real `flake8`: over every fixtures/TDLnnn/*.py
file it reports the same codes at the same positions as the command line.

The fixture comparison runs both programs' entry points in this process (one
run per fixture, about fifty of each); the selection test runs flake8 as a
subprocess, through the installed plugin registration."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

from conftest import FIXTURES, cli_in_process
from flake8.main.cli import main as flake8_main

from torchdet_lint.cli import main as cli_main
from torchdet_lint.testing import fixture_config

Finding = Tuple[str, int, int, str]  # (file name, line, column, code)


def _toml_value(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)  # strings, numbers, booleans and lists of them are valid TOML as JSON


def _write_project(directory: Path, config: Dict[str, object]) -> None:
    directory.mkdir(parents=True)
    table = "".join(f"{key} = {_toml_value(value)}\n" for key, value in config.items())
    (directory / "pyproject.toml").write_text("[tool.torchdet-lint]\n" + table, encoding="utf-8")


def _fixture_cases() -> List[Tuple[List[str], Dict[str, object], Path]]:
    """Every fixture file with the rules and settings its fixture test uses."""
    cases = []
    for case in sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]/*.py")):
        if case.name.endswith(".fixed.py"):
            continue
        config = fixture_config(case.read_text(encoding="utf-8"))
        selectors = list(config.pop("select", [case.parent.name]))
        cases.append((selectors, config, case))
    return cases


def _cli_findings(directory: Path, capsys) -> Set[Finding]:
    """The command line's findings, run in this process (`torchdet_lint.cli.main`)."""
    capsys.readouterr()
    code = cli_main(["--output-format", "json", "--no-cache", "."])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return {(Path(d["path"]).name, d["line"], d["column"], d["code"]) for d in json.loads(out)}


def _flake8_findings(directory: Path, selectors: List[str]) -> Set[Finding]:
    """flake8's findings, run in this process (`flake8.main.cli.main`)."""
    report = directory / "flake8.out"
    code = flake8_main(
        ["--select", ",".join(selectors), "--format", "%(path)s|%(row)d|%(col)d|%(code)s", "--output-file", str(report), "."]
    )
    assert code in (0, 1)
    findings = set()
    for line in report.read_text(encoding="utf-8").splitlines():
        path, row, column, rule = line.split("|")
        findings.add((Path(path).name, int(row), int(column), rule))
    return findings


def test_flake8_matches_the_cli_on_every_fixture(tmp_path: Path, monkeypatch, capsys) -> None:
    """Each fixture alone (project-level logic can silence a file rule's finding,
    so fixtures are not linted together), with its fixture's settings."""
    cases = _fixture_cases()
    assert cases, "no fixtures found"
    compared = 0
    for index, (selectors, config, case) in enumerate(cases):
        directory = tmp_path / f"case{index}"
        _write_project(directory, {"select": selectors, **config})
        shutil.copy2(case, directory / case.name)
        monkeypatch.chdir(directory)
        cli = _cli_findings(directory, capsys)
        flake8 = _flake8_findings(directory, selectors)
        assert flake8 == cli, f"{case}: flake8 only {sorted(flake8 - cli)}, CLI only {sorted(cli - flake8)}"
        compared += len(cli)
    assert compared > 0, "the fixtures produced no findings to compare"


def _flake8_codes(directory: Path, *args: str) -> Set[Tuple[int, str]]:
    completed = subprocess.run(
        [sys.executable, "-m", "flake8", *args, "--format", "%(row)d|%(code)s", "train.py"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode in (0, 1), completed.stderr
    return {
        (int(row), code) for row, code in (line.split("|") for line in completed.stdout.splitlines()) if code.startswith("TDL")
    }


def _cli_codes(directory: Path, *args: str) -> Set[Tuple[int, str]]:
    code, out, err = cli_in_process("--output-format", "json", "--no-cache", *args, "train.py", cwd=directory)
    assert code in (0, 1), err
    return {(d["line"], d["code"]) for d in json.loads(out)}


def test_selection_and_options_follow_the_cli(tmp_path: Path) -> None:
    """flake8's TDL selectors act as `torchdet-lint --select/--extend-select`; without
    them the config decides; flake8's own ignore and noqa still apply."""
    (tmp_path / "train.py").write_text(
        "import torch\ntorch.backends.cudnn.benchmark = True\ntorch.use_deterministic_algorithms(True)\n", encoding="utf-8"
    )
    both = {(2, "TDL301"), (3, "TDL303")}
    # TDL303 (cuBLAS workspace) only matters before torch 2.10.
    assert _flake8_codes(tmp_path, "--torchdet-torch-version", "2.3") == _cli_codes(tmp_path, "--torch-version", "2.3") == both
    assert _flake8_codes(tmp_path, "--torchdet-torch-version", "2.13") == {(2, "TDL301")}
    assert _flake8_codes(tmp_path, "--select", "TDL301", "--torchdet-torch-version", "2.3") == {(2, "TDL301")}
    assert _flake8_codes(tmp_path, "--extend-ignore", "TDL301", "--torchdet-torch-version", "2.3") == {(3, "TDL303")}

    # The performance profile turns TDL301 off; selecting it explicitly turns it on again.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchdet-lint]\nprofile = "performance"\ntorch-version = "2.3"\n', encoding="utf-8"
    )
    assert _flake8_codes(tmp_path) == _cli_codes(tmp_path) == {(3, "TDL303")}
    assert _flake8_codes(tmp_path, "--select", "TDL3") == _cli_codes(tmp_path, "--select", "TDL3") == both
    assert _flake8_codes(tmp_path, "--extend-select", "TDL301") == _cli_codes(tmp_path, "--extend-select", "TDL301") == both
    assert _flake8_codes(tmp_path, "--torchdet-profile", "reproducible") == both

    (tmp_path / "pyproject.toml").write_text("[tool.torchdet-lint]\nunknown-key = 1\n", encoding="utf-8")
    assert _flake8_codes(tmp_path) == {(1, "TDL000")}
