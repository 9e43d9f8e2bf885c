"""The Inductor facts of `rules/inductor.toml` (validated, loaded once): which
`torch._inductor.config` options and `torch.compile` modes turn autotuning on,
which option is Inductor's deterministic mode, and from which torch version the
deterministic-algorithms flag turns that mode on.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from torchdet_lint.core.data import load_toml, rules_directory

Version = Tuple[int, int]
AUTOTUNE = "autotune"
DETERMINISTIC = "deterministic"
ROLES = (AUTOTUNE, DETERMINISTIC)
CONFIG_MODULE = "torch._inductor.config"
FILE = "inductor.toml"

# Cover kinds of the summaries (model/collector.py) that Inductor's deterministic mode
# reads: set explicitly (the option, or its variable), or implied by the flag
# (`use_deterministic_algorithms` on, directly or through a helper; the debug mode
# does not set the option).
COVER_EXPLICIT = "inductor-deterministic"
COVER_FLAG = "deterministic-algorithms"


class InductorFactsError(Exception):
    """rules/inductor.toml is malformed; the message names the entry and the key."""


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    role: str
    since: Version
    source: str
    notes: str = ""

    @property
    def qualified(self) -> str:
        return f"{CONFIG_MODULE}.{self.name}"


@dataclass(frozen=True)
class Mode:
    name: str
    since: Version
    sets: Tuple[Tuple[Version, Tuple[str, ...]], ...]
    source: str

    def sets_at(self, version: Version) -> Tuple[str, ...]:
        """The autotune options the mode turns on at `version` (none before it exists)."""
        found: Tuple[str, ...] = ()
        for since, names in self.sets:
            if version >= since:
                found = names
        return found if version >= self.since else ()


@dataclass(frozen=True)
class InductorFacts:
    settings: Tuple[Setting, ...]
    modes: Tuple[Mode, ...]
    flag_since: Version
    flag_source: str
    flag_notes: str = ""

    def setting(self, name: str) -> Optional[Setting]:
        return next((s for s in self.settings if s.name == name), None)

    def by_env(self, env: str) -> Optional[Setting]:
        return next((s for s in self.settings if s.env == env), None)

    def mode(self, name: str) -> Optional[Mode]:
        return next((m for m in self.modes if m.name == name), None)

    @property
    def deterministic(self) -> Setting:
        return next(s for s in self.settings if s.role == DETERMINISTIC)

    def autotune_settings(self) -> Tuple[Setting, ...]:
        return tuple(s for s in self.settings if s.role == AUTOTUNE)

    def flag_sets_deterministic(self, version: Version) -> bool:
        return version >= self.flag_since

    def silencing_covers(self, version: Version) -> Tuple[str, ...]:
        """The summary cover kinds that put Inductor in deterministic mode at `version`."""
        return (COVER_EXPLICIT, COVER_FLAG) if self.flag_sets_deterministic(version) else (COVER_EXPLICIT,)


def _version(value: Any, where: str) -> Version:
    parts = value.split(".") if isinstance(value, str) else []
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise InductorFactsError(f'{FILE}: {where}: {value!r} is not a version like "2.10"')
    return int(parts[0]), int(parts[1])


def _text(table: Mapping[str, Any], key: str, where: str, required: bool = True) -> str:
    value = table.get(key, "" if not required else None)
    if not isinstance(value, str) or (required and not value.strip()):
        raise InductorFactsError(f"{FILE}: {where}: `{key}` must be a non-empty string")
    return value


def _keys(table: Any, allowed: set, where: str) -> None:
    if not isinstance(table, dict):
        raise InductorFactsError(f"{FILE}: {where} must be a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise InductorFactsError(f"{FILE}: {where}: unknown key `{unknown[0]}` (allowed: {', '.join(sorted(allowed))})")


def parse_inductor_facts(data: Mapping[str, Any]) -> InductorFacts:
    _keys(data, {"setting", "mode", "flag"}, "the file")
    settings = []
    for index, table in enumerate(data.get("setting", [])):
        where = f"setting #{index + 1}"
        _keys(table, {"name", "env", "role", "since", "source", "notes"}, where)
        role = _text(table, "role", where)
        if role not in ROLES:
            raise InductorFactsError(f"{FILE}: {where}: `role` must be one of {', '.join(ROLES)}")
        settings.append(
            Setting(
                name=_text(table, "name", where),
                env=_text(table, "env", where),
                role=role,
                since=_version(table.get("since"), f"{where} since"),
                source=_text(table, "source", where),
                notes=_text(table, "notes", where, required=False),
            )
        )
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        raise InductorFactsError(f"{FILE}: setting names must be unique")
    if sum(1 for s in settings if s.role == DETERMINISTIC) != 1:
        raise InductorFactsError(f'{FILE}: exactly one setting has role = "{DETERMINISTIC}"')
    autotune = {s.name for s in settings if s.role == AUTOTUNE}
    modes = []
    for index, table in enumerate(data.get("mode", [])):
        where = f"mode #{index + 1}"
        _keys(table, {"name", "since", "sets", "source"}, where)
        sets = table.get("sets")
        if not isinstance(sets, dict) or not sets:
            raise InductorFactsError(f"{FILE}: {where}: `sets` must be a table of version = [options]")
        parsed = []
        for text, options in sets.items():
            if not isinstance(options, list) or not all(o in autotune for o in options):
                raise InductorFactsError(f'{FILE}: {where}: `sets."{text}"` must list autotune settings of this file')
            parsed.append((_version(text, f"{where} sets"), tuple(options)))
        modes.append(
            Mode(
                _text(table, "name", where),
                _version(table.get("since"), f"{where} since"),
                tuple(sorted(parsed)),
                _text(table, "source", where),
            )
        )
    flag = data.get("flag")
    _keys(flag, {"sets-deterministic-since", "source", "notes"}, "[flag]")
    return InductorFacts(
        settings=tuple(settings),
        modes=tuple(modes),
        flag_since=_version(flag.get("sets-deterministic-since"), "[flag] sets-deterministic-since"),
        flag_source=_text(flag, "source", "[flag]"),
        flag_notes=_text(flag, "notes", "[flag]", required=False),
    )


def load_inductor_facts_file(path: Path) -> InductorFacts:
    return parse_inductor_facts(load_toml(path))


@lru_cache(maxsize=1)
def inductor_facts() -> InductorFacts:
    """The shipped facts, loaded and validated once per process."""
    return load_inductor_facts_file(rules_directory() / FILE)


def version_text(version: Version) -> str:
    return "%d.%d" % version


def settings_by_name() -> Dict[str, Setting]:
    return {s.name: s for s in inductor_facts().settings}
