"""The command line as users run it: formats, exit codes, standard input, rule docs, bad files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, run_cli

HAZARD = "import torch\n\ntorch.backends.cudnn.benchmark = True  # fast\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    return tmp_path


def test_examples_full_format_with_excerpts_exits_1() -> None:
    code, out, err = run_cli("examples/", cwd=ROOT)
    assert code == 1, err
    assert re.search(r"^examples/train\.py:\d+:\d+: TDL301 \[\*\] ", out, re.M)
    assert re.search(r"^examples/train\.py:\d+:\d+: TDL305 ", out, re.M)
    # the source excerpt: the offending line with a gutter, carets under it
    assert re.search(r"^\s*\d+ \|\s+cudnn\.benchmark = True$", out, re.M)
    assert re.search(r"^\s+\|\s+\^+ TDL301$", out, re.M)
    assert "= help: Set `cudnn.benchmark` to `False`" in out
    assert re.search(r"^Found \d+ errors?\.$", out, re.M)


def test_exit_zero_and_clean_exit(project: Path) -> None:
    assert run_cli(".", "--exit-zero", cwd=project)[0] == 0
    (project / "train.py").write_text("import torch\n", encoding="utf-8")
    code, out, _ = run_cli(".", cwd=project)
    assert code == 0 and "All checks passed!" in out


@pytest.mark.parametrize("args", [["--select", "TDL8"], ["--select", "XYZ"], ["--ignore", "TDL3x"], ["--extend-select", "TDL77"]])
def test_unknown_selector_exits_2_with_one_line(project: Path, args) -> None:
    code, out, err = run_cli(".", *args, cwd=project)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "unknown rule selector" in err


def test_unknown_option_exits_2(project: Path) -> None:
    code, _, err = run_cli(".", "--frobnicate", cwd=project)
    assert code == 2 and "frobnicate" in err and "Traceback" not in err


def test_concise_format(project: Path) -> None:
    code, out, _ = run_cli(".", "--output-format", "concise", cwd=project)
    assert code == 1
    assert (
        out.splitlines()[0] == "train.py:3:1: TDL301 [*] `cudnn.benchmark = True` picks convolution algorithms by timing, "
        "which can differ between runs"
    )


JSON_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "line", "column", "end_line", "end_column", "code", "name", "message", "fix"],
        "properties": {
            "path": {"type": "string"},
            "line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1},
            "end_column": {"type": "integer", "minimum": 1},
            "code": {"type": "string", "pattern": "^TDL[0-9]{3}$"},
            "name": {"type": "string"},
            "message": {"type": "string"},
            "cell": {"type": "integer", "minimum": 1},
            # the rule's documentation page (null for TDL000, which is no rule)
            "url": {"oneOf": [{"type": "null"}, {"type": "string", "pattern": "^docs/rules/TDL[0-9]{3}\\.md$"}]},
            "fix": {
                "oneOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["applicability", "title", "edits"],
                        "properties": {
                            "applicability": {"enum": ["safe", "unsafe"]},
                            "title": {"type": "string"},
                            "edits": {"type": "array"},
                        },
                    },
                ]
            },
        },
    },
}


def test_json_output_matches_the_interface(project: Path) -> None:
    (project / "b.py").write_text("import torch\ntorch.use_deterministic_algorithms(True, warn_only=True)\n", encoding="utf-8")
    code, out, _ = run_cli(".", "--output-format", "json", cwd=project)
    assert code == 1
    data = json.loads(out)
    jsonschema.validate(data, JSON_SCHEMA)
    assert [(d["path"], d["line"], d["code"]) for d in data] == [("b.py", 2, "TDL305"), ("train.py", 3, "TDL301")]
    first = data[1]
    assert (first["column"], first["end_line"], first["end_column"]) == (1, 3, 38)
    assert first["name"] == "cudnn-benchmark-enabled"
    assert first["fix"]["applicability"] == "safe"
    edit = first["fix"]["edits"][0]
    assert edit == {"content": "False", "location": {"line": 3, "column": 34}, "end_location": {"line": 3, "column": 38}}
    assert data[0]["fix"] is None


def test_sarif_validates_against_the_schema(project: Path) -> None:
    schema = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    code, out, _ = run_cli(".", "--output-format", "sarif", cwd=project)
    assert code == 1
    log = json.loads(out)
    jsonschema.validate(log, schema)
    driver = log["runs"][0]["tool"]["driver"]
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert "## Why is this bad?" in rules["TDL301"]["help"]["markdown"]
    result = log["runs"][0]["results"][0]
    assert result["ruleId"] == "TDL301" and driver["rules"][result["ruleIndex"]]["id"] == "TDL301"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_github_format(project: Path) -> None:
    _, out, _ = run_cli(".", "--output-format", "github", cwd=project)
    assert out.startswith("::error title=torchdet-lint (TDL301),file=train.py,line=3,col=1,endLine=3,endColumn=38::TDL301 ")


def test_statistics(project: Path) -> None:
    (project / "b.py").write_text(HAZARD, encoding="utf-8")
    code, out, _ = run_cli(".", "--statistics", cwd=project)
    assert code == 1 and out == "2\tTDL301\t[*] cudnn-benchmark-enabled\n"


def test_standard_input(project: Path) -> None:
    code, out, _ = run_cli(
        "-", "--stdin-filename", "src/model.py", "--output-format", "concise", cwd=project, input=HAZARD.encode()
    )
    assert code == 1 and out.startswith("src/model.py:3:1: TDL301")
    code, out, _ = run_cli("--stdin-filename", "ok.py", cwd=project, input=b"import torch\n")
    assert code == 0


def test_bad_files_are_tdl000_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    pass\n", encoding="utf-8")
    (tmp_path / "latin.py").write_bytes(b"import torch\nname = '\xe9t\xe9'\n")
    (tmp_path / "good.py").write_text(HAZARD, encoding="utf-8")
    code, out, err = run_cli(".", "--output-format", "concise", cwd=tmp_path)
    assert code == 1 and "Traceback" not in err
    lines = out.splitlines()
    assert lines[0].startswith("broken.py:2:7: TDL000 syntax error")
    assert lines[1].startswith("good.py:3:1: TDL301")
    assert re.match(r"latin\.py:1:1: TDL000 cannot decode as utf-8", lines[2])


def test_rule_command_prints_the_rule_docs() -> None:
    from torchdet_lint.checks import get_rule
    from torchdet_lint.docs import rule_markdown

    code, out, _ = run_cli("rule", "TDL301")
    assert code == 0
    assert out == rule_markdown(get_rule("TDL301"))
    assert out.startswith("# TDL301 cudnn-benchmark-enabled\n") and "## Why is this bad?" in out and "## Examples" in out
    code, out, _ = run_cli("rule", "TDL301", "--output-format", "json")
    assert json.loads(out)["name"] == "cudnn-benchmark-enabled"
    code, _, err = run_cli("rule", "TDL999")
    assert code == 2 and "TDL999" in err


def test_rules_command_lists_every_rule() -> None:
    from torchdet_lint.checks import all_rules

    code, out, _ = run_cli("rules")
    assert code == 0
    for rule_code in all_rules():
        assert f"| {rule_code} |" in out
    code, out, _ = run_cli("rules", "--output-format", "json")
    assert [r["code"] for r in json.loads(out)] == list(all_rules())


def test_version_and_console_script() -> None:
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("torchdet-lint ")
    completed = subprocess.run([str(Path(sys.executable).parent / "torchdet-lint"), "--version"], capture_output=True, text=True)
    assert completed.returncode == 0 and completed.stdout == out


def test_the_command_ends_without_freeing_and_loses_no_output(tmp_path: Path) -> None:
    """The installed command and `python -m` end the process at once after `main` (no
    clean-up of what the run kept): the exit code and every byte of a long output arrive
    through a pipe, and the cache the run writes is complete."""
    for index in range(40):
        (tmp_path / f"train_{index}.py").write_text(HAZARD * 3, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    script = str(Path(sys.executable).parent / "torchdet-lint")
    for command in ([script], [sys.executable, "-m", "torchdet_lint"]):
        run = [*command, ".", "--output-format", "json"]
        completed = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True)
        assert completed.returncode == 1, completed.stderr
        assert len(json.loads(completed.stdout)) == 40 * 3
        warm = subprocess.run([*run, "--verbose"], cwd=tmp_path, capture_output=True, text=True)
        assert warm.returncode == 1 and warm.stdout == completed.stdout
        assert '"from_cache": 40' in warm.stderr, warm.stderr
        subprocess.run([*command, "clean"], cwd=tmp_path, check=True, capture_output=True)


def test_color_only_when_asked(project: Path) -> None:
    _, plain, _ = run_cli(".", cwd=project)
    assert "\x1b[" not in plain
    _, colored, _ = run_cli(".", "--color", "always", cwd=project)
    assert "\x1b[" in colored
    _, forced, _ = run_cli(".", cwd=project, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in forced


def test_torch_is_never_imported(project: Path) -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv = ['torchdet-lint', '.', '--exit-zero']\n"
        "from torchdet_lint.cli import main\n"
        "main()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
