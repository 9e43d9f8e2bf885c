"""Qualified-name resolution: every import form (docs/decisions.md, "Names"), and rebinding."""

from __future__ import annotations

import libcst as cst
import pytest

from torchdet_lint.core.names import NOT_LITERAL, NameResolver, literal
from torchdet_lint.core.traversal import BatchedWalker


class _CallNames(cst.BatchableCSTVisitor):
    def __init__(self, resolver: NameResolver) -> None:
        super().__init__()
        self.resolver = resolver
        self.names = []

    def visit_Call(self, node: cst.Call) -> None:
        self.names.append(self.resolver.qualified_name(node.func))


def call_names(source: str, module_name=None, is_package=False):
    module = cst.parse_module(source)
    resolver = NameResolver(module_name, is_package)
    collector = _CallNames(resolver)
    BatchedWalker([resolver, collector]).walk(module)
    return collector.names


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import torch as T\nT.manual_seed(0)\n", "torch.manual_seed"),
        ("from torch import nn\nnn.Conv2d(1, 1, 3)\n", "torch.nn.Conv2d"),
        ("from torch.nn import functional as F\nF.interpolate(x)\n", "torch.nn.functional.interpolate"),
        ("from torch.utils.data import DataLoader as DL\nDL(ds)\n", "torch.utils.data.DataLoader"),
        ("import torch.nn.functional\ntorch.nn.functional.interpolate(x)\n", "torch.nn.functional.interpolate"),
        ("from torch.utils.data.dataloader import DataLoader\nDataLoader(ds)\n", "torch.utils.data.DataLoader"),
        ("import torch.utils.data.dataloader as dl\ndl.DataLoader(ds)\n", "torch.utils.data.DataLoader"),
        ("from torch.nn.modules.conv import Conv2d\nConv2d(1, 1, 3)\n", "torch.nn.Conv2d"),
        ("import torch.random\ntorch.random.manual_seed(0)\n", "torch.manual_seed"),
        ("import numpy as np\nnp.random.seed(0)\n", "numpy.random.seed"),
        ("from numpy import random as npr\nnpr.seed(0)\n", "numpy.random.seed"),
        ("import pytorch_lightning as pl\npl.seed_everything(0)\n", "lightning.seed_everything"),
        ("from lightning.pytorch import seed_everything\nseed_everything(0)\n", "lightning.seed_everything"),
        ("import torch\nF = torch.nn.functional\nF.interpolate(x)\n", "torch.nn.functional.interpolate"),
        ("def f():\n    import torch.nn.functional as F\n    F.interpolate(x)\n", "torch.nn.functional.interpolate"),
        ("def f():\n    return F.pad(x)\nimport torch.nn.functional as F\n", "torch.nn.functional.pad"),
        (
            "try:\n    from torch.utils.data import DataLoader\nexcept ImportError:\n    DataLoader = None\nDataLoader(ds)\n",
            "torch.utils.data.DataLoader",
        ),
        ("sorted(xs)\n", "builtins.sorted"),
    ],
)
def test_alias_forms_resolve(source: str, expected: str) -> None:
    assert call_names(source)[-1] == expected


@pytest.mark.parametrize(
    "source",
    [
        # a local function called DataLoader rebinds the name
        "from torch.utils.data import DataLoader\ndef DataLoader(*a):\n    pass\nDataLoader(ds)\n",
        # a class of the same name
        "from torch.utils.data import DataLoader\nclass DataLoader:\n    pass\nDataLoader(ds)\n",
        # a parameter shadows the module-level import
        "import torch.nn.functional as F\ndef f(F):\n    return F.interpolate(x)\n",
        # an assignment rebinds it
        "from torch import manual_seed\nmanual_seed = print\nmanual_seed(0)\n",
        # a loop variable
        "import torch\nfor torch in things:\n    torch.manual_seed(0)\n",
        # a name bound later at module level is what functions see
        "from torch.utils.data import DataLoader\ndef make():\n    return DataLoader(ds)\ndef DataLoader(*a):\n    pass\n",
    ],
)
def test_rebinding_does_not_match(source: str) -> None:
    names = call_names(source)
    assert not any(name and name.startswith("torch.") for name in names), names


def test_class_body_names_are_not_visible_in_methods() -> None:
    source = "import torch\nclass A:\n    torch = None\n    def f(self):\n        torch.manual_seed(0)\n"
    assert call_names(source) == ["torch.manual_seed"]


def test_relative_imports_use_the_package() -> None:
    source = "from .utils import seed_all\nfrom ..common.seed import fix\nseed_all()\nfix()\n"
    assert call_names(source, module_name="proj.train.main") == ["proj.train.utils.seed_all", "proj.common.seed.fix"]
    assert call_names("from . import seed\nseed.all()\n", module_name="proj", is_package=True) == ["proj.seed.all"]


@pytest.mark.parametrize(
    "source, value",
    [("True", True), ("None", None), ("-3", -3), ("'bi' 'linear'", "bilinear"), ("(1, 1)", (1, 1)), ("[2, 'a']", [2, "a"])],
)
def test_literals(source: str, value) -> None:
    assert literal(cst.parse_expression(source)) == value


@pytest.mark.parametrize("source", ["x", "f(1)", "(1, x)", "f'{x}'", "not True"])
def test_non_literals(source: str) -> None:
    assert literal(cst.parse_expression(source)) is NOT_LITERAL
