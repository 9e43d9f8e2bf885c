"""What the analysis knows of gradients and input ranks beyond the fixtures: registration APIs in
files the pre-filter skips, the registration table, and the narrowing of `if` tests."""

from __future__ import annotations

import libcst as cst
import pytest

from torchdet_lint.core.catalog import OneOf, Truth, load_catalog
from torchdet_lint.core.registrations import below_autograd_key, stores_functions
from torchdet_lint.core.scopes import narrowing
from torchdet_lint.testing import lint_sources

GPU_HELPER = 'import torch\n\n\ndef release():\n    print(torch.ones(1, device="cuda").sum())\n'
TRAIN = (
    "import torch\n\nimport hooks\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n    hooks.install()\n"
    "    torch.nn.Linear(2, 1)(torch.ones(1, 2)).sum().backward()\n"
)


@pytest.mark.parametrize(
    "install, reached",
    [
        ("atexit.register(release)", False),
        ("release()", True),
    ],
)
def test_a_registered_function_is_not_reached_from_a_skipped_file(install: str, reached: bool) -> None:
    # hooks.py names none of the pre-filter's words: its summary comes from the `ast` scan.
    hooks = f"import atexit\n\nfrom gpu import release\n\n\ndef install():\n    {install}\n"
    diagnostics = lint_sources({"train.py": TRAIN, "hooks.py": hooks, "gpu.py": GPU_HELPER}, select=["TDL302"])
    assert [d.code for d in diagnostics] == (["TDL302"] if reached else [])


def test_registration_table() -> None:
    assert stores_functions("atexit.register", None)
    assert stores_functions("torch.library.register_autograd", None)
    assert stores_functions(None, "register_forward_hook")
    assert stores_functions(None, "register_full_backward_pre_hook")
    assert not stores_functions(None, "register_buffer")
    assert not stores_functions(None, "impl")  # `Library.impl` only on a known Library
    assert stores_functions(None, "impl", library_receiver=True)
    assert not stores_functions("functools.partial", None)


@pytest.mark.parametrize(
    "keys, expected",
    [(["demo::op", "cuda"], True), (["op", "Autograd"], True), (["op", "CompositeImplicitAutograd"], False), (["op"], None)],
)
def test_dispatch_keys(keys, expected) -> None:
    assert below_autograd_key(keys) is expected


@pytest.mark.parametrize(
    "test, body, orelse",
    [
        ('mode == "nearest"', {"mode": ("nearest",)}, {}),
        ('"nearest" == mode', {"mode": ("nearest",)}, {}),
        ('mode != "nearest"', {}, {"mode": ("nearest",)}),
        ('mode in ("nearest", "area")', {"mode": ("nearest", "area")}, {}),
        ('mode not in ["nearest"]', {}, {"mode": ("nearest",)}),
        ('not mode == "nearest"', {}, {"mode": ("nearest",)}),
        ('self.mode == "nearest" and x.dim() == 4', {"self.mode": ("nearest",)}, {}),
        ('mode == "nearest" or mode == "area"', {"mode": ("nearest", "area")}, {}),
        ('mode == "nearest" or size is None', {}, {}),
        ("mode == other", {}, {}),
    ],
)
def test_narrowing(test: str, body, orelse) -> None:
    assert narrowing(cst.parse_expression(test)) == (body, orelse)


def test_one_of_several_values_meets_a_condition_when_all_do() -> None:
    interpolate = next(op for op in load_catalog().operations if op.id == "interpolate_backward")
    bicubic = next(case for case in interpolate.cases if case.label == "mode='bicubic'")
    condition = bicubic.when[0]
    assert condition.evaluate(OneOf(("nearest", "area"))) is Truth.NO
    assert condition.evaluate(OneOf(("bicubic",))) is Truth.YES
    assert condition.evaluate(OneOf(("nearest", "bicubic"))) is Truth.MAYBE
