"""What a Ruff user reaches for: the subcommands, the flags, the configuration keys and
files, and the output formats, each through the real command line, asserting what a
user sees (output, exit code, files written). docs/coming-from-ruff.md lists them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import cli_in_process as run_cli  # in process: this file runs the command line ~70 times

from torchdet_lint import __version__
from torchdet_lint.checks import all_rules

HAZARD = "import torch\n\ntorch.backends.cudnn.benchmark = True\n"
SEEDED = "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n    torch.backends.cudnn.benchmark = True\n"


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _write(tmp_path, {"pyproject.toml": "[tool.torchdet-lint]\n", "train.py": HAZARD})


def _codes(out: str) -> list:
    return [line.split()[1] for line in out.splitlines() if ": TDL" in line]


def _concise(*args: str, cwd: Path):
    code, out, err = run_cli(*args, "--output-format", "concise", "--no-cache", cwd=cwd)
    return code, out, err


# -- subcommands ----------------------------------------------------------------------------


def test_help_lists_every_subcommand(project: Path) -> None:
    code, out, _ = run_cli("--help", cwd=project)
    assert code == 0
    commands = out.split("commands:", 1)[1]
    for name in ("check", "report", "rule", "rules", "server", "clean", "version"):
        assert f"\n  {name} " in commands, name


def test_version_subcommand(project: Path) -> None:
    assert run_cli("version", cwd=project)[:2] == (0, f"torchdet-lint {__version__}\n")
    assert run_cli("--version", cwd=project)[1] == f"torchdet-lint {__version__}\n"
    code, out, _ = run_cli("version", "--output-format", "json", cwd=project)
    assert code == 0 and json.loads(out) == {"version": __version__}


def test_version_and_clean_are_not_paths(tmp_path: Path) -> None:
    _write(tmp_path, {"version/train.py": HAZARD, "clean/train.py": HAZARD})
    assert run_cli("version", cwd=tmp_path)[1].startswith("torchdet-lint ")
    assert run_cli("clean", cwd=tmp_path)[0] == 0
    assert (tmp_path / "clean" / "train.py").exists()


def test_clean_removes_the_caches(project: Path) -> None:
    _write(project, {"sub/pyproject.toml": "[tool.torchdet-lint]\n", "sub/train.py": HAZARD})
    assert run_cli(".", "sub", cwd=project)[0] == 1
    caches = [project / ".torchdet_lint_cache", project / "sub" / ".torchdet_lint_cache"]
    assert all(cache.is_dir() for cache in caches)
    code, out, err = run_cli("clean", cwd=project)
    assert code == 0 and out == ""
    assert not any(cache.exists() for cache in caches)
    assert "Removing cache at: .torchdet_lint_cache" in err and "Removing cache at: sub/.torchdet_lint_cache" in err
    assert (project / "train.py").read_text(encoding="utf-8") == HAZARD
    assert run_cli("clean", "missing-dir", cwd=project)[0] == 2


def test_rule_by_code_by_name_and_all(project: Path) -> None:
    by_code = run_cli("rule", "TDL001", cwd=project)
    by_name = run_cli("rule", "unseeded-torch", cwd=project)
    assert by_code[0] == by_name[0] == 0 and by_code[1] == by_name[1]
    assert by_code[1].startswith("# TDL001 unseeded-torch\n")
    code, out, _ = run_cli("rule", "--all", cwd=project)
    assert code == 0
    assert [line.split()[1] for line in out.splitlines() if line.startswith("# TDL")] == list(all_rules())
    code, out, _ = run_cli("rule", "--all", "--output-format", "json", cwd=project)
    assert [entry["code"] for entry in json.loads(out)] == list(all_rules())
    assert run_cli("rule", "no-such-rule", cwd=project)[0] == 2
    assert run_cli("rule", cwd=project)[0] == 2
    assert run_cli("rule", "TDL001", "--all", cwd=project)[0] == 2


def test_check_subcommand_is_the_default(project: Path) -> None:
    assert _concise("check", ".", cwd=project)[:2] == _concise(".", cwd=project)[:2]


# -- flags ----------------------------------------------------------------------------------


def test_add_noqa_adds_and_merges_directives(project: Path) -> None:
    _write(project, {"other.py": "import torch\n\ntorch.backends.cudnn.benchmark = True  # noqa: E501\n"})
    code, out, err = run_cli(".", "--add-noqa", "--no-cache", cwd=project)
    assert code == 0 and out == ""
    assert "Added 2 noqa directives." in err
    assert (project / "train.py").read_text(encoding="utf-8") == HAZARD.replace("True\n", "True  # noqa: TDL301\n")
    assert (project / "other.py").read_text(encoding="utf-8").endswith("= True  # noqa: E501, TDL301\n")
    assert _concise(".", cwd=project)[0] == 0
    # Nothing left to add: the files stay as they are.
    assert "Added 0 noqa directives." in run_cli(".", "--add-noqa", "--no-cache", cwd=project)[2]


def test_add_noqa_leaves_a_backslash_line_alone(tmp_path: Path) -> None:
    source = "import torch\n\ntorch.backends.cudnn.benchmark = \\\n    True\n"
    _write(tmp_path, {"train.py": source})
    code, _, err = run_cli(".", "--add-noqa", "--no-cache", cwd=tmp_path)
    assert code == 2 and "backslash" in err
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == source


def test_show_settings_prints_what_is_in_force_and_lints_nothing(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.torchdet-lint]\ntorch-version = "2.3"\nignore = ["TDL305"]\n', encoding="utf-8"
    )
    code, out, _ = run_cli(".", "--show-settings", "--extend-ignore", "TDL304", cwd=project)
    assert code == 0
    assert f"# configuration: {project / 'pyproject.toml'}" in out
    assert 'torch-version = "2.3"' in out and 'ignore = ["TDL305", "TDL304"]' in out
    assert "# target torch: 2.3 (configured)" in out
    assert "TDL301" in out.split("# rules selected:")[1] and "TDL305" not in out.split("# rules selected:")[1]
    assert "cudnn.benchmark" not in out


def test_show_files_lists_what_would_be_linted(project: Path) -> None:
    _write(project, {"pkg/model.py": "x = 1\n", "build/gen.py": HAZARD, "notes.txt": ""})
    code, out, _ = run_cli("--show-files", cwd=project)
    assert (code, out) == (0, "pkg/model.py\ntrain.py\n")


def test_output_file_receives_the_output(project: Path) -> None:
    code, out, _ = run_cli(".", "-o", "lint.txt", "--output-format", "concise", "--no-cache", cwd=project)
    assert code == 1 and out == ""
    written = (project / "lint.txt").read_text(encoding="utf-8")
    assert written.startswith("train.py:3:1: TDL301 ") and "Found 1 error." in written
    code, out, _ = run_cli(".", "--output-file", "lint.json", "--output-format", "json", "--no-cache", cwd=project)
    assert code == 1 and out == "" and json.loads((project / "lint.json").read_text(encoding="utf-8"))[0]["code"] == "TDL301"


def test_exclude_replaces_and_extend_exclude_adds(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.torchdet-lint]\nexclude = ["a/"]\n', encoding="utf-8")
    _write(project, {"a/x.py": HAZARD, "b/x.py": HAZARD, "c/x.py": HAZARD})
    files = lambda out: sorted({line.split(":")[0] for line in out.splitlines() if ": TDL" in line})  # noqa: E731
    assert files(_concise(".", cwd=project)[1]) == ["b/x.py", "c/x.py", "train.py"]
    assert files(_concise(".", "--exclude", "b/", cwd=project)[1]) == ["a/x.py", "c/x.py", "train.py"]
    assert files(_concise(".", "--extend-exclude", "b/,c/", cwd=project)[1]) == ["train.py"]


def test_extend_ignore(project: Path) -> None:
    assert _concise(".", cwd=project)[0] == 1
    code, out, _ = _concise(".", "--extend-ignore", "TDL301", cwd=project)
    assert code == 0 and "All checks passed!" in out


def test_per_file_ignores_flag(project: Path) -> None:
    _write(project, {"scripts/run.py": HAZARD})
    assert sorted(_codes(_concise(".", cwd=project)[1])) == ["TDL301", "TDL301"]
    code, out, _ = _concise(".", "--per-file-ignores", "scripts/*.py:TDL301", cwd=project)
    assert code == 1 and [line.split(":")[0] for line in out.splitlines() if ": TDL" in line] == ["train.py"]
    code, _, err = _concise(".", "--per-file-ignores", "scripts/*.py", cwd=project)
    assert code == 2 and "GLOB:CODE" in err
    assert _concise(".", "--per-file-ignores", "x.py:TDL3x", cwd=project)[0] == 2


def test_fixable_and_unfixable_flags(project: Path) -> None:
    assert "TDL301 [*]" in _concise(".", cwd=project)[1]
    for args in (["--unfixable", "TDL301"], ["--fixable", "TDL1"], ["--fixable", "TDL", "--unfixable", "TDL3"]):
        code, out, _ = _concise(".", *args, cwd=project)
        assert code == 1 and "TDL301 [*]" not in out and "fixable with the `--fix` option" not in out, args
        assert run_cli(".", "--fix", "--no-cache", *args, cwd=project)[0] == 1
        assert (project / "train.py").read_text(encoding="utf-8") == HAZARD
        fix = json.loads(run_cli(".", "--output-format", "json", "--no-cache", *args, cwd=project)[1])[0]["fix"]
        assert fix is None
    # the more specific selector wins
    assert "TDL301 [*]" in _concise(".", "--fixable", "TDL301", "--unfixable", "TDL3", cwd=project)[1]
    assert run_cli(".", "--fix", "--no-cache", "--fixable", "TDL301", cwd=project)[0] == 0


def test_config_key_value_overrides(project: Path) -> None:
    code, out, _ = _concise(".", "--config", "ignore = ['TDL301']", cwd=project)
    assert code == 0 and "All checks passed!" in out
    code, out, _ = _concise(".", "--config", "select=['TDL3']", "--config", "extend-ignore = ['TDL301']", cwd=project)
    assert code == 0
    # A flag wins over an inline override, as in Ruff.
    assert _concise(".", "--config", "profile = 'performance'", cwd=project)[0] == 0
    assert _concise(".", "--config", "profile = 'performance'", "--profile", "reproducible", cwd=project)[0] == 1
    code, out, err = _concise(".", "--config", "torch-version = 2.3", cwd=project)
    assert code == 2 and out == "" and "torch-version" in err and "Traceback" not in err
    code, _, err = _concise(".", "--config", "colour = 'red'", cwd=project)
    assert code == 2 and "unknown key `colour`" in err
    code, _, err = _concise(".", "--config", "no-such-file.toml", cwd=project)
    assert code == 2 and "no-such-file.toml: config file not found" in err
    code, _, err = _concise(".", "--config", "select = [", cwd=project)
    assert code == 2 and "not a path to an existing file, nor a valid TOML" in err


# -- configuration files and keys ------------------------------------------------------------


def test_standalone_files_and_their_precedence(tmp_path: Path) -> None:
    _write(tmp_path, {"train.py": HAZARD, "pyproject.toml": '[tool.torchdet-lint]\nignore = ["TDL301"]\n'})
    assert _concise(".", cwd=tmp_path)[0] == 0
    (tmp_path / "torchdet-lint.toml").write_text('select = ["TDL3"]\n', encoding="utf-8")
    assert _codes(_concise(".", cwd=tmp_path)[1]) == ["TDL301"]  # the standalone file wins over pyproject.toml
    (tmp_path / ".torchdet-lint.toml").write_text('ignore = ["TDL3"]\n', encoding="utf-8")
    assert _concise(".", cwd=tmp_path)[0] == 0  # the dotted one wins over both
    # keys at the top level, as in ruff.toml: a table name is an unknown key
    (tmp_path / ".torchdet-lint.toml").write_text("[lint]\nselect = []\n", encoding="utf-8")
    code, _, err = _concise(".", cwd=tmp_path)
    assert code == 2 and ".torchdet-lint.toml: unknown key `lint`" in err


def test_an_empty_standalone_file_is_the_configuration(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {"sub/torchdet-lint.toml": "", "sub/train.py": HAZARD, "pyproject.toml": '[tool.torchdet-lint]\nignore = ["TDL3"]\n'},
    )
    assert _codes(_concise("sub/train.py", cwd=tmp_path)[1]) == ["TDL301"]


def test_config_flag_with_a_file_that_configures_nothing_is_an_error(project: Path) -> None:
    _write(project, {"other/pyproject.toml": "[project]\nname = 'x'\n", "black.toml": "[tool.black]\nline-length = 100\n"})
    code, out, err = _concise(".", "--config", "other/pyproject.toml", cwd=project)
    assert code == 2 and out == "" and "other/pyproject.toml: no [tool.torchdet-lint] table" in err
    code, _, err = _concise(".", "--config", "black.toml", cwd=project)
    assert code == 2 and "black.toml: neither a [tool.torchdet-lint] table nor torchdet-lint keys" in err
    _write(project, {"mine.toml": 'ignore = ["TDL301"]\n'})
    assert _concise(".", "--config", "mine.toml", cwd=project)[0] == 0
    _write(project, {"table.toml": '[tool.torchdet-lint]\nignore = ["TDL301"]\n'})
    assert _concise(".", "--config", "table.toml", cwd=project)[0] == 0


def test_extend_inherits_with_paths_relative_to_each_file(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pyproject.toml": '[tool.torchdet-lint]\ntorch-version = "2.3"\nextend-exclude = ["/sub/gen/"]\n'
            'extend-ignore = ["TDL305"]\n',
            "sub/torchdet-lint.toml": 'extend = "../pyproject.toml"\nextend-ignore = ["TDL304"]\n',
            "sub/gen/x.py": HAZARD,
            "sub/train.py": HAZARD,
        },
    )
    code, out, _ = run_cli("--show-settings", cwd=tmp_path / "sub")
    assert code == 0 and 'torch-version = "2.3"' in out and 'ignore = ["TDL305", "TDL304"]' in out
    assert 'extend-exclude = ["/gen/"]' in out  # anchored at the base's directory, rewritten for sub/
    code, out, _ = _concise(".", cwd=tmp_path / "sub")
    assert [line.split(":")[0] for line in out.splitlines() if ": TDL" in line] == ["train.py"]
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nextend = "sub/torchdet-lint.toml"\n', encoding="utf-8")
    code, _, err = _concise(".", cwd=tmp_path / "sub")
    assert code == 2 and "makes a cycle" in err
    (tmp_path / "sub" / "torchdet-lint.toml").write_text('extend = "missing.toml"\n', encoding="utf-8")
    code, _, err = _concise(".", cwd=tmp_path / "sub")
    assert code == 2 and "`extend`: no such file" in err


@pytest.mark.parametrize(
    "key, value, expect_code",
    [
        ("extend-ignore", '["TDL301"]', 0),
        ("extend-per-file-ignores", '{"train.py" = ["TDL301"]}', 0),
        ("per-file-ignores", '{"train.py" = ["TDL301"]}', 0),
        ("unfixable", '["TDL301"]', 1),
        ("fixable", '["TDL1"]', 1),
    ],
)
def test_config_keys(project: Path, key: str, value: str, expect_code: int) -> None:
    (project / "pyproject.toml").write_text(f"[tool.torchdet-lint]\n{key} = {value}\n", encoding="utf-8")
    code, out, _ = _concise(".", cwd=project)
    assert code == expect_code, out
    if key in ("fixable", "unfixable"):
        assert "[*]" not in out
        assert run_cli(".", "--fix", "--no-cache", cwd=project)[0] == 1
        assert (project / "train.py").read_text(encoding="utf-8") == HAZARD


def test_bad_values_of_the_new_keys_name_the_key_and_the_file(project: Path) -> None:
    for line, where in (
        ('fixable = ["TDL8"]', "`fixable`"),
        ("extend = 3", "`extend`"),
        ('extend-ignore = "TDL3"', "`extend-ignore`"),
    ):
        (project / "pyproject.toml").write_text(f"[tool.torchdet-lint]\n{line}\n", encoding="utf-8")
        code, _, err = _concise(".", cwd=project)
        assert code == 2 and "pyproject.toml" in err and where in err, (line, err)


# -- output formats --------------------------------------------------------------------------


def _format(project: Path, name: str):
    return run_cli(".", "--output-format", name, "--no-cache", cwd=project)


def test_pylint_format(project: Path) -> None:
    code, out, _ = _format(project, "pylint")
    assert code == 1
    assert out.splitlines() == [
        "train.py:3: [TDL301] `cudnn.benchmark = True` picks convolution algorithms by timing, which can differ between runs"
    ]


def test_grouped_format(project: Path) -> None:
    _write(project, {"b.py": HAZARD + HAZARD.splitlines()[-1] + "\n"})
    code, out, _ = _format(project, "grouped")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "b.py:" and lines[1].startswith("  3:1 TDL301 [*] ") and lines[2].startswith("  4:1 TDL301 [*] ")
    assert lines[3] == "" and lines[4] == "train.py:" and lines[5].startswith("  3:1 TDL301 [*] ")
    assert "Found 3 errors." in out


def test_json_lines_format_with_urls(project: Path) -> None:
    code, out, _ = _format(project, "json-lines")
    assert code == 1
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["code"] for row in rows] == ["TDL301"]
    assert rows[0]["url"] == "docs/rules/TDL301.md" and (ROOT / rows[0]["url"]).is_file()
    assert rows == json.loads(_format(project, "json")[1])


def test_every_rule_has_its_page_at_its_url() -> None:
    from torchdet_lint.docs import rule_markdown

    for code, rule in all_rules().items():
        page = ROOT / rule.url()
        assert page.read_text(encoding="utf-8") == rule_markdown(rule), f"{page} is stale: run `python -m torchdet_lint.docs`"
    pages = sorted(path.name for path in (ROOT / "docs" / "rules").glob("*.md"))
    assert pages == sorted(f"{code}.md" for code in all_rules())


def test_sarif_rules_carry_the_url(project: Path) -> None:
    log = json.loads(_format(project, "sarif")[1])
    rules = {rule["id"]: rule for rule in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["TDL301"]["helpUri"] == "docs/rules/TDL301.md"


def test_junit_format(project: Path) -> None:
    code, out, _ = _format(project, "junit")
    assert code == 1
    root = ET.fromstring(out.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "1"
    suite = root.find("testsuite")
    assert suite.get("name") == "train.py"
    case = suite.find("testcase")
    assert case.get("name") == "org.torchdet-lint.TDL301" and case.get("line") == "3"
    assert case.find("failure").text.startswith("line 3, col 1, TDL301 ")
    (project / "train.py").write_text("import torch\n", encoding="utf-8")
    code, out, _ = _format(project, "junit")
    assert code == 0 and ET.fromstring(out.split("\n", 1)[1]).find("testsuite/testcase").get("name") == "No errors found"


def test_gitlab_format(project: Path) -> None:
    _write(project, {"b.py": HAZARD + HAZARD.splitlines()[-1] + "\n"})
    code, out, _ = _format(project, "gitlab")
    assert code == 1
    issues = json.loads(out)
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues] == [
        ("TDL301", "b.py", 3),
        ("TDL301", "b.py", 4),
        ("TDL301", "train.py", 3),
    ]
    assert len({issue["fingerprint"] for issue in issues}) == 3
    assert issues[0]["severity"] == "major" and issues[0]["description"].startswith("TDL301 ")
    assert json.loads(_format(project, "gitlab")[1]) == issues  # fingerprints are stable
    code, out, _ = run_cli(
        ".", "--output-format", "gitlab", "--no-cache", cwd=project, env={"CI_PROJECT_DIR": str(project.parent)}
    )
    assert json.loads(out)[0]["location"]["path"] == f"{project.name}/b.py"


# -- the target torch version note -----------------------------------------------------------


def test_note_once_when_the_torch_version_is_a_guess(tmp_path: Path, monkeypatch, capsys) -> None:
    from torchdet_lint import cli
    from torchdet_lint.engine import config

    _write(tmp_path, {"a/pyproject.toml": "[tool.torchdet-lint]\n", "a/train.py": HAZARD, "b/setup.py": "", "b/train.py": HAZARD})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(config, "installed_torch_version", lambda: None)
    assert cli.main(["a", "b", "--no-cache", "--output-format", "concise"]) == 1
    err = capsys.readouterr().err
    assert err.count("note: no `torch-version` configured and no torch installed here") == 1
    assert "Set `torch-version`" in err
    for args in (["--torch-version", "2.3"], ["--config", "torch-version = '2.3'"], ["--quiet"]):
        cli.main(["a", "b", "--no-cache", *args])
        assert "note:" not in capsys.readouterr().err, args
    # installed torch: its version is the target, no note
    monkeypatch.setattr(config, "installed_torch_version", lambda: (2, 13))
    cli.main(["a", "b", "--no-cache"])
    assert "note:" not in capsys.readouterr().err
