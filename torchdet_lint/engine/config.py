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

from torchdet_lint.checks import rule_codes, rule_profiles
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


# Keys whose values are lists of rule selectors, checked against the registry by the workspace.
SELECTOR_KEYS = ("select", "ignore", "extend-select", "extend-ignore", "fixable", "unfixable")
_LIST_KEYS = (*SELECTOR_KEYS, "exclude", "extend-exclude", "entry-points")
# The keys a config file may hold (kebab-case), for error messages and `--show-settings`.
KNOWN_KEYS = (
    *_LIST_KEYS,
    "per-file-ignores",
    "extend-per-file-ignores",
    "profile",
    "torch-version",
    "library-versions",
    "seed",
    "seed-functions",
    "assume-deterministic-mode",
    "unsafe-fixes",
    "extend",
)
# The standalone configuration files, in the order they win over each other in one
# directory (as Ruff's `.ruff.toml` > `ruff.toml` > `pyproject.toml`).
STANDALONE_NAMES = (".torchdet-lint.toml", "torchdet-lint.toml")
PYPROJECT = "pyproject.toml"


def _per_file_ignores(key: str, value: Any, where: Any) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must be a table of glob = [codes], got {_describe(value)}")
    return tuple((glob, _string_list(f"{key}.{glob}", codes, where)) for glob, codes in value.items())


def _parse_table(table: Dict[str, Any], where: Any) -> Dict[str, Any]:
    """The validated keys of one configuration table, as `Settings` field names
    (`extend`, `extend-ignore` and `extend-per-file-ignores` are kept apart for `_merge`)."""
    parsed: Dict[str, Any] = {}
    for key, value in table.items():
        if key in _LIST_KEYS:
            parsed[key.replace("-", "_")] = _string_list(key, value, where)
        elif key in ("per-file-ignores", "extend-per-file-ignores"):
            parsed[key.replace("-", "_")] = _per_file_ignores(key, value, where)
        elif key == "extend":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: `extend` must be the path of another configuration file, got {_describe(value)}")
            parsed["extend"] = value
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
            raise ConfigError(f"{where}: unknown key `{key}` in {_table_name(where)}")
    return parsed


def _table_name(where: Any) -> str:
    if isinstance(where, Path) and where.name != PYPROJECT:
        return "the configuration"
    return "[tool.torchdet-lint]" if isinstance(where, Path) else "the override"


def is_standalone(path: Path) -> bool:
    """Whether a configuration file holds its keys at the top level (anything but a `pyproject.toml`)."""
    return path.name != PYPROJECT


def _read_toml(path: Path) -> Dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _config_table(path: Path, data: Dict[str, Any], explicit: bool) -> Dict[str, Any]:
    """The torchdet-lint keys of a configuration file's data.

    A `pyproject.toml` holds them in `[tool.torchdet-lint]`; any other file at the top level
    (as `ruff.toml`), or in a `[tool.torchdet-lint]` table when it has one. A file named on
    the command line that holds neither is an error: it would otherwise change nothing, silently.
    """
    tool = data.get("tool")
    table = tool.get("torchdet-lint") if isinstance(tool, dict) else None
    if table is not None:
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.torchdet-lint] must be a table")
        return table
    if not is_standalone(path):
        if explicit:
            raise ConfigError(f"{path}: no [tool.torchdet-lint] table in this file")
        return {}
    if explicit and path.name not in STANDALONE_NAMES and not (set(data) & set(KNOWN_KEYS)):
        raise ConfigError(
            f"{path}: neither a [tool.torchdet-lint] table nor torchdet-lint keys at the top level "
            f"(a standalone configuration is named {' or '.join(reversed(STANDALONE_NAMES))})"
        )
    return data


def _rebase_pattern(pattern: str, base: Path, root: Path) -> Optional[str]:
    """A path pattern written relative to `base`, as seen from `root` (None: it cannot match
    under `root`). A pattern without a slash matches at any depth and is kept as it is."""
    body = pattern[:-1] if pattern.endswith("/") else pattern
    if "/" not in body or base == root or body.startswith("**"):
        return pattern
    anchored = pattern.lstrip("/")
    if _within(base, root):  # the base configuration lives below the root
        return base.relative_to(root).as_posix() + "/" + anchored
    if _within(root, base):
        prefix = root.relative_to(base).as_posix() + "/"
        return "/" + anchored[len(prefix) :] if anchored.startswith(prefix) else None
    return None


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _rebased(parsed: Dict[str, Any], base: Path, root: Path) -> Dict[str, Any]:
    """The path patterns of a base configuration (`extend`), relative to the extending file's directory."""
    if base == root:
        return parsed
    result = dict(parsed)
    for key in ("exclude", "extend_exclude", "entry_points"):
        if key in result:
            result[key] = tuple(p for p in (_rebase_pattern(p, base, root) for p in result[key]) if p is not None)
    for key in ("per_file_ignores", "extend_per_file_ignores"):
        if key in result:
            result[key] = tuple(
                (rebased, codes) for rebased, codes in ((_rebase_pattern(g, base, root), c) for g, c in result[key]) if rebased
            )
    return result


# Keys whose values add up along an `extend` chain, rather than the extending file's replacing the base's.
_ADDITIVE = ("extend_select", "extend_ignore", "extend_exclude", "extend_per_file_ignores")


def _merge(base: Dict[str, Any], child: Dict[str, Any]) -> Dict[str, Any]:
    merged = dict(base)
    for key, value in child.items():
        merged[key] = merged.get(key, ()) + value if key in _ADDITIVE else value
    return merged


def _load_chain(path: Path, explicit: bool, seen: Tuple[Path, ...] = ()) -> Dict[str, Any]:
    """The parsed keys of a configuration file, with what it `extend`s underneath (paths
    resolved relative to the file that names them)."""
    resolved = path.resolve()
    if resolved in seen:
        chain = " -> ".join(str(p) for p in (*seen, resolved))
        raise ConfigError(f"{path}: `extend` makes a cycle ({chain})")
    parsed = _parse_table(_config_table(path, _read_toml(path), explicit), path)
    extend = parsed.pop("extend", None)
    if extend is None:
        return parsed
    target = Path(os.path.expanduser(extend))
    target = target if target.is_absolute() else resolved.parent / target
    if not target.is_file():
        raise ConfigError(f"{path}: `extend`: no such file {target}")
    base = _load_chain(target, True, (*seen, resolved))
    return _merge(_rebased(base, target.resolve().parent, resolved.parent), parsed)


def settings_from_parsed(parsed: Dict[str, Any], root: Path, source: Optional[Path]) -> Settings:
    """Settings from parsed keys: `extend-ignore` joins `ignore`, `extend-per-file-ignores` joins `per-file-ignores`."""
    values = dict(parsed)
    values.pop("extend", None)
    extend_ignore = values.pop("extend_ignore", ())
    if extend_ignore:
        values["ignore"] = values.get("ignore", ()) + extend_ignore
    extend_pfi = values.pop("extend_per_file_ignores", ())
    if extend_pfi:
        values["per_file_ignores"] = values.get("per_file_ignores", ()) + extend_pfi
    return Settings(root=root, source=source, **values)


def load_config_file(path: Path, explicit: bool = False) -> Settings:
    """Settings from one configuration file: a `pyproject.toml`'s `[tool.torchdet-lint]` table or a
    standalone file's top-level keys, over the files it `extend`s. `explicit`: named by `--config`
    (a file that configures nothing is then an error)."""
    return settings_from_parsed(_load_chain(path, explicit), path.parent.resolve(), path)


def parse_inline_override(text: str) -> Dict[str, Any]:
    """`--config KEY=VALUE`: one TOML assignment, as Ruff's `--config "select = ['TDL1']"`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"--config {text!r}: not a path to an existing file, nor a valid TOML `key = value` ({error})"
        ) from None
    if "extend" in data:
        raise ConfigError(f"--config {text!r}: `extend` can only be set in a configuration file")
    return _parse_table(data, f"--config {text!r}")


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


def config_in(directory: Path, is_file=None) -> Optional[Path]:
    """The configuration file of one directory: `.torchdet-lint.toml`, else `torchdet-lint.toml`
    (used whatever they hold, as Ruff uses a `ruff.toml`), else a `pyproject.toml` that has a
    `[tool.torchdet-lint]` table."""
    exists = is_file or (lambda name: (directory / name).is_file())
    for name in STANDALONE_NAMES:
        if exists(name):
            return directory / name
    candidate = directory / PYPROJECT
    if exists(PYPROJECT) and has_table(candidate):
        return candidate
    return None


def find_config(start: Path) -> Optional[Path]:
    """The nearest configuration at or above `start` (see `config_in`)."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        found = config_in(candidate)
        if found is not None:
            return found
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


def selector_specificity(selectors: Iterable[str], code: str) -> int:
    """How specifically the selectors name the code: -1 not at all, 0 for ALL."""
    return max((0 if s == "ALL" else len(s) for s in selectors if _matches(s, code)), default=-1)


def validate_selectors(selectors: Iterable[str], where: str) -> None:
    codes = rule_codes()
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
    result = set()
    for code in rule_codes():
        if settings.select is not None:
            base_specificity = selector_specificity(settings.select, code)
        else:
            base_specificity = 0 if settings.profile in rule_profiles(code) else -1
        specificity = max(base_specificity, selector_specificity(settings.extend_select, code))
        ignored = selector_specificity(settings.ignore, code)
        if specificity >= 0 and specificity > ignored:
            result.add(code)
    return frozenset(result)


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    return replace(settings, **{k: v for k, v in overrides.items() if v is not None})


# -- the command line's overrides ------------------------------------------------------------


def with_parsed(settings: Settings, parsed: Dict[str, Any]) -> Settings:
    """`settings` with parsed keys laid over them (`--config KEY=VALUE`): a key replaces the
    configuration's value, except the `extend-*` keys, which add to it."""
    values: Dict[str, Any] = {}
    for key, value in parsed.items():
        if key == "extend_ignore":
            values["ignore"] = values.get("ignore", settings.ignore) + value
        elif key == "extend_per_file_ignores":
            values["per_file_ignores"] = values.get("per_file_ignores", settings.per_file_ignores) + value
        elif key in ("extend_select", "extend_exclude"):
            values[key] = getattr(settings, key) + value
        else:
            values[key] = value
    return replace(settings, **values)


def parse_per_file_ignores(value: str) -> Tuple[str, Tuple[str, ...]]:
    """`GLOB:CODE[,CODE]` (the command line's `--per-file-ignores`)."""
    glob, colon, codes = value.rpartition(":")
    if not colon or not glob or not codes.strip():
        raise ConfigError(f"--per-file-ignores: expected GLOB:CODE[,CODE], got {value!r}")
    selectors = tuple(part.strip().upper() for part in codes.split(",") if part.strip())
    validate_selectors(selectors, f"--per-file-ignores {glob}")
    return glob, selectors


def torch_version_origin(settings: Settings) -> str:
    """Where the target torch version comes from: "config", "installed" or "newest" (neither)."""
    if settings.torch_version:
        return "config"
    return "installed" if installed_torch_version() is not None else "newest"


def describe_settings(settings: Settings, newest: Tuple[int, int]) -> str:
    """The settings in force, one `key = value` line each, in TOML (`--show-settings`)."""
    fields = (
        ("select", settings.select),
        ("extend-select", settings.extend_select),
        ("ignore", settings.ignore),
        ("fixable", settings.fixable),
        ("unfixable", settings.unfixable),
        ("exclude", settings.exclude),
        ("extend-exclude", settings.extend_exclude),
        ("per-file-ignores", dict(settings.per_file_ignores)),
        ("profile", settings.profile),
        ("torch-version", settings.torch_version),
        ("library-versions", dict(settings.library_versions)),
        ("seed", settings.seed),
        ("seed-functions", dict(settings.seed_functions)),
        ("entry-points", settings.entry_points),
        ("assume-deterministic-mode", settings.assume_deterministic_mode),
        ("unsafe-fixes", settings.unsafe_fixes),
    )
    lines = [f"{key} = {_toml_value(value)}" for key, value in fields if value is not None]
    version = target_torch_version(settings, newest)
    origin = {"config": "configured", "installed": "the installed torch", "newest": "the newest the catalog knows"}
    lines.append(f"# target torch: {version[0]}.{version[1]} ({origin[torch_version_origin(settings)]})")
    lines.append(f"# line length of fixes: {settings.line_length}")
    lines.append(f"# rules selected: {', '.join(sorted(selected_codes(settings)))}")
    return "".join(line + "\n" for line in lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_toml_value(item) for item in value) + "]"
