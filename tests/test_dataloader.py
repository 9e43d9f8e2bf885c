"""Data loading rules: generators, worker seeding across modules, samplers, file listings."""

from __future__ import annotations

import textwrap

import pytest

from torchdet_lint.testing import lint_sources

NOISY = textwrap.dedent(
    """\
    import numpy as np
    import torch
    from torch.utils.data import Dataset


    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return 4

        def __getitem__(self, index):
            return torch.tensor(self.rng.random())


    class Legacy(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            return torch.tensor(np.random.rand())
    """
)


def _loader(dataset: str, extra: str = ", num_workers=2") -> str:
    return f"from torch.utils.data import DataLoader\nfrom data import Legacy, Noisy\n\nloader = DataLoader({dataset}{extra})\n"


def _codes(sources, config=None, select=("TDL102",)):
    return [d.code for d in lint_sources(sources, config, select=list(select))]


# -- TDL102: acceptance -----------------------------------------------------------------------------


def test_tdl102_rng_object_in_another_module_fires_and_global_numpy_does_not() -> None:
    assert _codes({"data.py": NOISY, "train.py": _loader("Noisy()")}) == ["TDL102"]
    assert _codes({"data.py": NOISY, "train.py": _loader("Legacy()")}) == []


@pytest.mark.parametrize("config", [{"torch-version": "1.8"}, {"profile": "strict"}])
def test_tdl102_every_loader_with_workers_under_old_torch_or_strict(config) -> None:
    assert _codes({"data.py": NOISY, "train.py": _loader("Legacy()")}, config) == ["TDL102"]
    assert _codes({"data.py": NOISY, "train.py": _loader("Legacy()", ", num_workers=0")}, config) == []


@pytest.mark.parametrize(
    "extra",
    [", num_workers=0", "", ", num_workers=2, worker_init_fn=init", ", **kwargs"],
)
def test_tdl102_silent_without_workers_or_with_worker_init(extra: str) -> None:
    assert _codes({"data.py": NOISY, "train.py": _loader("Noisy()", extra)}) == []


@pytest.mark.parametrize(
    "body",
    [
        "ds = Noisy()\nloader = DataLoader(ds, num_workers=2)\n",
        "from torch.utils.data import Subset\nloader = DataLoader(Subset(Noisy(), [0, 1]), num_workers=2)\n",
        (
            "from torch.utils.data import random_split\ntrain, val = random_split(Noisy(), [2, 2])\n"
            "loader = DataLoader(val, num_workers=2)\n"
        ),
        "from torch.utils.data import ConcatDataset\nloader = DataLoader(ConcatDataset([Legacy(), Noisy()]), num_workers=2)\n",
        "import data\nloader = DataLoader(data.Noisy(), num_workers=2)\n",
        "def make():\n    ds = Noisy()\n    return DataLoader(dataset=ds, num_workers=4)\n",
    ],
)
def test_tdl102_dataset_resolution(body: str) -> None:
    train = "from torch.utils.data import DataLoader\nfrom data import Legacy, Noisy\n" + body
    assert _codes({"data.py": NOISY, "train.py": train}) == ["TDL102"]


def test_tdl102_rng_in_a_base_class_and_in_a_package() -> None:
    sources = {
        "pkg/__init__.py": "",
        "pkg/base.py": (
            "import random\nfrom torch.utils.data import Dataset\n\n\nclass Base(Dataset):\n"
            "    def __init__(self):\n        self.coin = random.Random(1)\n"
        ),
        "pkg/child.py": (
            "from .base import Base\n\n\nclass Child(Base):\n    def __getitem__(self, i):\n        return self.coin.random()\n"
        ),
        "train.py": (
            "from torch.utils.data import DataLoader\nfrom pkg.child import Child\n\n"
            "loader = DataLoader(Child(), num_workers=2)\n"
        ),
    }
    (diagnostic,) = lint_sources(sources, select=["TDL102"])
    assert "`self.coin`" in diagnostic.message and "pkg/base.py:7" in diagnostic.message


def test_tdl102_rng_made_in_getitem_is_fine() -> None:
    data = (
        "import numpy as np\nfrom torch.utils.data import Dataset\n\n\nclass D(Dataset):\n"
        "    def __getitem__(self, i):\n        self.rng = np.random.default_rng(i)\n"
        "        return self.rng.random()\n"
    )
    train = "from torch.utils.data import DataLoader\nfrom data import D\n\nloader = DataLoader(D(), num_workers=2)\n"
    assert _codes({"data.py": data, "train.py": train}) == []


def test_tdl102_fix_reuses_an_existing_seed_worker_and_recreates_the_rng() -> None:
    train = (
        "import torch\nfrom torch.utils.data import DataLoader\nfrom data import Noisy\n\n\n"
        "def seed_worker(worker_id):\n    torch.manual_seed(torch.initial_seed())\n\n\n"
        "loader = DataLoader(Noisy(), num_workers=2)\n"
    )
    (diagnostic,) = lint_sources({"data.py": NOISY, "train.py": train}, select=["TDL102"])
    contents = [edit.content for edit in diagnostic.fix.edits]
    assert contents[-1] == "DataLoader(Noisy(), num_workers=2, worker_init_fn=seed_worker)"
    assert "def seed_worker" not in "".join(contents)
    assert any("dataset.rng = numpy.random.default_rng(worker_seed)" in c for c in contents)
    assert diagnostic.fix.applicability.value == "safe"


# -- the other data-loading rules ---------------------------------------------------------------------


def test_tdl101_inline_sampler_fix_goes_to_the_sampler() -> None:
    source = "import torch\nfrom torch.utils.data import DataLoader, RandomSampler\nDataLoader(ds, sampler=RandomSampler(ds))\n"
    (diagnostic,) = lint_sources({"a.py": source}, select=["TDL101"])
    assert diagnostic.fix.edits[0].content.startswith("RandomSampler(ds, generator=torch.Generator()")


def test_tdl104_sampler_bound_to_a_name_is_tdl104_not_tdl101() -> None:
    source = (
        "from torch.utils.data import DataLoader, RandomSampler\nsampler = RandomSampler(ds)\nDataLoader(ds, sampler=sampler)\n"
    )
    assert sorted(d.code for d in lint_sources({"a.py": source}, select=["TDL101", "TDL104"])) == ["TDL104"]


def test_tdl105_set_epoch_through_the_loader_counts() -> None:
    source = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "loader = DataLoader(d, sampler=DistributedSampler(d))\nfor e in range(2):\n"
        "    loader.sampler.set_epoch(e)\n"
    )
    assert lint_sources({"a.py": source}, select=["TDL105"]) == []
    assert [d.code for d in lint_sources({"a.py": source.replace("loader.sampler.set_epoch(e)", "pass")}, select=["TDL105"])] == [
        "TDL105"
    ]


@pytest.mark.parametrize(
    "source, reported",
    [
        ("import os\nfor name in os.listdir('.'):\n    print(name)\n", False),  # not a dataset file
        ("import os\nimport torchvision\nfiles = os.listdir('.')\nds = torchvision.datasets.MNIST('.')\n", True),
        ("import os\nfrom torch.utils.data import TensorDataset\nfiles = os.listdir('.')\nTensorDataset()\n", True),
        (
            (
                "import os\nfrom torch.utils.data import IterableDataset\nclass S(IterableDataset):\n"
                "    def __iter__(self):\n"
                "        yield from sorted(os.scandir('.'), key=lambda e: e.name)\n"
            ),
            False,
        ),
        (
            (
                "import glob\nfrom torch.utils.data import Dataset\nclass S(Dataset):\n"
                "    n = len(glob.glob('*'))\n    has = 'x' in glob.glob('*')\n"
            ),
            False,
        ),
    ],
)
def test_tdl106_dataset_files_and_order_free_uses(source: str, reported: bool) -> None:
    assert bool(lint_sources({"a.py": source}, select=["TDL106"])) is reported
