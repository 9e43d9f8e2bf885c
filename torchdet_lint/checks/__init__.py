"""The rule families and the registry of their rules.

Each family is a module (or a package, one module per rule) of `Rule` /
`ProjectRule` classes; a rule is registered by being defined in a family
listed here, or in any module of a family package (a new rule's module needs
no import added anywhere). A duplicate code fails at import.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from typing import Any, Dict, Iterator, List, Optional, Tuple, Type

from torchdet_lint.checks import (
    compile_autotuning,
    dataloader,
    deterministic_mode_not_enabled,
    ops,
    performance,
    seeding,
    switches,
    unused_noqa,
)
from torchdet_lint.core.rule import BaseRule, ProjectRule, Rule, RuleRegistryError

FAMILIES = (switches, compile_autotuning, ops, seeding, dataloader, performance, deterministic_mode_not_enabled, unused_noqa)


def _family_rules(family) -> List[Type[BaseRule]]:
    """The rules a family defines (its own classes, not ones it imports from another family),
    in the family module or in any module of the family package."""
    modules = [family]
    if hasattr(family, "__path__"):
        modules += [importlib.import_module(f"{family.__name__}.{info.name}") for info in pkgutil.iter_modules(family.__path__)]
    found = []
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseRule) and value.is_rule():
                if value.__module__.startswith(family.__name__) and value not in found:
                    found.append(value)
    return found


def _registry(extra: List[Type[BaseRule]]) -> Dict[str, Type[BaseRule]]:
    registry: Dict[str, Type[BaseRule]] = {}
    for rule in [rule for family in FAMILIES for rule in _family_rules(family)] + extra:
        known = registry.get(rule.code)
        if known is not None and known is not rule:
            raise RuleRegistryError(f"duplicate rule code {rule.code}: {known.__name__} and {rule.__name__}")
        registry[rule.code] = rule
    return dict(sorted(registry.items()))


_RULES = _registry([])


def all_rules() -> Dict[str, Type[BaseRule]]:
    """Every rule by code, sorted."""
    return _RULES


def get_rule(code: str) -> Optional[Type[BaseRule]]:
    return _RULES.get(code)


def file_rule_classes(selected: frozenset) -> List[Type[Rule]]:
    return [rule for code, rule in _RULES.items() if code in selected and issubclass(rule, Rule)]


def project_rule_classes(selected: frozenset) -> List[Type[ProjectRule]]:
    return [rule for code, rule in _RULES.items() if code in selected and issubclass(rule, ProjectRule)]


def fact_collectors() -> List[Any]:
    """The fact collectors the registered rules declare, each once, in the order of the codes."""
    found: List[Any] = []
    for rule in _RULES.values():
        found.extend(collector for collector in rule.collectors if collector not in found)
    return found


def prefilter() -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The words and the patterns the registered rules and their collectors declare."""
    words: List[str] = []
    patterns: List[str] = []
    for rule in _RULES.values():
        for word in [*rule.prefilter_words(), *(w for c in rule.collectors for w in getattr(c, "prefilter_words", ()))]:
            if word not in words:
                words.append(word)
        patterns.extend(pattern for pattern in rule.prefilter_patterns if pattern not in patterns)
    return tuple(words), tuple(patterns)


@contextlib.contextmanager
def extra_rules(*rules: Type[BaseRule]) -> Iterator[None]:
    """Rules registered for the duration of a block (tests of the engine with made-up rules)."""
    global _RULES
    previous = _RULES
    _RULES = _registry([*previous.values(), *rules])
    try:
        yield
    finally:
        _RULES = previous
