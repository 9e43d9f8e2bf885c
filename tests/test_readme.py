"""The README stays true: the generated rule table and the two set-up commands."""

from __future__ import annotations

import re

from conftest import ROOT, cli_in_process

from torchdet_lint.docs import render_readme

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_is_current() -> None:
    assert render_readme(README) == README, "the rules table is stale: run `python -m torchdet_lint.docs`"


def test_two_setup_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README.split("## Quick start", 1)[1].split("\n## ", 1)[0], re.S)
    assert [b.strip() for b in blocks] == [
        "pip install . && torchdet-lint examples/",
        'pip install -e ".[test]" && pytest --full -n auto',
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]" && pytest --full -n auto' in ci


# -- the README's commands, run or checked against the repository ---------------------------------


def _usage_commands() -> list:
    usage = README.split("## Usage", 1)[1]
    block = re.search(r"```sh\n(.*?)```", usage, re.S).group(1)
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_usage_commands_run_as_documented(tmp_path) -> None:
    """Each command of the Usage block, on a copy of the example project standing in for `src/`
    (`--watch` and `server` run until stopped: their own tests drive them)."""
    import shlex
    import shutil

    from conftest import cli_in_process

    shutil.copytree(ROOT / "examples", tmp_path / "src")
    shutil.copy(ROOT / "examples" / "train.py", tmp_path / "train.py")
    ran = 0
    for command in _usage_commands():
        words = shlex.split(command.split("<", 1)[0])
        if words[0] == "python":
            assert words[:3] == ["python", "-m", "torchdet_lint"]
            continue
        assert words[0] == "torchdet-lint", command
        if "--watch" in words or words[1:2] == ["server"]:
            continue
        stdin = (tmp_path / "train.py").read_bytes() if "<" in command else None
        subcommand_without_cache = words[1:2] in (["rule"], ["rules"], ["clean"], ["version"])
        extra = () if subcommand_without_cache else ("--no-cache",)
        code, out, err = cli_in_process(*words[1:], *extra, cwd=tmp_path, input=stdin)
        assert code in (0, 1) and "torchdet-lint: " not in err and "Traceback" not in err, (command, err)
        ran += 1
    assert ran >= 10


def test_extras_entry_points_and_hook_ids_the_docs_name_exist() -> None:
    import sys

    import yaml

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    docs = README + "".join(path.read_text(encoding="utf-8") for path in (ROOT / "docs").glob("*.md"))
    extras = set(re.findall(r"(?:torchdet-lint|\.)\[(\w+)\]", docs))
    assert extras and extras <= set(project["optional-dependencies"]), extras
    assert project["scripts"] == {"torchdet-lint": "torchdet_lint.cli:console_main"}
    assert "TDL" in project["entry-points"]["flake8.extension"]
    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    named = set(re.findall(r"- id: ([\w-]+)", docs))
    assert named and named <= hooks, named - hooks


def test_the_quick_start_says_what_the_example_reports() -> None:
    stated = int(re.search(r"it reports (\d+) findings", " ".join(README.split())).group(1))
    code, out, err = cli_in_process("examples/", "--no-cache", cwd=ROOT)
    assert code == 1, err
    assert f"Found {stated} errors." in out, out
