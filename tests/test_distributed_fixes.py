"""What the fixtures cannot show of the fixes for distributed runs: their titles and
applicability, as `--output-format json` gives them."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import FIXTURES, lint_json


def _fixes(tmp_path: Path, case: str, *args: str) -> dict:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / case, project)
    found = lint_json("--unsafe-fixes", *args, ".", cwd=project)
    return {(d["code"], d["path"], d["line"]): d["fix"] for d in found}


def test_a_spawned_worker_is_seeded_per_rank_and_the_title_says_so(tmp_path: Path) -> None:
    fixes = _fixes(tmp_path, "TDL001/spawn_rank", "--select", "TDL001")
    titles = {path: fix["title"] for (_, path, _), fix in fixes.items()}
    assert titles["indexed.py"].endswith("from the shared seed plus the rank (`args.seed + gpu`)"), titles
    assert titles["named.py"].endswith("from the shared seed plus the rank (`0 + local_rank`)"), titles
    assert "rank" not in titles["no_rank.py"], titles


def test_the_generator_fix_is_unsafe_only_in_a_worker_that_never_seeds_torch(tmp_path: Path) -> None:
    fixes = _fixes(tmp_path, "TDL104/spawned_unseeded", "--select", "TDL104")
    worker = fixes[("TDL104", "worker.py", 11)]
    parent = fixes[("TDL104", "worker.py", 18)]
    assert worker["applicability"] == "unsafe" and "never seeds torch" in worker["title"], worker
    assert parent["applicability"] == "safe", parent


def test_per_rank_checkpoint_fixes_gather_before_the_main_process_test(tmp_path: Path) -> None:
    fixes = _fixes(tmp_path, "TDL008/per_rank", "--select", "TDL008")
    titles = {path: fix["title"] if fix else None for (_, path, _), fix in fixes.items()}
    assert titles["spawned.py"] == (
        "Save every rank's RNG states in the checkpoint under `rng_state` (gathered on every rank before "
        "`if rank == 0:`) and restore each rank's own after the optimizer load"
    ), titles
    assert titles["single_process.py"].startswith("Save the RNG states"), titles
    assert titles["called_on_main.py"] is None and titles["unread_test.py"] is None, titles
