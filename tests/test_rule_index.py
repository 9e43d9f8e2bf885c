"""The registry's index of the rules (`torchdet_lint/checks/rule_index.py`) says what the rule
classes say, and a run imports only the rule modules its files need."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ROOT

from torchdet_lint.checks import all_rules, rule_codes, rule_profiles
from torchdet_lint.checks.registry import INDEX_FILE, REGENERATE, discover_rules, render_index


def test_the_index_is_current() -> None:
    assert INDEX_FILE.read_text(encoding="utf-8") == render_index(), (
        f"{INDEX_FILE.name} is stale (a rule, its words, profiles or collectors changed): run `{REGENERATE}`"
    )


def test_the_registry_holds_the_rules_the_families_define() -> None:
    discovered = discover_rules()
    assert all_rules() == discovered
    assert rule_codes() == tuple(discovered)
    assert all(rule_profiles(code) == rule.profiles for code, rule in discovered.items())


_IMPORTED_RULES = textwrap.dedent(
    """
    import json, sys
    from torchdet_lint.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("torchdet_lint.checks."))))
    """
)


def _imported_rule_modules(tmp_path, *args: str) -> list:
    completed = subprocess.run(
        [sys.executable, "-c", _IMPORTED_RULES, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert completed.returncode == 0, completed.stderr
    import json

    return json.loads(completed.stdout.splitlines()[-1])


def test_a_run_imports_only_the_rules_whose_words_its_files_hold(tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n", encoding="utf-8")
    modules = _imported_rule_modules(tmp_path, "--no-cache", "--quiet", "--select", "ALL", "train.py")
    assert "torchdet_lint.checks.switches" in modules  # TDL301's `benchmark`
    assert "torchdet_lint.checks.ops" in modules  # TDL201-203 run on every file
    # Neither `DataLoader`, `random_split`, `glob`, `PYTHONHASHSEED`, `.numpy(` nor `DataParallel` is there.
    for unneeded in (
        "torchdet_lint.checks.dataloader.dataloader_out_of_order",
        "torchdet_lint.checks.dataloader.unseeded_random_split",
        "torchdet_lint.checks.dataloader.unordered_file_listing",
        "torchdet_lint.checks.seeding.ineffective_pythonhashseed",
        "torchdet_lint.checks.performance.tensor_copies_numpy",
        "torchdet_lint.checks.performance.data_parallel",
    ):
        assert unneeded not in modules


def test_the_rule_command_imports_the_rule_it_shows(tmp_path) -> None:
    modules = _imported_rule_modules(tmp_path, "rule", "TDL404")
    assert "torchdet_lint.checks.performance.data_parallel" in modules
