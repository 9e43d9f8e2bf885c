"""Third-party libraries (docs/decisions.md, "Libraries as data"; TDL203's table): their kernels by library
version (config, installed metadata, newest known), DataLoader subclasses, seed helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from torchdet_lint.engine.config import ConfigError, load_config_file
from torchdet_lint.testing import lint_sources

KERNELS = textwrap.dedent(
    """\
    from torchvision.ops import RoIAlign, deform_conv2d, nms, roi_pool
    from torch_scatter import segment_csr
    from flash_attn import flash_attn_func


    def heads(x, boxes, offset, weight, scores, ptr, q, k, v):
        a = roi_pool(x, boxes, 7)
        b = RoIAlign(7, 1.0, 2)
        c = deform_conv2d(x, offset, weight)
        d = nms(boxes, scores, 0.5)
        e = segment_csr(x, ptr)
        f = flash_attn_func(q, k, v, deterministic=True)
        return a, b, c, d, e, f
    """
)
CODES = ["TDL201", "TDL202", "TDL203"]


def _codes(config: Dict[str, object], sources: Dict[str, str] = None) -> List[Tuple[int, str]]:
    diagnostics = lint_sources(sources or {"heads.py": KERNELS}, config, select=CODES)
    return [(d.line, d.code) for d in diagnostics]


def test_the_same_file_by_torchvision_version() -> None:
    assert _codes({"library-versions": {"torchvision": "0.15"}}) == [(7, "TDL203"), (8, "TDL203"), (9, "TDL203")]
    assert _codes({"library-versions": {"torchvision": "0.18"}}) == [(7, "TDL202"), (8, "TDL201"), (9, "TDL202")]


def test_messages_name_the_library_version() -> None:
    old = lint_sources({"heads.py": KERNELS}, {"library-versions": {"torchvision": "0.15"}}, select=CODES)
    new = lint_sources({"heads.py": KERNELS}, {"library-versions": {"torchvision": "0.18"}}, select=CODES)
    assert "torchvision 0.15" in old[0].message
    assert "in torchvision 0.18" in new[0].message and "torchvision 0.18 has a deterministic implementation" in new[1].message


def test_no_false_alarm_on_deterministic_third_party_calls() -> None:
    source = textwrap.dedent(
        """\
        from torchvision.ops import batched_nms, nms
        from torch_scatter import segment_csr
        from flash_attn import flash_attn_func, flash_attn_varlen_func


        def f(boxes, scores, idxs, x, ptr, q, k, v, cu, m):
            return (
                nms(boxes, scores, 0.5),
                batched_nms(boxes, scores, idxs, 0.5),
                segment_csr(x, ptr, reduce="sum"),
                segment_csr(x, ptr, reduce="max"),
                flash_attn_func(q, k, v, causal=True, deterministic=True),
                flash_attn_varlen_func(q, k, v, cu, cu, m, m, deterministic=True),
            )
        """
    )
    assert lint_sources({"f.py": source}, {"profile": "strict"}, select=CODES) == []


def _fake_site_packages(root: Path, distribution: str, version: str) -> Path:
    site = root / "site"
    info = site / f"{distribution}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n\nA fake.\n", encoding="utf-8"
    )
    return site


@pytest.mark.parametrize("installed, expected", [("0.15.2", "TDL203"), ("0.19.0+cu121", "TDL202")])
def test_the_installed_version_comes_from_package_metadata(tmp_path: Path, installed: str, expected: str) -> None:
    """Without config, the installed torchvision's METADATA decides; torchvision is never imported
    (the fake distribution has no package at all)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "heads.py").write_text(KERNELS, encoding="utf-8")
    site = _fake_site_packages(tmp_path, "torchvision", installed)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    completed = subprocess.run(
        [sys.executable, "-m", "torchdet_lint", "--no-cache", "--select", "TDL2", "--output-format", "concise", "heads.py"],
        cwd=project,
        capture_output=True,
        text=True,
        env=environment,
    )
    first = completed.stdout.splitlines()[0]
    assert f" {expected} " in first and f"torchvision {'.'.join(installed.split('.')[:2])}" in first, completed.stdout


def test_without_config_or_metadata_the_newest_known_version() -> None:
    from torchdet_lint.engine.config import installed_version

    assert installed_version("torchvision") is None  # the test environment has torch only
    diagnostics = lint_sources({"heads.py": KERNELS}, {}, select=CODES)
    assert [(d.line, d.code) for d in diagnostics] == [(7, "TDL202"), (8, "TDL201"), (9, "TDL202")]
    assert "torchvision 0.29" in diagnostics[0].message


def test_library_versions_config_is_validated(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.torchdet-lint]\nlibrary-versions = { torchvision = 18 }\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"`library-versions.torchvision` must be a version string"):
        load_config_file(config)
    config.write_text('[tool.torchdet-lint]\nlibrary-versions = "0.18"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"`library-versions` must be a table"):
        load_config_file(config)


# -- DataLoader subclasses ----------------------------------------------------------------------


def test_graph_loaders_are_dataloaders() -> None:
    source = textwrap.dedent(
        """\
        from dgl.dataloading import GraphDataLoader
        from torch_geometric.loader import DataLoader, NeighborLoader


        def loaders(dataset, data, nodes, g):
            a = DataLoader(dataset, 32, True)  # DataLoader's own positions: shuffle=True
            b = NeighborLoader(data, [10, 10], nodes, shuffle=True)
            c = NeighborLoader(data, [10, 10], nodes)  # the third position is input_nodes, not shuffle
            d = GraphDataLoader(dataset, batch_size=4, shuffle=True)
            e = GraphDataLoader(dataset, batch_size=4, shuffle=True, generator=g)
            return a, b, c, d, e
        """
    )
    diagnostics = lint_sources({"loaders.py": source}, {}, select=["TDL101"])
    assert [d.line for d in diagnostics] == [6, 7, 9]


# -- seed helpers -------------------------------------------------------------------------------

TRAIN = """\
import torch
{import_line}


def main():
    {seed_line}
    model = torch.nn.Linear(4, 4)
    return model(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    "import_line, seed_line, seeded",
    [
        ("import torch_geometric", "torch_geometric.seed_everything(0)", True),
        ("from torch_geometric import seed_everything", "seed_everything(0)", True),
        ("from timm.utils import random_seed", "random_seed(0)", True),
        ("from timm.utils.random import random_seed", "random_seed(42, rank=0)", True),
        ("import dgl", "dgl.seed(0)", False),  # DGL's own generator only
    ],
)
def test_library_seed_helpers(import_line: str, seed_line: str, seeded: bool) -> None:
    source = TRAIN.format(import_line=import_line, seed_line=seed_line)
    diagnostics = lint_sources({"train.py": source}, {}, select=["TDL001"])
    assert (diagnostics == []) is seeded, [d.message for d in diagnostics]


LIGHTNING = """\
import lightning as L
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __getitem__(self, i):
        return self.rng.random()


class Data(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(Noisy(), num_workers=2)


def main():
    L.seed_everything(0{workers})
    trainer = L.Trainer()
    loader = DataLoader(Noisy(), num_workers=4)
    trainer.fit(None, loader)
    return DataLoader(Noisy(), num_workers=4)  # never handed to the Trainer


if __name__ == "__main__":
    main()
"""


def test_lightning_seed_everything_with_workers_covers_the_trainers_loaders() -> None:
    def lines(workers: str) -> List[int]:
        return [d.line for d in lint_sources({"train.py": LIGHTNING.format(workers=workers)}, {}, select=["TDL102"])]

    assert lines("") == [16, 22, 24]
    assert lines(", workers=True") == [24]
    assert lines(", workers=False") == [16, 22, 24]
