"""Configuration: find and validate `[tool.torchdet-lint]`, and compute the rule selection.

Every key of the interface contract is checked for its type; an unknown key
or a wrong type is a `ConfigError` naming the key and the file.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, Optional, Set, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from torchdet_lint.checks import all_rules
from torchdet_lint.core.catalog import Catalog, load_catalog
from torchdet_lint.core.settings import ALL_PROFILES, Settings

SEED_COVERAGE = ("torch", "random", "numpy", "deterministic", "cudnn")
_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?")


class ConfigError(Exception):
    """A configuration or usage problem; the message is one line for the user."""


def _string_list(key: str, value: Any, where: Path) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {_describe(value)}")
    return tuple(value)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


# Warnings already given in this process: a config read again (another directory of the run, the
# language server's next lint) does not repeat them.
_WARNED: Set[str] = set()


def warn_once(message: str) -> None:
    """A configuration warning on standard error, once per process (diagnostics own standard output)."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr)


def _library_versions(value: Any, where: Path) -> Tuple[Tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: `library-versions` must be a table of library = "version", got {_describe(value)}')
    known = sorted(library.name for library in load_catalog().libraries)
    kept = {}
    for name, version in value.items():
        if not isinstance(version, str) or not _VERSION_RE.match(version):
            raise ConfigError(
                f'{where}: `library-versions.{name}` must be a version string like "0.18", got {_describe(version)}'
            )
        if name not in known:
            # A pin for a library this version of the catalog does not describe (a newer config, or
            # a library it never reads): nothing depends on it, so the run goes on.
            warn_once(
                f"{where}: `library-versions.{name}`: the catalog describes no library {name!r}, "
                f"so the setting is ignored (known: {', '.join(known)})"
            )
            continue
        kept[name] = version
    return tuple(sorted(kept.items()))


def _parse_table(table: Dict[str, Any], where: Path) -> Dict[str, Any]:
    parsed: Dict[str, Any] = {}
    for key, value in table.items():
        if key in ("select", "ignore", "extend-select", "exclude", "extend-exclude", "entry-points"):
            parsed[key.replace("-", "_")] = _string_list(key, value, where)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes], got {_describe(value)}")
            parsed["per_file_ignores"] = tuple(
                (glob, _string_list(f"per-file-ignores.{glob}", codes, where)) for glob, codes in value.items()
            )
        elif key == "profile":
            if value not in ALL_PROFILES:
                raise ConfigError(f"{where}: `profile` must be one of {', '.join(sorted(ALL_PROFILES))}, got {_describe(value)}")
            parsed["profile"] = value
        elif key == "torch-version":
            if not isinstance(value, str) or not _VERSION_RE.match(value):
                raise ConfigError(f'{where}: `torch-version` must be a version string like "2.3", got {_describe(value)}')
            parsed["torch_version"] = value
        elif key == "library-versions":
            parsed["library_versions"] = _library_versions(value, where)
        elif key == "seed":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where}: `seed` must be a non-negative integer, got {_describe(value)}")
            parsed["seed"] = value
        elif key == "seed-functions":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `seed-functions` must be a table of name = [what it seeds], got {_describe(value)}")
            functions = []
            for name, covers in value.items():
                covered = _string_list(f"seed-functions.{name}", covers, where)
                unknown = [c for c in covered if c not in SEED_COVERAGE]
                if unknown:
                    raise ConfigError(
                        f"{where}: `seed-functions.{name}` has unknown value {unknown[0]!r} "
                        f"(expected any of {', '.join(SEED_COVERAGE)})"
                    )
                functions.append((name, covered))
            parsed["seed_functions"] = tuple(functions)
        elif key in ("assume-deterministic-mode", "unsafe-fixes"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{key}` must be true or false, got {_describe(value)}")
            parsed[key.replace("-", "_")] = value
        else:
            raise ConfigError(f"{where}: unknown key `{key}` in [tool.torchdet-lint]")
    return parsed


def load_config_file(path: Path) -> Settings:
    """Settings from one pyproject.toml (an empty Settings when it has no table)."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    table = data.get("tool", {}).get("torchdet-lint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchdet-lint] must be a table")
    return Settings(root=path.parent.resolve(), source=path, **_parse_table(table, path))


DEFAULT_LINE_LENGTH = 88  # black's and ruff's


def formatter_line_length(directory: Path) -> int:
    """The line length the project's formatter keeps: the nearest `ruff.toml` / `.ruff.toml`
    `line-length`, else `pyproject.toml`'s `[tool.ruff]`, else `[tool.black]` (as ruff and black
    look for their configuration, from `directory` up), else 88."""
    for candidate in (directory, *directory.parents):
        for name in (".ruff.toml", "ruff.toml"):
            value = _toml_key(candidate / name, ("line-length",))
            if value is not None:
                return value
        pyproject = candidate / "pyproject.toml"
        for key in (("tool", "ruff", "line-length"), ("tool", "black", "line-length")):
            value = _toml_key(pyproject, key)
            if value is not None:
                return value
    return DEFAULT_LINE_LENGTH


def _toml_key(path: Path, keys: Tuple[str, ...]) -> Optional[int]:
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as handle:
            value: Any = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None  # another tool's broken file: not ours to report
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def has_table(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read()
    except OSError:
        return False
    return b"torchdet-lint" in head and b"[tool" in head


def find_config(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml at or above `start` that has a [tool.torchdet-lint] table."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and has_table(pyproject):
            try:
                with open(pyproject, "rb") as handle:
                    if "torchdet-lint" in tomllib.load(handle).get("tool", {}):
                        return pyproject
            except (OSError, tomllib.TOMLDecodeError):
                return pyproject  # let load_config_file report the problem
    return None


def parse_version(text: str, parts: int = 2) -> Tuple[int, ...]:
    """The first `parts` numbers of a version (`2.3.1+cu121` -> (2, 3)); a library versioned by
    three (xformers 0.0.21) asks for three, and a version that gives two keeps two."""
    match = _VERSION_RE.match(text)
    if not match:
        raise ValueError(text)
    return tuple(int(number) for number in match.groups()[:parts] if number is not None)


def _normal_distribution(name: str) -> str:
    """PEP 503 normalisation, with `_` as wheels spell it in `.dist-info` directory names."""
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_metadata() -> Dict[str, str]:
    """Normalised distribution name -> its METADATA (PKG-INFO) file, the first on `sys.path`
    (what an import would find); one listing of each path entry serves every package.
    Not cached: a long-lived editor session sees a package upgrade on its next run."""
    found: Dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                distribution = _normal_distribution(name.rsplit(".", 1)[0].split("-", 1)[0])
                metadata = "METADATA" if name.endswith(".dist-info") else "PKG-INFO"
                found.setdefault(distribution, os.path.join(entry or ".", name, metadata))
    return found


def installed_version(
    distribution: str, metadata_files: Optional[Dict[str, str]] = None, parts: int = 2
) -> Optional[Tuple[int, ...]]:
    """An installed distribution's version from its package metadata; the package itself is
    never imported (nor `importlib.metadata`, which is much slower to load)."""
    metadata = (installed_metadata() if metadata_files is None else metadata_files).get(_normal_distribution(distribution))
    if metadata is None:
        return None
    try:
        with open(metadata, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return parse_version(line.split(":", 1)[1].strip(), parts)
                if not line.strip():
                    break
    except (OSError, ValueError):
        return None
    return None


def installed_torch_version() -> Optional[Tuple[int, int]]:
    """The installed torch's version from its package metadata; torch itself is never imported."""
    return installed_version("torch")


def target_torch_version(settings: Settings, newest: Tuple[int, int]) -> Tuple[int, int]:
    if settings.torch_version:
        return parse_version(settings.torch_version)
    return installed_torch_version() or newest


def target_library_versions(settings: Settings, catalog: Catalog) -> Tuple[Tuple[str, Tuple[int, int]], ...]:
    """Each catalog library's target version: config `library-versions`, else the installed
    package's metadata (any of its distribution names), else the newest version the catalog knows."""
    configured = dict(settings.library_versions)
    metadata_files = installed_metadata() if len(configured) < len(catalog.libraries) else {}
    result = []
    for library in catalog.libraries:
        if library.name in configured:
            version = parse_version(configured[library.name], library.version_parts)
        else:
            installed = (installed_version(d, metadata_files, library.version_parts) for d in library.distributions)
            version = next((v for v in installed if v is not None), None) or catalog.newest_library_version(library.name)
        result.append((library.name, version))
    return tuple(result)


# -- rule selection -----------------------------------------------------------------


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _specificity(selectors: Iterable[str], code: str) -> int:
    """How specifically the selectors name the code: -1 not at all, 0 for ALL."""
    return max((0 if s == "ALL" else len(s) for s in selectors if _matches(s, code)), default=-1)


def validate_selectors(selectors: Iterable[str], where: str) -> None:
    codes = all_rules()
    for selector in selectors:
        if selector == "ALL":
            continue
        if not re.match(r"^TDL\d{0,3}$", selector) or not any(code.startswith(selector) for code in codes):
            raise ConfigError(f"{where}: unknown rule selector `{selector}`")


def selected_codes(settings: Settings) -> FrozenSet[str]:
    """Profile, then `select` (replaces), `extend-select` (adds), `ignore` (removes).

    Between a select and an ignore selector that both match a code, the more
    specific one wins (as in Ruff); on a tie, ignore wins.
    """
    rules = all_rules()
    result = set()
    for code, rule in rules.items():
        if settings.select is not None:
            base_specificity = _specificity(settings.select, code)
        else:
            base_specificity = 0 if settings.profile in rule.profiles else -1
        specificity = max(base_specificity, _specificity(settings.extend_select, code))
        ignored = _specificity(settings.ignore, code)
        if specificity >= 0 and specificity > ignored:
            result.add(code)
    return frozenset(result)


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    return replace(settings, **{k: v for k, v in overrides.items() if v is not None})
