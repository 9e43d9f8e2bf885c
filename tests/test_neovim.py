"""A real editor shows torchdet-lint's diagnostics: a headless Neovim, configured
with the snippet of docs/integrations.md, opens a file of a small project,
applies a quick fix, saves, and types a new problem (tests/editors/nvim_driver.lua
does what a user would; this test checks what it saw).

Neovim is installed from the system packages when missing (tests/neovim.py).
Debian 12's is 0.7, older than the documented configuration's `vim.lsp.start`
and `vim.fs` (0.8): there tests/editors/nvim_0_7_compat.lua supplies them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from doc_snippets import snippet
from editor_project import EXPECTED, FIXED, HAZARD, NEW_LINE, NEW_PROBLEM, path_with, seed_project
from neovim import ensure_neovim, isolated_env, neovim_version

EDITORS = Path(__file__).resolve().parent / "editors"
TIMEOUT_MS = 60000


def test_neovim_shows_fixes_and_updates_the_diagnostics(tmp_path: Path) -> None:
    nvim = ensure_neovim()
    project = seed_project(tmp_path)
    config = tmp_path / "init.lua"
    config.write_text(snippet("neovim"), encoding="utf-8")
    result_file = tmp_path / "result.json"
    plan = {
        "config": str(config),
        "compat": str(EDITORS / "nvim_0_7_compat.lua") if neovim_version(nvim) < (0, 8) else None,
        "file": str(project.train),
        "project_code": "TDL003",
        "fix_code": "TDL301",
        "new_line": NEW_LINE,
        "new_code": NEW_PROBLEM[0],
        "timeout_ms": TIMEOUT_MS,
        "result": str(result_file),
    }
    env = isolated_env(tmp_path, path_with(project))
    env["TDL_PLAN"] = json.dumps(plan)
    completed = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {EDITORS / 'nvim_driver.lua'}"],
        cwd=project.root,
        env=env,
        stdin=subprocess.DEVNULL,  # CI has no standard input
        capture_output=True,
        text=True,
        timeout=TIMEOUT_MS / 1000 * 4,
    )
    assert result_file.exists(), f"Neovim wrote no result:\n{completed.stdout}\n{completed.stderr}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result.get("error") is None, result

    # The diagnostics arrive with their codes and ranges; the helper module's seeds count
    # (otherwise TDL001 and TDL002 would be there too).
    assert [tuple(d) for d in result["opened"]] == EXPECTED
    # The quick fix, applied and saved, is on disk.
    assert result["applied_title"] == "TDL301: Set `cudnn.benchmark` to `False`"
    assert project.train.read_text(encoding="utf-8") == FIXED
    assert HAZARD not in FIXED
    assert [d[0] for d in result["after_fix"]] == ["TDL003", "TDL101"]
    # A line typed afterwards is reported once the edits settle.
    assert [tuple(d) for d in result["after_edit"]] == sorted(
        [e for e in EXPECTED if e[0] != "TDL301"] + [NEW_PROBLEM], key=lambda d: (d[1], d[2])
    )
    print(
        f"\nNeovim {'.'.join(map(str, neovim_version(nvim)))}: open -> first diagnostics "
        f"{result['open_to_first_diagnostics_ms']:.0f} ms, -> with the project's "
        f"{result['open_to_project_diagnostics_ms']:.0f} ms; edit -> diagnostics {result['edit_to_diagnostics_ms']:.0f} ms"
    )
