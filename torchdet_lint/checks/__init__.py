"""The rule families and the registry of their rules.

Each family is a module (or a package, one module per rule) of `Rule` /
`ProjectRule` classes; a rule is registered by being defined in a family
(`registry.FAMILIES`), or in any module of a family package (a new rule's module
needs no import added anywhere). A duplicate code fails.

A run imports only the rule modules it needs: the registry starts from the index
that `registry.py` writes (codes, profiles, trigger words, collectors), so selecting
rules, the pre-filter and the collectors need no rule module, and a file rule's
module is imported when a file holds one of its words, or when code asks for the
rule (`get_rule`, `all_rules`: the docs, `torchdet-lint rule`, SARIF).
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Tuple, Type

from torchdet_lint.checks.rule_index import RULES as _INDEX
from torchdet_lint.core.rule import BaseRule, ProjectRule, Rule, RuleRegistryError
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.startup import cached_dataclass_code

_ENTRIES: Dict[str, dict] = {entry["code"]: entry for entry in _INDEX}
_LOADED: Dict[str, Type[BaseRule]] = {}
# Rules registered for a while by `extra_rules` (tests of the engine with made-up rules).
_EXTRA: Dict[str, Type[BaseRule]] = {}


def _load(path: str) -> Any:
    module, _, qualname = path.partition(":")
    with cached_dataclass_code():  # a rule's module and the model modules it brings define dataclasses
        value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _rule(code: str) -> Type[BaseRule]:
    rule = _EXTRA.get(code) or _LOADED.get(code)
    if rule is None:
        rule = _LOADED[code] = _load(_ENTRIES[code]["rule"])
    return rule


_CODES: List[Tuple[str, ...]] = [tuple(sorted(_ENTRIES))]


def rule_codes() -> Tuple[str, ...]:
    """Every rule's code, sorted, without importing any rule."""
    return _CODES[0]


def rule_profiles(code: str) -> FrozenSet[str]:
    """The profiles whose starting selection holds the rule, without importing it."""
    extra = _EXTRA.get(code)
    return extra.profiles if extra is not None else frozenset(_ENTRIES[code]["profiles"])


def all_rules() -> Dict[str, Type[BaseRule]]:
    """Every rule by code, sorted (every rule module imported)."""
    return {code: _rule(code) for code in rule_codes()}


def get_rule(code: str) -> Optional[Type[BaseRule]]:
    return _rule(code) if code in _ENTRIES or code in _EXTRA else None


def _kind(code: str) -> str:
    extra = _EXTRA.get(code)
    if extra is None:
        return _ENTRIES[code]["kind"]
    return "file" if issubclass(extra, Rule) else "project" if issubclass(extra, ProjectRule) else "meta"


def file_rule_classes(selected: frozenset) -> List[Type[Rule]]:
    return [_rule(code) for code in rule_codes() if code in selected and _kind(code) == "file"]  # type: ignore[misc]


def may_report_in(code: str, text: str, settings: Settings) -> bool:
    """Whether the file rule `code` can report in `text` (`Rule.may_report_in`), answered from
    the index where the rule's words are written there, so that its module stays unimported."""
    entry = _ENTRIES.get(code) if code not in _EXTRA else None
    words = entry["words"] if entry is not None else None
    if words is None:
        return _rule(code).may_report_in(text, settings)  # type: ignore[attr-defined]
    return not words or any(word in text for word in words)


def file_rules_for(text: str, selected: frozenset, settings: Settings) -> List[Type[Rule]]:
    """The selected file rules that can report in `text`, in the order of their codes."""
    return [
        _rule(code)  # type: ignore[misc]
        for code in rule_codes()
        if code in selected and _kind(code) == "file" and may_report_in(code, text, settings)
    ]


def project_rule_classes(selected: frozenset) -> List[Type[ProjectRule]]:
    return [_rule(code) for code in rule_codes() if code in selected and _kind(code) == "project"]  # type: ignore[misc]


_COLLECTORS: Dict[str, Any] = {}


def _collector(path: str) -> Any:
    collector = _COLLECTORS.get(path)
    if collector is None:
        collector = _COLLECTORS[path] = _load(path)
    return collector


def fact_collectors() -> List[Any]:
    """The fact collectors the registered rules declare, each once, in the order of the codes."""
    found: List[Any] = []
    for code in rule_codes():
        if code in _EXTRA:
            collectors = list(_EXTRA[code].collectors)
        else:
            collectors = [_collector(path) for path in _ENTRIES[code]["collectors"]]
        found.extend(collector for collector in collectors if collector not in found)
    return found


def prefilter() -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The words and the patterns the registered rules and their collectors declare."""
    words: List[str] = []
    patterns: List[str] = []
    fact_collectors()  # loads the collectors the index names
    for code in rule_codes():
        entry = _ENTRIES.get(code) if code not in _EXTRA else None
        if entry is None or entry["prefilter_words"] is None:
            rule = _rule(code)
            own, rule_patterns = rule.prefilter_words(), rule.prefilter_patterns
            declared = [w for c in rule.collectors for w in getattr(c, "prefilter_words", ())]
        else:
            own, rule_patterns = entry["prefilter_words"], entry["prefilter_patterns"]
            declared = [w for path in entry["collectors"] for w in getattr(_COLLECTORS[path], "prefilter_words", ())]
        for word in [*own, *declared]:
            if word not in words:
                words.append(word)
        patterns.extend(pattern for pattern in rule_patterns if pattern not in patterns)
    return tuple(words), tuple(patterns)


@contextlib.contextmanager
def extra_rules(*rules: Type[BaseRule]) -> Iterator[None]:
    """Rules registered for the duration of a block (tests of the engine with made-up rules)."""
    previous = dict(_EXTRA)
    for rule in rules:
        known = _EXTRA.get(rule.code) or (_rule(rule.code) if rule.code in _ENTRIES else None)
        if known is not None and known is not rule:
            raise RuleRegistryError(f"duplicate rule code {rule.code}: {known.__name__} and {rule.__name__}")
        _EXTRA[rule.code] = rule
    _CODES[0] = tuple(sorted({*_ENTRIES, *_EXTRA}))
    try:
        yield
    finally:
        _EXTRA.clear()
        _EXTRA.update(previous)
        _CODES[0] = tuple(sorted({*_ENTRIES, *_EXTRA}))
