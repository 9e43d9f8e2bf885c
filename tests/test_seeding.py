"""Seeding rules: which helpers count, late seeds, RNG objects, `PYTHONHASHSEED`, unstable seeds."""

from __future__ import annotations

import pytest

from torchdet_lint.model.facts import facts
from torchdet_lint.testing import lint_sources

MAIN = "if __name__ == '__main__':\n"


def _codes(sources, select, config=None):
    return sorted(d.code for d in lint_sources(sources, config, select=select))


@pytest.mark.parametrize(
    "imports, seeding",
    [
        ("import torch", "torch.manual_seed(0)"),
        ("import torch", "torch.random.manual_seed(0)"),
        ("import lightning", "lightning.seed_everything(0)"),
        ("from lightning.pytorch import seed_everything", "seed_everything(0)"),
        ("from lightning.fabric.utilities.seed import seed_everything", "seed_everything(0)"),
        ("import pytorch_lightning as pl", "pl.seed_everything(0)"),
        ("from pytorch_lightning.utilities.seed import seed_everything", "seed_everything(0)"),
        ("import lightning as L", "fabric = L.Fabric()\nfabric.seed_everything(0)"),
        ("import transformers", "transformers.set_seed(0)"),
        ("from transformers.trainer_utils import enable_full_determinism", "enable_full_determinism(0)"),
        ("from accelerate.utils import set_seed", "set_seed(0)"),
        ("from accelerate import set_seed", "set_seed(0)"),
        ("from mmengine.runner import set_random_seed", "set_random_seed(0)"),
        ("from detectron2.utils.env import seed_all_rng", "seed_all_rng(0)"),
    ],
)
def test_known_helpers_seed_torch(imports: str, seeding: str) -> None:
    calls = "".join(f"    {line}\n" for line in seeding.split("\n"))
    source = f"{imports}\nimport torch\n\n{MAIN}{calls}    torch.randn(2)\n"
    assert _codes({"run.py": source}, ["TDL001"]) == [], source


def test_cuda_only_seeding_is_not_enough_and_the_message_says_why() -> None:
    source = f"import torch\n\n{MAIN}    torch.cuda.manual_seed(0)\n    torch.nn.Linear(2, 2)\n"
    (diagnostic,) = lint_sources({"run.py": source}, select=["TDL001"])
    assert "seeds only the CUDA generators" in diagnostic.message and "CPU generator" in diagnostic.message


def test_config_seed_functions_extend_the_table() -> None:
    sources = {
        "run.py": f"import torch\nfrom mylib import fix\n\n{MAIN}    fix()\n    torch.randn(2)\n",
        "mylib.py": "def fix():\n    pass\n",
    }
    assert _codes(sources, ["TDL001"]) == ["TDL001"]
    assert _codes(sources, ["TDL001"], {"seed-functions": {"mylib.fix": ["torch"]}}) == []


def test_deterministic_keyword_of_helpers_enables_the_flag() -> None:
    run = (
        "import torch\nfrom transformers import set_seed\n\n"
        + MAIN
        + "    set_seed(0{})\n    torch.ones(1).cuda().sum().backward()\n"
    )
    assert _codes({"run.py": run.format("")}, ["TDL302"]) == ["TDL302"]
    assert _codes({"run.py": run.format(", deterministic=True")}, ["TDL302"]) == []
    assert _codes({"run.py": run.format(", deterministic=False")}, ["TDL302"]) == ["TDL302"]


def test_use_deterministic_algorithms_false_does_not_enable() -> None:
    run = "import torch\n\n" + MAIN + "    torch.use_deterministic_algorithms({})\n    torch.ones(1).cuda().sum().backward()\n"
    assert _codes({"run.py": run.format("False")}, ["TDL302"]) == ["TDL302"]
    assert _codes({"run.py": run.format("args.det")}, ["TDL302"]) == []
    assert _codes({"run.py": run.format("True, warn_only=True")}, ["TDL302"]) == []


def test_rng_tables_load() -> None:
    table = facts()
    assert "torch.manual_seed" in table.helpers and "torch.nn.Linear" in table.torch_modules
    assert "torch.nn.ReLU" not in table.torch_modules  # no random parameters: building it draws nothing


# -- TDL004 ----------------------------------------------------------------------------------------


def test_tdl004_model_then_seed_in_one_body() -> None:
    late = "import torch\nfrom torch import nn\n\n\ndef main():\n    model = nn.Linear(2, 2)\n    torch.manual_seed(0)\n"
    (diagnostic,) = lint_sources({"a.py": late}, select=["TDL004"])
    assert (diagnostic.line, diagnostic.column) == (7, 5) and "line 6" in diagnostic.message


def test_tdl004_other_bodies_and_other_generators_do_not_count() -> None:
    source = (
        "import random\nimport torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2)\n\n\n"
        "def main():\n    random.random()\n    torch.manual_seed(0)\n    build()\n"
    )
    assert lint_sources({"a.py": source}, select=["TDL004"]) == []


def test_tdl004_seed_everything_covers_numpy_draws() -> None:
    source = "import numpy as np\nimport lightning as L\n\nnp.random.rand(2)\nL.seed_everything(0)\n"
    assert _codes({"a.py": source}, ["TDL004"]) == ["TDL004"]


# -- TDL005 ----------------------------------------------------------------------------------------


def test_tdl005_seeded_through_an_attribute_is_fine() -> None:
    source = (
        "import torch\n\n\nclass S:\n    def __init__(self, seed):\n"
        "        self.g = torch.Generator()\n        self.g.manual_seed(seed)\n"
    )
    assert lint_sources({"a.py": source}, select=["TDL005"]) == []


def test_tdl005_fix_is_safe_with_torch_and_unsafe_without() -> None:
    (with_torch,) = lint_sources({"a.py": "import torch\nimport numpy as np\nrng = np.random.default_rng()\n"}, select=["TDL005"])
    assert with_torch.fix.applicability.value == "safe"
    assert with_torch.fix.edits[-1].content == "np.random.default_rng(torch.initial_seed())"
    (without,) = lint_sources({"a.py": "import numpy as np\nrng = np.random.RandomState()\n"}, {"seed": 3}, select=["TDL005"])
    assert without.fix.applicability.value == "unsafe" and without.fix.edits[-1].content == "np.random.RandomState(3)"


def test_tdl005_torch_imported_only_through_from_import_adds_import() -> None:
    (diagnostic,) = lint_sources({"a.py": "from torch import Generator\ng = Generator()\n"}, select=["TDL005"])
    contents = [e.content for e in diagnostic.fix.edits]
    assert "import torch\n" in contents and "Generator().manual_seed(torch.initial_seed())" in contents


# -- TDL006 / TDL007 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, reported",
    [
        ("os.environ['PYTHONHASHSEED'] = '0'", True),
        ("os.environ.update({'PYTHONHASHSEED': '0'})", True),
        ("os.putenv('PYTHONHASHSEED', '0')", True),
        ("os.environ['OTHER'] = '0'", False),
        ("environ = {}; environ['PYTHONHASHSEED'] = '0'", False),
    ],
)
def test_tdl006(line: str, reported: bool) -> None:
    assert bool(lint_sources({"a.py": f"import os\n{line}\n"}, select=["TDL006"])) is reported


@pytest.mark.parametrize(
    "seed, reported",
    [
        ("int(time.time())", True),
        ("time.time_ns() % 2**32", True),
        ("hash('run')", True),
        ("hash(args.name)", True),
        ("hash(3)", False),
        ("os.getpid()", True),
        ("int.from_bytes(os.urandom(4), 'little')", True),
        ("secrets.randbits(32)", True),
        ("random.randint(0, 9)", True),
        ("np.random.randint(0, 9)", True),
        ("torch.seed()", True),
        ("uuid.uuid4().int % 100", True),
        ("args.seed", False),
        ("int(os.environ['SEED'])", False),
        ("42", False),
    ],
)
def test_tdl007(seed: str, reported: bool) -> None:
    source = f"import os, random, secrets, time, uuid\nimport numpy as np\nimport torch\ntorch.manual_seed({seed})\n"
    assert bool(lint_sources({"a.py": source}, select=["TDL007"])) is reported


# -- which seeding helper the TDL001 fix calls (TDL001's "Fix safety") --------------------------------

_TRAIN = 'import torch\n\n\ndef main():\n    return torch.randn(3)\n\n\nif __name__ == "__main__":\n    main()\n'
_HELPER = (
    "import random\n\nimport numpy as np\nimport torch\n\n\ndef {name}(seed):\n"
    "    random.seed(seed)\n    np.random.seed(seed)\n    torch.manual_seed(seed)\n"
)


def _fixed_train(tmp_path, files):
    import subprocess
    import sys

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[tool.torchdet-lint]\n", encoding="utf-8")
    for name, text in {"train.py": _TRAIN, **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "torchdet_lint", "--fix", "--unsafe-fixes", "--no-cache", "-q", "."],
        cwd=tmp_path,
        capture_output=True,
    )
    return (tmp_path / "train.py").read_text(encoding="utf-8")


def test_the_fix_calls_a_public_first_party_helper(tmp_path) -> None:
    fixed = _fixed_train(tmp_path, {"utils/__init__.py": "", "utils/seeding.py": _HELPER.format(name="set_seed")})
    assert "from utils.seeding import set_seed" in fixed and "    set_seed(0)\n" in fixed


def test_the_fix_never_calls_a_helper_of_a_private_module_or_another_script(tmp_path) -> None:
    private = _fixed_train(tmp_path / "a", {"utils/__init__.py": "", "utils/_seeding.py": _HELPER.format(name="set_seed")})
    assert "set_seed" not in private and "torch.manual_seed(0)" in private
    script = _HELPER.format(name="set_seed") + '\n\nif __name__ == "__main__":\n    set_seed(1)\n'
    other_script = _fixed_train(tmp_path / "b", {"evaluate.py": script})
    assert "set_seed" not in other_script and "torch.manual_seed(0)" in other_script


def test_a_generator_parameter_in_a_file_too_deep_to_read_counts_as_a_draw() -> None:
    # The callers of `sample` cannot be read (an expression nested past the reader's depth):
    # `generator=generator` is then taken for the global generator, as without the decision.
    terms = " + ".join(f"a{i}" for i in range(1200))
    source = (
        f"import torch\n\ndef sample(n, generator=None):\n    t = {terms}\n    return torch.randn(n, generator=generator)\n\n"
        f"{MAIN}    sample(3, generator=torch.Generator().manual_seed(0))\n"
    )
    assert _codes({"a.py": source}, ["TDL001", "TDL000"]) == ["TDL001"]
