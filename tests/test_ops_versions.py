"""One file linted at torch 1.8, 2.0 and 2.13: TDL201/TDL202 follow the catalog's
behaviour per version (rules/ops.toml, read in PyTorch's code where its docstring lags)."""

from __future__ import annotations

from typing import Dict, Tuple

import pytest

from torchdet_lint.testing import lint_sources

SOURCE = """\
import torch
import torch.nn.functional as F


def ops(x, index, source):
    a = torch.kthvalue(x, 2, 0)
    b = F.interpolate(x, scale_factor=2, mode="bilinear")
    c = x.cumsum(0)
    x.index_add_(0, index, source)
    d = F.pad(x, (1, 1, 1, 1), mode="replicate")
    e = torch.bincount(index)
    f = F.interpolate(x, scale_factor=2, mode="bicubic")
    return a, b, c, d, e, f
"""
LINES = {"kthvalue": 6, "bilinear": 7, "cumsum": 8, "index_add_": 9, "replicate": 10, "bincount": 11, "bicubic": 12}

# operation -> code reported at (1.8, 2.0, 2.13); None: not reported
EXPECTED = {
    "kthvalue": ("TDL202", "TDL202", None),  # raises 1.8-2.9, deterministic from 2.10
    "bilinear": ("TDL202", "TDL202", "TDL201"),  # decomposition under the flag from 2.1
    "cumsum": (None, "TDL202", "TDL201"),  # listed from 1.13; deterministic CUDA kernel from 2.6
    "index_add_": ("TDL202", "TDL201", "TDL201"),  # deterministic alternative from 1.9
    "replicate": ("TDL202", "TDL202", "TDL201"),  # 2-d replication padding from 2.2
    "bincount": ("TDL202", "TDL202", None),  # without weights: deterministic from 2.1
    "bicubic": ("TDL202", "TDL202", "TDL202"),  # never deterministic
}
VERSIONS = ("1.8", "2.0", "2.13")


def _codes_by_line(torch_version: str) -> Dict[int, str]:
    diagnostics = lint_sources({"ops.py": SOURCE}, {"torch-version": torch_version}, select=["TDL201", "TDL202"])
    by_line: Dict[int, str] = {}
    for d in diagnostics:
        assert d.line not in by_line, f"two TDL2xx diagnostics on line {d.line}"
        by_line[d.line] = d.code
        assert f"torch {torch_version}" in d.message
    return by_line


@pytest.fixture(scope="module")
def results() -> Dict[str, Dict[int, str]]:
    return {v: _codes_by_line(v) for v in VERSIONS}


@pytest.mark.parametrize("operation", list(EXPECTED))
def test_behaviour_per_version(results, operation: str) -> None:
    actual: Tuple = tuple(results[v].get(LINES[operation]) for v in VERSIONS)
    assert actual == EXPECTED[operation], operation


def test_the_versions_really_differ(results) -> None:
    assert results["1.8"] != results["2.0"] != results["2.13"]


def test_without_a_configured_version_the_installed_torch_is_the_target() -> None:
    from importlib.metadata import version

    from torchdet_lint.engine.config import parse_version

    installed = "%d.%d" % parse_version(version("torch"))
    diagnostics = lint_sources({"ops.py": SOURCE}, {}, select=["TDL202"])
    assert diagnostics and all(f"torch {installed}" in d.message for d in diagnostics)
