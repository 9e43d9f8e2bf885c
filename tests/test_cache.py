"""The result cache: unchanged files are not re-analysed, and nothing stale is ever reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

import torchdet_lint.engine.cache as cache_module
from torchdet_lint.testing import settings_from

HELPER_SEEDING = "import torch\n\n\ndef seed_all(seed=0):\n    torch.manual_seed(seed)\n"
HELPER_NOT_SEEDING = "import torch\n\n\ndef seed_all(seed=0):\n    print('no seeding here', seed)\n"
TRAIN = (
    "import torch\nfrom utils.seed import seed_all\n\n\ndef main():\n    "
    "seed_all()\n    model = torch.nn.Linear(2, 2)\n    print(model)\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def _run(project: Path, *args: str):
    code, out, err = run_cli(".", "--output-format", "json", "--verbose", *args, cwd=project)
    assert code in (0, 1), err
    timings = json.loads(next(line for line in err.splitlines() if line.startswith("timings: "))[len("timings: ") :])
    return {(d["path"], d["code"]) for d in json.loads(out)}, timings


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "seed.py").write_text(HELPER_SEEDING)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text('[tool.torchdet-lint]\nselect = ["TDL0"]\n')
    return tmp_path


def test_warm_run_reads_every_file_from_the_cache(project: Path) -> None:
    cold, timings = _run(project)
    assert timings["from_cache"] == 0 and cold == set()
    warm, timings = _run(project)
    assert timings["from_cache"] == timings["files"] == 2 and warm == cold
    assert (project / ".torchdet_lint_cache" / ".gitignore").exists()


def test_editing_a_helper_updates_the_entry_points_that_reach_it(project: Path) -> None:
    assert _run(project)[0] == set()
    (project / "utils" / "seed.py").write_text(HELPER_NOT_SEEDING)
    found, timings = _run(project)
    assert found == {("train.py", "TDL001")}
    assert timings["from_cache"] == 1  # train.py itself is unchanged: only the helper is re-analysed
    (project / "utils" / "seed.py").write_text(HELPER_SEEDING)
    found, timings = _run(project)
    assert found == set() and timings["from_cache"] == 2  # back to the first content: its entry is still valid


def test_config_change_invalidates_everything(project: Path) -> None:
    _run(project)
    (project / "pyproject.toml").write_text('[tool.torchdet-lint]\nselect = ["TDL0"]\nseed = 7\n')
    _, timings = _run(project)
    assert timings["from_cache"] == 0
    _, timings = _run(project, "--select", "TDL001")  # a different selection on the command line, too
    assert timings["from_cache"] == 0


def test_catalog_change_invalidates_everything(project: Path, monkeypatch) -> None:
    settings = settings_from({"select": ["TDL0"]}, project)

    def run() -> int:
        from torchdet_lint.engine.discovery import discover
        from torchdet_lint.engine.runner import first_party_names, make_options
        from torchdet_lint.engine.runner import run as run_files

        files, _ = discover([str(project)], project, cwd=project)
        result = run_files(files, make_options(settings, first_party_names(files)), use_cache=True)
        return sum(1 for f in result.files if f.from_cache)

    run()
    assert run() == 2
    monkeypatch.setattr(cache_module, "_CATALOG_FINGERPRINT", "an edited catalog")
    assert run() == 0
    assert run() == 2


def test_no_cache_neither_reads_nor_writes(project: Path) -> None:
    _, timings = _run(project, "--no-cache")
    assert timings["from_cache"] == 0 and not (project / ".torchdet_lint_cache").exists()
