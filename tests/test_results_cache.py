"""A project where nothing changed answers from the last run's record; anything the answer
depends on that changes (a file named or not, a file added or removed, a YAML config a run is
built from, the configuration, the working directory) makes the run lint again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Tuple

from conftest import cli_in_process

SEED_HELPER = "import torch\n\n\ndef fix_seed(seed):\n    torch.manual_seed(seed)\n"
TRAIN = (
    "import torch\n\nfrom utils.seed import fix_seed\n\n\n"
    'if __name__ == "__main__":\n    fix_seed(0)\n    print(torch.randn(2))\n'
)
LOADER = "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(range(4), shuffle=True)\n"


def _project(root: Path, files: Dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _seeded(root: Path) -> Path:
    return _project(root, {"utils/seed.py": SEED_HELPER, "train.py": TRAIN, "data.py": LOADER})


def _run(root: Path, *args: str, cwd: Path = None) -> Tuple[List[Tuple[str, int, str]], Dict[str, float], str]:
    """(path, line, code) of each finding, the run's timings and its full-format output."""
    code, out, err = cli_in_process("--verbose", "--output-format", "json", *args, cwd=cwd or root)
    assert code in (0, 1), err
    timings = json.loads(next(line for line in err.splitlines() if line.startswith("timings: "))[len("timings: ") :])
    return [(d["path"], d["line"], d["code"]) for d in json.loads(out)], timings, out


def _full(root: Path, *args: str) -> str:
    code, out, err = cli_in_process(*args, cwd=root)
    assert code in (0, 1), err
    return out


def test_an_unchanged_project_answers_from_the_record_with_the_same_output(tmp_path: Path) -> None:
    root = _seeded(tmp_path / "p")
    cold, timings, cold_json = _run(root)
    assert timings["projects_unchanged"] == 0
    assert cold == [("data.py", 4, "TDL101")]
    warm, timings, warm_json = _run(root)
    assert timings["projects_unchanged"] == 1 and timings["parsed"] == 0
    assert warm_json == cold_json
    # The full format shows the source lines: read again for the files with findings.
    assert _full(root) == _full(root, "--no-cache") and "DataLoader(range(4), shuffle=True)" in _full(root)
    # A file reported by the whole run is answered alone too, as a one-file run says it.
    one, timings, one_json = _run(root, "data.py")
    assert timings["projects_unchanged"] == 1
    assert one_json == _run(root, "--no-cache", "data.py")[2]


def test_an_edit_of_a_file_not_named_changes_the_named_file_s_answer(tmp_path: Path) -> None:
    root = _seeded(tmp_path / "p")
    assert _run(root, "train.py")[0] == []
    assert _run(root, "train.py")[1]["projects_unchanged"] == 1
    (root / "utils" / "seed.py").write_text(SEED_HELPER.replace("torch.manual_seed(seed)", "pass"), encoding="utf-8")
    found, timings, _ = _run(root, "train.py")
    assert timings["projects_unchanged"] == 0
    assert found == [("train.py", 6, "TDL001")]


def test_an_edit_that_keeps_the_size_and_the_modification_time_is_still_seen(tmp_path: Path) -> None:
    # Within the file system's timestamp granularity a write can leave size and mtime as they
    # were: an entry recorded that close to the file's last write is checked by content.
    root = _seeded(tmp_path / "p")
    helper = root / "utils" / "seed.py"
    before = os.stat(helper)
    assert _run(root, "train.py")[0] == []
    helper.write_text(SEED_HELPER.replace("torch.manual_seed(seed)", "print(seed)".ljust(23)), encoding="utf-8")
    os.utime(helper, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(helper).st_size == before.st_size
    assert _run(root, "train.py")[0] == [("train.py", 6, "TDL001")]


def test_a_file_added_or_removed_is_seen(tmp_path: Path) -> None:
    root = _seeded(tmp_path / "p")
    (root / "utils" / "__init__.py").write_text("", encoding="utf-8")  # the package stays when its module goes
    assert _run(root)[0] == [("data.py", 4, "TDL101")]
    (root / "more.py").write_text(LOADER, encoding="utf-8")
    found, timings, _ = _run(root)
    assert timings["projects_unchanged"] == 0
    assert found == [("data.py", 4, "TDL101"), ("more.py", 4, "TDL101")]
    (root / "data.py").unlink()
    assert _run(root)[0] == [("more.py", 4, "TDL101")]
    # The seeding helper gone: train.py, unchanged, seeds nothing now.
    (root / "utils" / "seed.py").unlink()
    assert _run(root)[0] == [("more.py", 4, "TDL101"), ("train.py", 6, "TDL001")]


def test_a_named_file_not_reported_last_time_is_linted(tmp_path: Path) -> None:
    root = _seeded(tmp_path / "p")
    assert _run(root, "train.py")[0] == []
    found, timings, _ = _run(root, "data.py")
    assert timings["projects_unchanged"] == 0 and found == [("data.py", 4, "TDL101")]
    # Both answers are kept (nothing changed in between): either file is answered now.
    assert _run(root, "train.py")[1]["projects_unchanged"] == 1
    assert _run(root, "data.py")[1]["projects_unchanged"] == 1


def test_another_working_directory_or_configuration_is_linted_again(tmp_path: Path) -> None:
    root = _seeded(tmp_path / "p")
    assert _run(root)[0] == [("data.py", 4, "TDL101")]
    # From another directory the paths are shown from there (messages name other files the same way).
    found, timings, _ = _run(root, "p", cwd=root.parent)
    assert timings["projects_unchanged"] == 0 and found == [("p/data.py", 4, "TDL101")]
    (root / "pyproject.toml").write_text('[tool.torchdet-lint]\nignore = ["TDL101"]\n', encoding="utf-8")
    found, timings, _ = _run(root)
    assert timings["projects_unchanged"] == 0 and found == []


HYDRA_TRAIN = (
    "import hydra\nfrom hydra.utils import instantiate\n\n\n"
    '@hydra.main(config_path="conf", config_name="train")\ndef main(cfg):\n'
    "    trainer = instantiate(cfg.trainer)\n    trainer.train()\n\n\n"
    'if __name__ == "__main__":\n    main()\n'
)
TRAINERS = (
    "import torch\n\n\nclass Seeded:\n    def __init__(self):\n        torch.manual_seed(0)\n\n"
    "    def train(self):\n        print(torch.randn(2))\n\n\n"
    "class Plain:\n    def train(self):\n        print(torch.randn(2))\n"
)


def test_an_edit_of_the_yaml_config_a_run_is_built_from_is_seen(tmp_path: Path) -> None:
    root = _project(
        tmp_path / "p",
        {
            "pkg/__init__.py": "",
            "pkg/trainers.py": TRAINERS,
            "conf/train.yaml": "trainer:\n  _target_: pkg.trainers.Seeded\n",
            "train.py": HYDRA_TRAIN,
        },
    )
    assert _run(root, "--select", "TDL001")[0] == []
    assert _run(root, "--select", "TDL001")[1]["projects_unchanged"] == 1
    (root / "conf" / "train.yaml").write_text("trainer:\n  _target_: pkg.trainers.Plain\n", encoding="utf-8")
    found, timings, _ = _run(root, "--select", "TDL001")
    assert timings["projects_unchanged"] == 0
    assert [code for _, _, code in found] == ["TDL001"]


def test_fixing_never_answers_from_the_record(tmp_path: Path) -> None:
    root = _seeded(tmp_path / "p")
    assert _run(root)[0] == [("data.py", 4, "TDL101")]
    code, out, err = cli_in_process("--diff", "--verbose", cwd=root)
    assert code == 1, err
    assert '"projects_unchanged": 0' in err and "+++ b/data.py" in out
