"""rules/inductor.toml (the Inductor facts behind TDL306) against the installed torch:
its sources are read as text (`torch/_inductor/config.py`, `torch/_inductor/__init__.py`,
`torch/__init__.py`), never imported, and every fact the table states for that version
must hold there. Plus the table's validation."""

from __future__ import annotations

import ast
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Dict, Optional

import pytest

from torchdet_lint.core.data import load_toml, rules_directory
from torchdet_lint.engine.config import parse_version
from torchdet_lint.model.inductor import (
    AUTOTUNE,
    CONFIG_MODULE,
    InductorFactsError,
    inductor_facts,
    parse_inductor_facts,
)


def _installed():
    try:
        dist = distribution("torch")
    except PackageNotFoundError:  # pragma: no cover - the test environment has torch
        pytest.skip("torch is not installed")
    root = Path(dist.locate_file("torch"))
    if not (root / "_inductor" / "config.py").is_file():  # pragma: no cover
        pytest.skip("torch has no Inductor sources")
    return parse_version(dist.version), root


VERSION, TORCH = _installed()
FACTS = inductor_facts()


def _tree(relative: str) -> ast.Module:
    return ast.parse((TORCH / relative).read_text(encoding="utf-8"))


def _module_assignments(tree: ast.Module) -> Dict[str, ast.expr]:
    """name -> value of the config module's top-level options (`x = ...`, `x: T = ...`)."""
    found: Dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
            found[statement.target.id] = statement.value
    return found


def _function(tree: ast.Module, name: str) -> Optional[ast.FunctionDef]:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _sets_inductor_deterministic(function: ast.FunctionDef) -> bool:
    """The function imports torch._inductor.config (any spelling) and assigns `<it>.deterministic`."""
    aliases = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == CONFIG_MODULE and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "torch._inductor":
            aliases.update(a.asname or a.name for a in node.names if a.name == "config")
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "deterministic":
                    if isinstance(target.value, ast.Name) and target.value.id in aliases:
                        return True
                    if ast.unparse(target.value) == CONFIG_MODULE:
                        return True
    return False


@pytest.mark.parametrize("setting", FACTS.settings, ids=lambda s: s.name)
def test_each_setting_exists_exactly_from_its_version(setting) -> None:
    options = _module_assignments(_tree("_inductor/config.py"))
    if VERSION >= setting.since:
        assert setting.name in options, f"torch {VERSION}: torch._inductor.config has no `{setting.name}`"
        # The option is read from its variable, compared with "1".
        text = ast.unparse(options[setting.name])
        assert repr(setting.env) in text and "'1'" in text, f"`{setting.name}` is not set from {setting.env}: {text}"
    else:
        assert setting.name not in options, f"`{setting.name}` already exists in torch {VERSION}, not only from {setting.since}"


def test_the_deterministic_option_is_known_from_2_10() -> None:
    assert FACTS.deterministic.name == "deterministic"
    assert FACTS.deterministic.env == "TORCHINDUCTOR_DETERMINISTIC"
    assert FACTS.deterministic.since == (2, 10)
    assert FACTS.flag_since == (2, 10)


@pytest.mark.parametrize("mode", FACTS.modes, ids=lambda m: m.name)
def test_each_mode_turns_on_what_the_table_says(mode) -> None:
    function = _function(_tree("_inductor/__init__.py"), "list_mode_options")
    assert function is not None
    table = next(
        node.value
        for node in ast.walk(function)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(node.value, ast.Dict)
        and any(isinstance(k, ast.Constant) and k.value == mode.name for k in node.value.keys)
    )
    entry = next(v for k, v in zip(table.keys, table.values) if isinstance(k, ast.Constant) and k.value == mode.name)
    options = ast.literal_eval(entry)
    autotune = {s.name for s in FACTS.settings if s.role == AUTOTUNE}
    turned_on = {name for name, value in options.items() if value is True and name in autotune}
    assert turned_on == set(mode.sets_at(VERSION))


def test_the_flag_sets_inductor_deterministic_mode_from_its_version() -> None:
    tree = _tree("__init__.py")
    flag = _function(tree, "use_deterministic_algorithms")
    assert flag is not None
    assert _sets_inductor_deterministic(flag) == FACTS.flag_sets_deterministic(VERSION)
    # The debug mode switch does not (so it never silences TDL306).
    debug = _function(tree, "set_deterministic_debug_mode")
    assert debug is not None and not _sets_inductor_deterministic(debug)


def test_inductor_reads_the_deterministic_option_where_it_autotunes_templates() -> None:
    source = (TORCH / "_inductor" / "select_algorithm.py").read_text(encoding="utf-8")
    assert "if config.deterministic:" in source


def test_every_fact_cites_a_source() -> None:
    assert all(setting.source for setting in FACTS.settings)
    assert all(mode.source for mode in FACTS.modes)
    assert "165950" in FACTS.flag_source


def test_the_table_is_validated() -> None:
    data = load_toml(rules_directory() / "inductor.toml")
    with pytest.raises(InductorFactsError, match="unknown key `sinse`"):
        parse_inductor_facts({**data, "setting": [{**data["setting"][0], "sinse": "2.0"}]})
    with pytest.raises(InductorFactsError, match="not a version"):
        parse_inductor_facts({**data, "flag": {**data["flag"], "sets-deterministic-since": "2.x"}})
    with pytest.raises(InductorFactsError, match="autotune settings"):
        parse_inductor_facts({**data, "mode": [{**data["mode"][0], "sets": {"2.0": ["deterministic"]}}]})
    with pytest.raises(InductorFactsError, match="exactly one"):
        parse_inductor_facts({**data, "setting": [s for s in data["setting"] if s["role"] != "deterministic"]})
