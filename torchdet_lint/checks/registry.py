"""Finding every rule by importing every family, and writing the light index of them
(`rule_index.py`) that lets a run import only the rule modules its files need.

`python -m torchdet_lint.checks.registry` rewrites the index; a test fails when it is stale.
"""

from __future__ import annotations

import importlib
import pkgutil
import pprint
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Type

from torchdet_lint.core.rule import BaseRule, ProjectRule, Rule, RuleRegistryError, _words
from torchdet_lint.core.settings import Settings

# The families: a module, or a package whose every module is searched (a new rule's module
# needs no import added anywhere).
FAMILIES = (
    "torchdet_lint.checks.switches",
    "torchdet_lint.checks.compile_autotuning",
    "torchdet_lint.checks.ops",
    "torchdet_lint.checks.seeding",
    "torchdet_lint.checks.dataloader",
    "torchdet_lint.checks.performance",
    "torchdet_lint.checks.deterministic_mode_not_enabled",
    "torchdet_lint.checks.unused_noqa",
)
INDEX_FILE = Path(__file__).with_name("rule_index.py")
REGENERATE = "python -m torchdet_lint.checks.registry"


def _family_rules(family_name: str) -> List[Type[BaseRule]]:
    """The rules a family defines (its own classes, not ones it imports from another family),
    in the family module or in any module of the family package."""
    family = importlib.import_module(family_name)
    modules = [family]
    if hasattr(family, "__path__"):
        modules += [importlib.import_module(f"{family_name}.{info.name}") for info in pkgutil.iter_modules(family.__path__)]
    found = []
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseRule) and value.is_rule():
                if value.__module__.startswith(family_name) and value not in found:
                    found.append(value)
    return found


def discover_rules(extra: Tuple[Type[BaseRule], ...] = ()) -> Dict[str, Type[BaseRule]]:
    """Every rule of every family (and `extra`) by code, sorted; a duplicate code fails."""
    registry: Dict[str, Type[BaseRule]] = {}
    for rule in [rule for family in FAMILIES for rule in _family_rules(family)] + list(extra):
        known = registry.get(rule.code)
        if known is not None and known is not rule:
            raise RuleRegistryError(f"duplicate rule code {rule.code}: {known.__name__} and {rule.__name__}")
        registry[rule.code] = rule
    return dict(sorted(registry.items()))


def _path(value: type) -> str:
    return f"{value.__module__}:{value.__qualname__}"


def _static_words(rule: Type[BaseRule]) -> Optional[Tuple[str, ...]]:
    """The words a file must hold for the rule to run on it, when they are known without the
    rule's module: None when the rule computes them (from the catalogs or the configuration)."""
    if not issubclass(rule, Rule) or getattr(rule.words, "__func__", None) is not Rule.words.__func__:
        return None
    if getattr(rule.may_report_in, "__func__", None) is not Rule.may_report_in.__func__:
        return None
    return _words(rule, Settings())


def index_entry(rule: Type[BaseRule]) -> dict:
    """What the registry knows of a rule without importing it."""
    kind = "file" if issubclass(rule, Rule) else "project" if issubclass(rule, ProjectRule) else "meta"
    own_prefilter = getattr(rule.prefilter_words, "__func__", None) is BaseRule.prefilter_words.__func__
    return {
        "code": rule.code,
        "name": rule.name,
        "rule": _path(rule),
        "kind": kind,
        "profiles": tuple(sorted(rule.profiles)),
        "words": _static_words(rule),
        "collectors": tuple(_path(collector) for collector in rule.collectors),
        "prefilter_words": () if own_prefilter else None,
        "prefilter_patterns": tuple(rule.prefilter_patterns),
    }


def render_index(rules: Optional[Dict[str, Type[BaseRule]]] = None) -> str:
    entries = [index_entry(rule) for rule in (rules or discover_rules()).values()]
    body = pprint.pformat(tuple(entries), width=120, sort_dicts=False)
    return (
        '"""The rules, as the registry knows them before importing any rule module: written by\n'
        f"`{REGENERATE}` from the rule classes (never by hand; a test compares).\n\n"
        "`words`: the words one of which a file must hold for the file rule to run on it (None: the rule\n"
        "computes them, so its module is imported to ask; empty: it runs on every file).\n"
        "`prefilter_words`: None when the rule computes them. `rule` and `collectors`: `module:class`.\n"
        '"""\n\n'
        "# fmt: off\n"
        f"RULES = {body}\n"
    )


def main(argv: Optional[List[str]] = None) -> int:
    text = render_index()
    if INDEX_FILE.exists() and INDEX_FILE.read_text(encoding="utf-8") == text:
        print(f"{INDEX_FILE.name} is current")
        return 0
    INDEX_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {INDEX_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
