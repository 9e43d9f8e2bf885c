"""Partial runs tell the truth: what is reported for a file never depends on which
other files are named (docs/decisions.md, "Partial runs and projects").

A named file, standard input and flake8 are run here through their real entry
points (the command line's `main` in this process; flake8 as a process, through
its plugin registration); pre-commit and the language server have their tests
in test_precommit.py and test_server.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import FIXTURES, ROOT, cli_in_process

from torchdet_lint.testing import fixture_config

SEED_HELPER = """\
import random

import numpy as np
import torch


def fix_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
"""
TRAIN = """\
import random

import numpy as np
import torch
from torch import nn

from utils.seed import fix_seed


def main():
    fix_seed(0)
    model = nn.Linear(4, 2)
    print(model(torch.randn(1, 4)), random.random(), np.random.rand())


if __name__ == "__main__":
    main()
"""
UNSEEDED = TRAIN.replace("    fix_seed(0)\n", "")
SEED_CODES = ["TDL001", "TDL002", "TDL003"]


def helper_seeded_project(root: Path) -> Path:
    """`train.py` seeds through `utils/seed.py`; `train2.py` never seeds."""
    (root / "utils").mkdir(parents=True)
    (root / "utils" / "seed.py").write_text(SEED_HELPER, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "train2.py").write_text(UNSEEDED, encoding="utf-8")
    (root / ".git").mkdir()  # the project root
    return root


def _json(*args: str, cwd: Path, stdin: bytes = None) -> List[dict]:
    code, out, err = cli_in_process(*args, "--output-format", "json", cwd=cwd, input=stdin)
    assert code in (0, 1), err
    return json.loads(out)


def _codes(diagnostics: List[dict], path: str) -> List[str]:
    return sorted(d["code"] for d in diagnostics if d["path"] == path)


def test_a_named_file_and_stdin_see_the_seed_helper(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    whole = _json(".", cwd=project)
    assert _codes(whole, "train.py") == [] and _codes(whole, "train2.py") == SEED_CODES

    assert _json("train.py", cwd=project) == []
    assert _json("-", "--stdin-filename", "train.py", cwd=project, stdin=TRAIN.encode()) == []
    assert _codes(_json("train2.py", cwd=project), "train2.py") == SEED_CODES
    assert _codes(_json("-", "--stdin-filename", "train2.py", cwd=project, stdin=UNSEEDED.encode()), "train2.py") == SEED_CODES
    # Standard input is the named file's text, whatever is on disk.
    assert _codes(_json("-", "--stdin-filename", "train.py", cwd=project, stdin=UNSEEDED.encode()), "train.py") == SEED_CODES
    # From a sub-directory, and without the cache: the same project, the same findings.
    assert _json("../train.py", cwd=project / "utils") == []
    assert _codes(_json("--no-cache", "train2.py", cwd=project), "train2.py") == SEED_CODES
    assert _json("--no-cache", "train.py", cwd=project) == []


def test_only_the_named_files_are_reported(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    (project / "data.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(range(4), shuffle=True)\n", encoding="utf-8"
    )
    assert {d["path"] for d in _json(".", cwd=project)} == {"data.py", "train2.py"}
    assert {d["path"] for d in _json("train2.py", cwd=project)} == {"train2.py"}
    assert {d["path"] for d in _json("data.py", "train.py", cwd=project)} == {"data.py"}


def test_flake8_sees_the_seed_helper(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")

    def flake8(*paths: str) -> List[Tuple[str, str]]:
        completed = subprocess.run(
            [sys.executable, "-m", "flake8", "--select", "TDL", "--format", "%(path)s|%(code)s", *paths],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert completed.returncode in (0, 1), completed.stderr
        return sorted(tuple(line.split("|")) for line in completed.stdout.splitlines())

    assert flake8("train.py") == []
    assert flake8("train2.py") == [("train2.py", code) for code in SEED_CODES]
    assert flake8(".") == [("./train2.py", code) for code in SEED_CODES]


def test_fix_with_named_files_fixes_only_them(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    loader = "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(range(4), shuffle=True)\n"
    (project / "data.py").write_text(loader, encoding="utf-8")
    code, _, err = cli_in_process("--fix", "--unsafe-fixes", "train.py", "train2.py", cwd=project)
    assert code == 0, err
    # train.py is seeded through the helper: no seeding inserted there.
    assert (project / "train.py").read_text(encoding="utf-8") == TRAIN
    fixed = (project / "train2.py").read_text(encoding="utf-8")
    assert fixed != UNSEEDED and "fix_seed(0)" in fixed
    assert (project / "data.py").read_text(encoding="utf-8") == loader  # not named: never fixed
    assert _codes(_json(".", cwd=project), "data.py") == ["TDL101"]


def test_the_summary_index_is_filled_cold_and_read_warm(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")

    def timings(*args: str) -> Dict[str, float]:
        code, _, err = cli_in_process("--verbose", *args, cwd=project)
        assert code in (0, 1), err
        line = next(line for line in err.splitlines() if line.startswith("timings: "))
        return json.loads(line[len("timings: ") :])

    cold = timings("train.py")
    assert (cold["context_files"], cold["context_computed"]) == (2, 2)
    assert list((project / ".torchdet_lint_cache").glob("summaries-*.pickle"))
    # Another file named: no answer recorded for it, the summaries of the others are read.
    warm = timings("train2.py")
    assert (warm["context_files"], warm["context_computed"], warm["projects_unchanged"]) == (2, 0, 0)
    # Nothing changed since train.py was reported: its answer is the recorded one.
    assert timings("train.py")["projects_unchanged"] == 1
    # The helper stops seeding torch: the next run of train.py reads it again and reports.
    (project / "utils" / "seed.py").write_text(SEED_HELPER.replace("    torch.manual_seed(seed)\n", ""), encoding="utf-8")
    edited = timings("train.py")
    assert edited["context_computed"] == 1
    assert _codes(_json("train.py", cwd=project), "train.py") == ["TDL001"]


# Runs the command line in this process under an audit hook that records every file opened
# (to read or to write), every directory listed or made and every file renamed or removed
# below a directory, the working directory unless the first argument names one (`--jobs 1`:
# no worker processes).
_AUDITED_RUN = """\
import json, os, sys
cwd = os.path.abspath(sys.argv[1] if sys.argv[1] != "-" else os.getcwd()) + os.sep
touched = []
EVENTS = ("open", "os.scandir", "os.listdir", "os.mkdir", "os.rename", "os.remove", "os.rmdir")

def hook(event, args):
    if event not in EVENTS:
        return
    for arg in args[:2] if event == "os.rename" else args[:1]:
        if isinstance(arg, (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(arg))
            if path.startswith(cwd):
                touched.append(path[len(cwd):])

sys.addaudithook(hook)
from torchdet_lint.cli import main
code = main(sys.argv[2:])
sys.stderr.write("touched: " + json.dumps(sorted(set(touched))) + "\\n")
sys.exit(code)
"""


def _audited_run(watched: Path, cwd: Path, *args: str) -> Tuple[List[dict], List[str], Dict[str, float]]:
    """The command line run from `cwd` under the audit hook on `watched` (expecting findings):
    its diagnostics, the paths it touched below `watched`, and its timings."""
    completed = subprocess.run(
        [sys.executable, "-c", _AUDITED_RUN, str(watched), "--jobs", "1", "--verbose", "--output-format", "json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 1, completed.stderr
    lines = completed.stderr.splitlines()
    touched = json.loads(next(line for line in lines if line.startswith("touched: "))[len("touched: ") :])
    timings = json.loads(next(line for line in lines if line.startswith("timings: "))[len("timings: ") :])
    return json.loads(completed.stdout), touched, timings


def test_with_no_marker_a_loose_file_is_a_project_of_its_own_directory(tmp_path: Path) -> None:
    """docs/decisions.md, "Partial runs and projects": from a folder of many checkouts, a loose
    script with no marker above it is a project of its own directory; the run opens and lists
    nothing else under the working directory (it walked every tree below it: 126 s)."""
    folder = tmp_path / "checkouts"
    for index in range(40):
        checkout = folder / f"repo{index}" / "src"
        checkout.mkdir(parents=True)
        (checkout / "model.py").write_text("import torch\n\ndef f(:\n", encoding="utf-8")  # broken on purpose
        (checkout / "train.py").write_text(UNSEEDED, encoding="utf-8")
    (folder / "helpers.py").write_text(SEED_HELPER, encoding="utf-8")
    (folder / "scratch").mkdir()
    (folder / "scratch" / "x.py").write_text(UNSEEDED.replace("utils.seed", "helpers"), encoding="utf-8")
    diagnostics, touched, timings = _audited_run(folder, folder, "scratch/x.py")
    assert "scratch/x.py" in touched
    assert [path for path in touched if not path.startswith("scratch")] == []
    # `helpers.py` lies outside the project: its seeding is not seen, and no other file is analysed.
    assert _codes(diagnostics, "scratch/x.py") == SEED_CODES
    assert timings["context_files"] == 0


def test_with_no_marker_a_package_file_belongs_to_the_tree_its_imports_start_from(tmp_path: Path) -> None:
    """An archive of a repository or an unpacked wheel has no marker. A script inside a package
    chain (`pkg/scripts/train.py`, imported as `pkg.scripts.train`) belongs to the directory above
    the outermost package, from where its `from pkg.utils.seed import fix_seed` resolves: named
    alone it reports what the whole tree reports for it (before, its own directory was the project,
    the helper was out of sight, and the seeded script got TDL001-003). Nothing above that
    directory is read."""
    folder = tmp_path / "downloads"
    archive = folder / "archive"
    for package in ("pkg", "pkg/utils", "pkg/scripts"):
        (archive / package).mkdir(parents=True)
        (archive / package / "__init__.py").write_text("", encoding="utf-8")
    (archive / "pkg" / "utils" / "seed.py").write_text(SEED_HELPER, encoding="utf-8")
    for name, text in (("train.py", TRAIN), ("train2.py", UNSEEDED)):
        (archive / "pkg" / "scripts" / name).write_text(text.replace("from utils.seed", "from pkg.utils.seed"), encoding="utf-8")
    (folder / "other").mkdir()
    (folder / "other" / "model.py").write_text("import torch\n\ndef f(:\n", encoding="utf-8")  # broken on purpose
    whole = _json(".", cwd=archive)
    assert _codes(whole, "pkg/scripts/train.py") == [] and _codes(whole, "pkg/scripts/train2.py") == SEED_CODES
    assert _json("pkg/scripts/train.py", cwd=archive) == []
    assert _json("train.py", cwd=archive / "pkg" / "scripts") == []
    diagnostics, touched, _ = _audited_run(folder, archive, "pkg/scripts/train2.py")
    assert _codes(diagnostics, "pkg/scripts/train2.py") == SEED_CODES
    assert "archive/pkg/utils/seed.py" in touched
    assert [path for path in touched if path != "archive" and not path.startswith("archive/")] == []


def test_a_config_outside_the_project_names_settings_not_a_root(tmp_path: Path) -> None:
    """`--config ../alt.toml .` from inside a project made the config's folder the project
    root: every file below it analysed (1,852 unrelated ones, 30 s instead of 0.8 s) and a
    cache written there. The named config is the one file outside the project that is read."""
    folder = tmp_path / "work"
    for index in range(30):
        other = folder / "others" / f"repo{index}"
        other.mkdir(parents=True)
        (other / "model.py").write_text("import torch\n\ndef f(:\n", encoding="utf-8")  # broken on purpose
        (other / "seed.py").write_text(SEED_HELPER, encoding="utf-8")
    (folder / "alt.toml").write_text('[tool.torchdet-lint]\nignore = ["TDL002"]\n', encoding="utf-8")
    project = helper_seeded_project(folder / "project")
    diagnostics, touched, timings = _audited_run(folder, project, "--config", "../alt.toml", ".")
    assert "alt.toml" in touched and "project/train2.py" in touched
    assert [path for path in touched if path.split("/")[0] != "project" and path != "alt.toml"] == []
    assert (project / ".torchdet_lint_cache").is_dir() and not (folder / ".torchdet_lint_cache").exists()
    # The config is in force (TDL002 ignored); the project is the project's files only.
    assert _codes(diagnostics, "train2.py") == [code for code in SEED_CODES if code != "TDL002"]
    assert _codes(diagnostics, "train.py") == []
    assert (timings["files"], timings["context_files"]) == (3, 0)


def test_a_setup_module_inside_a_package_is_not_a_project_root(tmp_path: Path) -> None:
    """dinov2's `dinov2/eval/setup.py` builds the experiment: a `setup.py` beside an
    `__init__.py` is a module, so the seeding helper it calls stays in the project, whether the
    whole tree or the one script is named. A `setup.py` in a plain directory still marks one."""
    root = tmp_path / "repo"
    (root / "pkg" / "eval").mkdir(parents=True)
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "seeding.py").write_text(SEED_HELPER, encoding="utf-8")
    (root / "pkg" / "eval" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "eval" / "setup.py").write_text(
        "from pkg.seeding import fix_seed\n\n\ndef setup():\n    fix_seed(0)\n", encoding="utf-8"
    )
    (root / "pkg" / "eval" / "linear.py").write_text(
        UNSEEDED.replace("import random\n", "import random\n\nfrom pkg.eval.setup import setup\n", 1).replace(
            'if __name__ == "__main__":\n', 'if __name__ == "__main__":\n    setup()\n'
        ),
        encoding="utf-8",
    )
    assert _codes(_json(".", cwd=root), "pkg/eval/linear.py") == []
    assert _codes(_json("pkg/eval/linear.py", cwd=root), "pkg/eval/linear.py") == []
    (root / "pkg" / "eval" / "__init__.py").unlink()  # a plain directory: its setup.py marks a project of its own
    assert _codes(_json("pkg/eval/linear.py", cwd=root), "pkg/eval/linear.py") == SEED_CODES


def test_a_monorepo_lints_each_sub_project_at_its_own_torch_version(tmp_path: Path) -> None:
    """`index_add_` raises under the flag before torch 1.9 (TDL202) and has a deterministic
    implementation after (TDL201, not in the default selection)."""
    root = tmp_path / "mono"
    (root / ".git").mkdir(parents=True)
    code = "import torch\n\n\ndef spread(out, index, src):\n    return out.index_add_(0, index, src)\n"
    for name, version in (("old", "1.8"), ("new", "2.13")):
        (root / name).mkdir()
        (root / name / "pyproject.toml").write_text(f'[tool.torchdet-lint]\ntorch-version = "{version}"\n', encoding="utf-8")
        (root / name / "ops.py").write_text(code, encoding="utf-8")
    diagnostics = _json(".", cwd=root)
    assert [(d["path"], d["code"]) for d in diagnostics] == [("old/ops.py", "TDL202")]
    assert "torch 1.8" in diagnostics[0]["message"]
    # Each sub-project keeps its own selection too.
    (root / "new" / "pyproject.toml").write_text(
        '[tool.torchdet-lint]\ntorch-version = "2.13"\nextend-select = ["TDL201"]\n', encoding="utf-8"
    )
    assert [(d["path"], d["code"]) for d in _json(".", cwd=root)] == [("new/ops.py", "TDL201"), ("old/ops.py", "TDL202")]
    assert [(d["path"], d["code"]) for d in _json("new/ops.py", cwd=root)] == [("new/ops.py", "TDL201")]


def test_a_bad_key_in_a_sub_project_config_names_the_key_and_the_file(tmp_path: Path) -> None:
    root = tmp_path / "mono"
    (root / "sub").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.torchdet-lint]\n", encoding="utf-8")
    (root / "sub" / "pyproject.toml").write_text('[tool.torchdet-lint]\nseed = "zero"\n', encoding="utf-8")
    (root / "sub" / "train.py").write_text("import torch\n", encoding="utf-8")
    code, out, err = cli_in_process(".", cwd=root)
    assert code == 2 and out == ""
    assert "seed" in err and str(root / "sub" / "pyproject.toml") in err and len(err.strip().splitlines()) == 1


# -- the property: every file alone reports what the whole project run reports for it ------------


def _toml_value(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _projects() -> List[Tuple[str, Path, Dict[str, object]]]:
    """examples/, every project fixture, and each rule directory's single-file cases
    (together, grouped by their `# fixture:` settings)."""
    found = [("examples", ROOT / "examples", {}, None)]
    for rule_dir in sorted(FIXTURES.glob("TDL[0-9][0-9][0-9]")):
        groups: Dict[str, List[Path]] = {}
        for case in sorted(rule_dir.glob("*.py")):
            if not case.name.endswith(".fixed.py"):
                groups.setdefault(json.dumps(fixture_config(case.read_text(encoding="utf-8")), sort_keys=True), []).append(case)
        for settings, cases in sorted(groups.items()):
            config = json.loads(settings)
            config.setdefault("extend-select", [rule_dir.name])
            label = f"{rule_dir.name}/*.py" + ("" if settings == "{}" else f" {settings}")
            found.append((label, rule_dir, config, [case.name for case in cases]))
        for case in sorted(rule_dir.iterdir()):
            if case.is_dir() and not case.name.endswith(".fixed"):
                header = case / "fixture.json"
                config = fixture_config("# fixture: " + header.read_text(encoding="utf-8")) if header.exists() else {}
                config.setdefault("extend-select", [rule_dir.name])
                found.append((f"{rule_dir.name}/{case.name}", case, config, None))
    return [(label, source, {"config": config, "only": only}) for label, source, config, only in found]


def _copy_project(source: Path, destination: Path, project: Dict[str, object]) -> List[str]:
    """The project's source files (not the expectations) under a root of their own, with its
    configuration: `project` is `_projects()`'s {"config": ..., "only": file names or None}."""
    config, only = project["config"], project["only"]
    names = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_dir() or relative.parts[0].endswith(".fixed") or path.name.endswith(".fixed.py"):
            continue
        if path.suffix not in (".py", ".ipynb") or (only is not None and relative.as_posix() not in only):
            continue
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        names.append(relative.as_posix())
    table = "".join(f"{key} = {_toml_value(value)}\n" for key, value in config.items())
    (destination / "pyproject.toml").write_text("[tool.torchdet-lint]\n" + table, encoding="utf-8")
    return names


@pytest.mark.parametrize("name, source, config", _projects(), ids=[p[0] for p in _projects()])
def test_every_file_alone_reports_what_the_whole_project_run_reports(
    name, source, config, tmp_path: Path, monkeypatch, capsys
) -> None:
    from torchdet_lint.cli import main as cli_main

    files = _copy_project(source, tmp_path, config)
    monkeypatch.chdir(tmp_path)

    def diagnostics(*args: str) -> List[dict]:
        capsys.readouterr()
        code = cli_main(["--output-format", "json", *args])
        out, err = capsys.readouterr()
        assert code in (0, 1), err
        return json.loads(out)

    whole = diagnostics(".")  # may be empty: some groups hold only the cases that must stay silent
    for file in files:
        expected = [d for d in whole if d["path"] == file]
        assert diagnostics("--force-exclude", file) == expected, f"{name}: {file} alone"
    # Without the cache too (every other file's summary computed afresh).
    for file in files[:3]:
        expected = [d for d in whole if d["path"] == file]
        assert diagnostics("--no-cache", "--force-exclude", file) == expected, f"{name}: {file} alone, --no-cache"
