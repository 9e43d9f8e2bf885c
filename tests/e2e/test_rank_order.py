"""End to end on 2 spawned ranks (gloo on CPU): orders the ranks must share.

TDL011 (programs/rank_seeds): each rank draws its own seed from an unseeded `random` and hands it
to its `DistributedSampler`; the union of the ranks' indices in one epoch has duplicates. After
`--fix --unsafe-fixes` (rank 0's seed broadcast) the ranks' index sets are disjoint and cover the
dataset.

Dependent fixes (programs/spawned_split): a spawned worker that never seeds torch (TDL001) splits
with `random_split` and no generator (TDL104). `--fix` alone must not leave a generator seeded
from an unseeded torch (TDL104's fix is unsafe there); `--fix --unsafe-fixes` seeds the worker
per rank, gives the split a generator and takes rank 0's seed for it (TDL011), so the ranks'
splits are the same in every run, and the same on every rank.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, List

from conftest import run_cli
from process_tree import last_line

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _per_rank(directory: Path) -> Dict[str, List[int]]:
    ranks = {}
    for part in last_line(["train.py"], directory).split():
        rank, _, indices = part.partition(":")
        ranks[rank] = [int(index) for index in indices.split(",")]
    assert sorted(ranks) == ["0", "1"], ranks
    return ranks


def test_ranks_share_the_sampler_seed_after_the_fix(tmp_path: Path) -> None:
    program = tmp_path / "rank_seeds"
    shutil.copytree(PROGRAMS / "rank_seeds", program)
    ranks = _per_rank(program)
    union = ranks["0"] + ranks["1"]
    assert len(set(union)) < len(union), f"the ranks' seeds differ, so their shares overlap: {ranks}"

    reported = json.loads(run_cli("--output-format", "json", "--no-cache", "--select", "TDL011", ".", cwd=program)[1])
    assert [d["code"] for d in reported] == ["TDL011"] and "random.randint" in program.joinpath("train.py").read_text()
    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code == 0, f"{out}\n{err}"

    ranks = _per_rank(program)
    assert not set(ranks["0"]) & set(ranks["1"]), ranks
    assert sorted(ranks["0"] + ranks["1"]) == list(range(20)), ranks


def test_a_split_in_a_spawned_worker_is_fixed_with_its_seed(tmp_path: Path) -> None:
    program = tmp_path / "spawned_split"
    shutil.copytree(PROGRAMS / "spawned_split", program)
    source = (program / "train.py").read_text()

    reported = {d["code"]: d for d in json.loads(run_cli("--output-format", "json", "--no-cache", ".", cwd=program)[1])}
    assert {"TDL001", "TDL104"} <= set(reported), reported
    assert reported["TDL104"]["fix"]["applicability"] == "unsafe", reported["TDL104"]

    code, out, err = run_cli("--fix", "--no-cache", ".", cwd=program)
    assert (program / "train.py").read_text() == source, "--fix alone left a generator seeded from an unseeded torch"

    code, out, err = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=program)
    assert code == 0, f"{out}\n{err}"
    fixed = (program / "train.py").read_text()
    assert "torch.manual_seed(args.seed + rank)" in fixed and "rank_zero_value(torch.initial_seed())" in fixed, fixed

    first, second = _per_rank(program), _per_rank(program)
    assert first == second, f"the ranks' splits still change between runs: {first} {second}"
    assert first["0"] == first["1"], f"the ranks split differently: {first}"
