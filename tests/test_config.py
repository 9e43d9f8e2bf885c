"""Configuration through the real CLI: discovery of the table, validation, selection, suppression."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_in_process as run_cli  # in process: many short runs on small projects
from conftest import lint_json

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\ntorch.use_deterministic_algorithms(True, warn_only=True)\n"


def _project(tmp_path: Path, config: str, files=None) -> Path:
    (tmp_path / "pyproject.toml").write_text(config, encoding="utf-8")
    for name, text in (files or {"train.py": HAZARD}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "config, key",
    [
        ('[tool.torchdet-lint]\nselct = ["TDL3"]\n', "selct"),
        ('[tool.torchdet-lint]\nselect = "TDL3"\n', "select"),
        ('[tool.torchdet-lint]\nseed = "zero"\n', "seed"),
        ("[tool.torchdet-lint]\ntorch-version = 2.1\n", "torch-version"),
        ('[tool.torchdet-lint]\nprofile = "fast"\n', "profile"),
        ('[tool.torchdet-lint]\nassume-deterministic-mode = "yes"\n', "assume-deterministic-mode"),
        ('[tool.torchdet-lint]\nper-file-ignores = ["x"]\n', "per-file-ignores"),
        ('[tool.torchdet-lint]\nseed-functions = {"a.b" = ["torch", "tensorflow"]}\n', "seed-functions.a.b"),
        ('[tool.torchdet-lint]\nselect = ["TDL999"]\n', "select"),
    ],
)
def test_bad_config_is_one_line_naming_key_and_file(tmp_path: Path, config: str, key: str) -> None:
    project = _project(tmp_path, config)
    code, out, err = run_cli(".", cwd=project)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert key in lines[0] and "pyproject.toml" in lines[0]
    assert "Traceback" not in err


def test_invalid_toml_is_reported(tmp_path: Path) -> None:
    project = _project(tmp_path, "[tool.torchdet-lint\nselect = \n")
    (project / "pyproject.toml").write_text("[tool.torchdet-lint]\nselect = [\n", encoding="utf-8")
    code, _, err = run_cli(".", cwd=project)
    assert code == 2 and "invalid TOML" in err and len(err.strip().splitlines()) == 1


def test_nearest_pyproject_with_the_table_is_used(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.torchdet-lint]\nignore = ["TDL301"]\n')
    sub = tmp_path / "pkg"
    sub.mkdir()
    # A pyproject without the table is skipped on the way up.
    (sub / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (sub / "train.py").write_text(HAZARD, encoding="utf-8")
    codes = {d["code"] for d in lint_json("train.py", cwd=sub)}
    assert codes == {"TDL305"}


def test_explicit_config_path(tmp_path: Path) -> None:
    _project(tmp_path, "[tool.torchdet-lint]\n")
    other = tmp_path / "other.toml"
    other.write_text('[tool.torchdet-lint]\nselect = ["TDL305"]\n', encoding="utf-8")
    codes = {d["code"] for d in lint_json("--config", str(other), ".", cwd=tmp_path)}
    assert codes == {"TDL305"}


def test_select_ignore_and_specificity(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.torchdet-lint]\nselect = ["TDL3"]\nignore = ["TDL30"]\nextend-select = ["TDL305"]\n')
    assert {d["code"] for d in lint_json(".", cwd=tmp_path)} == {"TDL305"}
    # the command line replaces select and adds to ignore
    assert {d["code"] for d in lint_json("--select", "TDL301,TDL305", "--ignore", "TDL305", ".", cwd=tmp_path)} == {"TDL301"}


def test_profile_performance_drops_tdl301(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.torchdet-lint]\nprofile = "performance"\n')
    codes = {d["code"] for d in lint_json(".", cwd=tmp_path)}
    assert "TDL301" not in codes and "TDL305" in codes


def test_per_file_ignores(tmp_path: Path) -> None:
    _project(
        tmp_path,
        '[tool.torchdet-lint]\nper-file-ignores = {"scripts/*.py" = ["TDL3"]}\n',
        {"scripts/a.py": HAZARD, "b.py": HAZARD},
    )
    paths = {d["path"] for d in lint_json(".", cwd=tmp_path)}
    assert paths == {"b.py"}


def test_noqa_matches_codes_exactly(tmp_path: Path) -> None:
    source = (
        "import torch\n"
        "torch.backends.cudnn.benchmark = True  # noqa: TDL301\n"
        "torch.backends.cudnn.benchmark = True  # noqa: E501\n"
        "torch.backends.cudnn.benchmark = True  # noqa: TDL30\n"
        "torch.backends.cudnn.benchmark = True  # noqa\n"
        "torch.backends.cudnn.benchmark = True  # NOQA:TDL305,TDL301\n"
    )
    _project(tmp_path, "[tool.torchdet-lint]\n", {"a.py": source})
    lines = sorted(d["line"] for d in lint_json("--select", "TDL301", ".", cwd=tmp_path))
    assert lines == [3, 4]


def test_file_level_noqa_skips_the_file(tmp_path: Path) -> None:
    _project(tmp_path, "[tool.torchdet-lint]\n", {"a.py": "# torchdet-lint: noqa\n" + HAZARD, "b.py": HAZARD})
    assert {d["path"] for d in lint_json(".", cwd=tmp_path)} == {"b.py"}


def test_torch_version_from_config_gates_tdl303(tmp_path: Path) -> None:
    source = "import torch\ntorch.use_deterministic_algorithms(True)\n"
    _project(tmp_path, '[tool.torchdet-lint]\ntorch-version = "2.9"\n', {"a.py": source})
    assert [d["code"] for d in lint_json("--select", "TDL303", ".", cwd=tmp_path)] == ["TDL303"]
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\ntorch-version = "2.10"\n', encoding="utf-8")
    assert lint_json("--select", "TDL303", ".", cwd=tmp_path) == []
