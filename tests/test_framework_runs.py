"""Framework-built runs: a trainer built by `config.build()` through an annotated factory, one
named only by a string read from a YAML file, and what `check` and `report` say about each.

The project is shaped like the LLM pre-training frameworks the rules were tuned on: the entry
point builds nothing itself, the trainer's `__init__` calls the framework's own
`set_determinism(seed)`, which seeds every generator and enables deterministic mode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import jsonschema
from conftest import cli_in_process

SCHEMA = json.loads((Path(__file__).parent / "data" / "report-schema.json").read_text(encoding="utf-8"))

DETERMINISM = """import random

import numpy as np
import torch


def set_determinism(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
"""

# No torch word in it: the pre-filter skips the file, and its annotations still lead to the trainer.
CONFIG = """from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from framework.trainer import Trainer


@dataclass
class TrainerConfig:
    steps: int = 3
    rank: int = 0

    def build(self) -> "Trainer":
        from framework.trainer import Trainer

        return Trainer(self)
"""

TRAINER = """import random

import torch
from torch import nn

from framework.config import TrainerConfig
from framework.determinism import set_determinism


class Trainer:
    def __init__(self, config: TrainerConfig):
        set_determinism(config.rank)
        self.model = nn.Linear(4, 2).cuda()
        self.steps = config.steps

    def train(self):
        for _ in range(self.steps):
            loss = self.model(torch.randn(8, 4, device="cuda")).sum() * random.random()
            loss.backward()
"""

TRAIN = """from framework.config import TrainerConfig


def main(config: TrainerConfig) -> None:
    trainer = config.build()
    trainer.train()


if __name__ == "__main__":
    main(TrainerConfig())
"""

# The trainer class named only by a string the analysis cannot read: a YAML value handed over as
# keyword arguments to a builder that locates the class by name. The script builds its model.
REGISTRY = """import pydoc


def construct_class_by_name(*args, class_name=None, **kwargs):
    return pydoc.locate(class_name)(*args, **kwargs)
"""
TRAIN_YAML = "trainer:\n  class_name: framework.trainer.Trainer\n"
TRAIN_BY_NAME = """import yaml
from torch import nn

from framework.registry import construct_class_by_name

if __name__ == "__main__":
    with open("train.yaml") as f:
        cfg = yaml.safe_load(f)
    model = nn.Linear(4, 2).cuda()
    trainer = construct_class_by_name(model, **cfg["trainer"])
    trainer.train()
"""


def _project(root: Path, files: Dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _framework(root: Path, helper: bool = True) -> Path:
    trainer = TRAINER if helper else TRAINER.replace("        set_determinism(config.rank)\n", "")
    return _project(
        root,
        {
            "framework/__init__.py": "",
            "framework/determinism.py": DETERMINISM,
            "framework/config.py": CONFIG,
            "framework/trainer.py": trainer,
            "train.py": TRAIN,
        },
    )


def _check(root: Path, *args: str) -> List[Tuple[str, int, str, str]]:
    code, out, err = cli_in_process("check", "--no-cache", "--output-format", "json", *args, cwd=root)
    assert code in (0, 1), err
    return [(d["path"], d["line"], d["code"], d["message"]) for d in json.loads(out)]


def _report(root: Path, *args: str) -> Tuple[int, dict]:
    code, out, err = cli_in_process("report", "--no-cache", "--output-format", "json", *args, cwd=root)
    assert code in (0, 1), err
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    return code, data


def test_a_trainer_built_by_an_annotated_config_is_seeded_by_its_framework_helper(tmp_path: Path) -> None:
    root = _framework(tmp_path)
    assert _check(root) == []
    code, report = _report(root)
    [entry] = report["entry_points"]
    checks = entry["checks"]
    assert checks["torch-seed"]["status"] == "ok"
    assert checks["torch-seed"]["evidence"][0]["path"] == "framework/determinism.py"
    assert checks["deterministic-mode"]["status"] == "ok"
    assert code == 0


def test_without_the_helper_the_trainer_s_randomness_and_cuda_work_are_reported(tmp_path: Path) -> None:
    root = _framework(tmp_path, helper=False)
    found = _check(root)
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("train.py", 9, "TDL001"),
        ("train.py", 9, "TDL002"),
        ("train.py", 9, "TDL302"),
    ]
    messages = {code: message for _, _, code, message in found}
    assert "`nn.Linear(...)` at framework/trainer.py:12" in messages["TDL001"]
    assert "`.cuda()` at framework/trainer.py:12" in messages["TDL302"]


def _by_name(root: Path) -> Path:
    return _project(
        root,
        {
            "framework/__init__.py": "",
            "framework/determinism.py": DETERMINISM,
            "framework/config.py": CONFIG,
            "framework/trainer.py": TRAINER,
            "framework/registry.py": REGISTRY,
            "train.yaml": TRAIN_YAML,
            "train.py": TRAIN_BY_NAME,
        },
    )


def test_a_trainer_named_by_a_string_from_yaml_is_unknown_not_unseeded(tmp_path: Path) -> None:
    root = _by_name(tmp_path)
    # Default profile: the framework's `set_determinism` may run behind the string: no "never".
    assert _check(root) == []
    code, report = _report(root)
    [entry] = report["entry_points"]
    for check in ("torch-seed", "deterministic-mode"):
        result = entry["checks"][check]
        assert result["status"] == "unknown", (check, result)
        messages = " ".join(e["message"] for e in result["evidence"])
        assert "`construct_class_by_name(...)`" in messages and "cannot follow" in messages
        assert "`set_determinism`" in messages
        assert ("train.py", 10) in {(e["path"], e["line"]) for e in result["evidence"]}
        assert ("framework/determinism.py",) in {(e["path"],) for e in result["evidence"]}
    assert code == 1  # unknown is not a pass
    # Profile strict reports both, naming the site it cannot follow and the unreached helper.
    strict = _check(root, "--profile", "strict", "--select", "TDL001,TDL302")
    assert [(path, line, code) for path, line, code, _ in strict] == [("train.py", 6, "TDL001"), ("train.py", 6, "TDL302")]
    for _, _, _, message in strict:
        assert "`construct_class_by_name(...)` at train.py:10" in message
        assert "`set_determinism`" in message and "framework/determinism.py" in message


def test_the_trainer_named_in_a_hydra_config_is_reached(tmp_path: Path) -> None:
    trainer = TRAINER.replace("config: TrainerConfig", "rank: int").replace("config.rank", "rank").replace("config.steps", "3")
    root = _project(
        tmp_path,
        {
            "framework/__init__.py": "",
            "framework/determinism.py": DETERMINISM,
            "framework/trainer.py": trainer.replace("from framework.config import TrainerConfig\n", ""),
            "conf/train.yaml": "trainer:\n  _target_: framework.trainer.Trainer\n  rank: 0\n",
            "train.py": (
                "import hydra\nfrom hydra.utils import instantiate\n\n\n"
                '@hydra.main(config_path="conf", config_name="train")\ndef main(cfg):\n'
                "    trainer = instantiate(cfg.trainer)\n    trainer.train()\n\n\n"
                'if __name__ == "__main__":\n    main()\n'
            ),
        },
    )
    assert _check(root) == []
    unseeded = root / "framework" / "trainer.py"
    unseeded.write_text(unseeded.read_text().replace("        set_determinism(rank)\n", ""), encoding="utf-8")
    assert {code for _, _, code, _ in _check(root)} == {"TDL001", "TDL002", "TDL302"}


def test_report_statuses_opt_in_and_ignored(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "train.py": (
                "import argparse\nimport random\n\nimport torch\n\n"
                'if __name__ == "__main__":\n'
                "    parser = argparse.ArgumentParser()\n"
                '    parser.add_argument("--seed", type=int)\n'
                "    args = parser.parse_args()\n"
                "    if args.seed is not None:\n"
                "        torch.manual_seed(args.seed)\n"
                "    print(torch.randn(2), random.random())\n"
            ),
        },
    )
    (root / "pyproject.toml").write_text('[tool.torchdet-lint]\nignore = ["TDL002"]\n', encoding="utf-8")
    # `check` reports nothing for the opt-in seed (it is not `missing`), nor for the ignored rule.
    assert _check(root) == []
    code, report = _report(root)
    [entry] = report["entry_points"]
    torch_seed = entry["checks"]["torch-seed"]
    assert torch_seed["status"] == "opt-in"
    assert "`if args.seed is not None:`" in torch_seed["evidence"][0]["message"]
    assert (torch_seed["evidence"][0]["path"], torch_seed["evidence"][0]["line"]) == ("train.py", 11)
    random_seed = entry["checks"]["random-seed"]
    assert random_seed["status"] == "ignored"
    assert "TDL002" in random_seed["evidence"][0]["message"] and "pyproject.toml" in random_seed["evidence"][0]["message"]
    assert code == 1  # the default run is unseeded
    # With a default, the seeding always runs: ok.
    train = root / "train.py"
    train.write_text(train.read_text().replace("type=int)", "type=int, default=0)"), encoding="utf-8")
    _, report = _report(root)
    assert report["entry_points"][0]["checks"]["torch-seed"]["status"] == "ok"


def test_report_on_a_named_entry_point_cites_the_findings_of_the_files_it_reaches(tmp_path: Path) -> None:
    """`report train.py` says what `report .` says of train.py: a loader in another file with
    TDL101 makes `dataloaders` missing, as `check` reports it."""
    root = _project(
        tmp_path,
        {
            "data.py": (
                "from torch.utils.data import DataLoader\n\n\n"
                "def make_loader(ds):\n    return DataLoader(ds, batch_size=2, shuffle=True)\n"
            ),
            "train.py": (
                "import torch\n\nfrom data import make_loader\n\n"
                'if __name__ == "__main__":\n    torch.manual_seed(0)\n    print(list(make_loader([1, 2, 3])))\n'
            ),
        },
    )
    assert ("data.py", 5, "TDL101") in {(p, line, c) for p, line, c, _ in _check(root)}
    for args in ((), ("train.py",)):
        _, report = _report(root, *args)
        [entry] = report["entry_points"]
        loaders = entry["checks"]["dataloaders"]
        assert loaders["status"] == "missing", args
        assert [(e["path"], e["line"]) for e in loaders["evidence"]] == [("data.py", 5)]


GENERATE = """import importlib
import sys

import torch


def main(class_path):
    module, name = class_path.rsplit(".", 1)
    model = getattr(importlib.import_module(module), name)()
    model.cuda().eval()
    with torch.no_grad():
        print(model(torch.ones(1, 8, device="cuda")))


if __name__ == "__main__":
    main(sys.argv[1])
"""


def test_cuda_work_of_a_run_only_assumed_to_train_is_unknown(tmp_path: Path) -> None:
    root = _project(tmp_path, {"generate.py": GENERATE})
    # Nothing seen trains, and the model class hides behind `import_module`: its CUDA work
    # matters only if it trains, which the analysis cannot tell.
    assert [code for _, _, code, _ in _check(root, "--select", "TDL302")] == []
    code, report = _report(root)
    [entry] = report["entry_points"]
    result = entry["checks"]["deterministic-mode"]
    assert result["status"] == "unknown", result
    assert "`importlib.import_module(...)`: the analysis cannot follow it" in result["evidence"][0]["message"]
    assert code == 1
    [(_, _, _, message)] = _check(root, "--select", "TDL302", "--profile", "strict")
    assert "no call that trains was seen" in message and "`importlib.import_module(...)` at generate.py:9" in message
    # Seen to train, the same run is reported in the default profile.
    trains = GENERATE.replace("model.cuda().eval()", "model.cuda()\n    model(torch.ones(1, 8, device='cuda')).sum().backward()")
    (root / "generate.py").write_text(trains, encoding="utf-8")
    assert [code for _, _, code, _ in _check(root, "--select", "TDL302")] == ["TDL302"]
