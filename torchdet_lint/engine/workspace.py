"""Projects: which project each linted path belongs to, the configuration in
force for it, and every file of that project, named or not.

A file's configuration is the nearest `.torchdet-lint.toml`, `torchdet-lint.toml`
or `pyproject.toml` with a `[tool.torchdet-lint]` table above it (`--config`
overrides it for all files), as in Ruff. Its project root is the directory of
that configuration (not of one named by `--config`), else the
nearest ancestor holding `pyproject.toml`, `setup.py`, `setup.cfg` or `.git`,
else the named file's own directory, or the named directory itself (never the
working directory: a run from elsewhere must find the same project).
The project is the tree under its root, minus nested sub-projects (a
directory whose files have another root) and excluded files: what
`torchdet-lint .` at the root lints. Named files are reported; the project's
other files are analysed for the project phase only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from torchdet_lint.core.settings import Settings
from torchdet_lint.engine.config import ConfigError, config_in, formatter_line_length, load_config_file, validate_selectors
from torchdet_lint.engine.discovery import SOURCE_SUFFIXES, Excluder, SourceFile, display_path

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
PYPROJECT = "pyproject.toml"


def _holds_marker(directory: Path, has: Callable[[str], bool]) -> bool:
    """Whether a directory holds a project marker. A `setup.py` beside an `__init__.py` is a
    module of its package (dinov2's `eval/setup.py` builds the experiment), not a packaging
    script: it does not cut the package off from the project around it."""
    return any(has(marker) for marker in PROJECT_MARKERS if marker != "setup.py") or (has("setup.py") and not has("__init__.py"))


def _above_packages(directory: Path) -> Path:
    """`directory`, or, when it is a package (it holds `__init__.py`), the directory above the
    outermost package of its chain."""
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


@dataclass
class ProjectScope:
    """One project of a run: its root, settings, every file, and which of them were named."""

    root: Path
    config: Optional[Path]
    settings: Settings
    files: List[SourceFile] = field(default_factory=list)  # named and not, sorted by display path
    named: Set[Path] = field(default_factory=set)  # absolute paths of the files to report

    @property
    def named_files(self) -> List[SourceFile]:
        return [file for file in self.files if file.path in self.named]

    @property
    def context_files(self) -> List[SourceFile]:
        """The files analysed for the project phase only."""
        return [file for file in self.files if file.path not in self.named]


def validated(settings: Settings) -> Settings:
    """The settings once their rule selectors are known to exist; a bad one names the key and the file."""
    for key in ("select", "ignore", "extend_select", "fixable", "unfixable"):
        value = getattr(settings, key)
        if value:
            validate_selectors(value, f"{settings.source}: `{key.replace('_', '-')}`")
    for pattern, codes in settings.per_file_ignores:
        validate_selectors(codes, f"{settings.source}: `per-file-ignores.{pattern}`")
    return settings


class Workspace:
    """Finds configurations and project roots (memoised per directory) and the
    files of each project, for one run (or one editor session)."""

    def __init__(
        self,
        cwd: Optional[Path] = None,
        config_override: Optional[Path] = None,
        overrides: Callable[[Settings], Settings] = lambda settings: settings,
    ) -> None:
        self.cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self.config_override = Path(os.path.abspath(config_override)) if config_override else None
        self.overrides = overrides
        self._nearest_config: Dict[Path, Optional[Path]] = {}
        self._settings: Dict[Tuple[Optional[Path], Optional[Path]], Settings] = {}
        self._marker_root: Dict[Path, Optional[Path]] = {}
        self._scopes: Dict[Tuple[Path, Optional[Path]], ProjectScope] = {}
        self._walked: Dict[Tuple[Path, Optional[Path]], Tuple[List[Path], List[Path]]] = {}
        self._excluders: Dict[Tuple[Path, Optional[Path]], Excluder] = {}

    # -- configuration ----------------------------------------------------------------------
    def config_for(self, directory: Path) -> Optional[Path]:
        """The configuration in force for files in `directory`."""
        if self.config_override is not None:
            return self.config_override
        chain = []
        current: Optional[Path] = directory
        found: Optional[Path] = None
        while current is not None:
            if current in self._nearest_config:
                found = self._nearest_config[current]
                break
            chain.append(current)
            found = config_in(current)
            if found is not None:
                break
            current = current.parent if current.parent != current else None
        for directory_seen in chain:
            self._nearest_config[directory_seen] = found
        return found

    def settings_for_config(self, config: Optional[Path], root: Path) -> Settings:
        key = (config, root)
        if key not in self._settings:
            if config is None:
                settings = Settings(root=root)
            else:
                if not config.is_file():
                    raise ConfigError(f"{config}: config file not found")
                settings = validated(load_config_file(config, explicit=config == self.config_override))
            # The project's formatter sets the line length of fixes (the config found by the search
            # lives at the root; one named by --config may live anywhere, even outside the project).
            settings = replace(settings, line_length=formatter_line_length(root))
            self._settings[key] = self.overrides(settings)
        return self._settings[key]

    # -- project roots --------------------------------------------------------------------------
    def _nearest_marker_directory(self, directory: Path) -> Optional[Path]:
        chain = []
        current: Optional[Path] = directory
        found: Optional[Path] = None
        while current is not None:
            if current in self._marker_root:
                found = self._marker_root[current]
                break
            chain.append(current)
            if _holds_marker(current, lambda name, where=current: (where / name).exists()):
                found = current
                break
            current = current.parent if current.parent != current else None
        for directory_seen in chain:
            self._marker_root[directory_seen] = found
        return found

    def root_for(self, directory: Path) -> Tuple[Path, Optional[Path]]:
        """(project root, configuration in force) for the files of `directory`. A configuration
        named by `--config` is a settings file, never a root: from inside a project,
        `--config ../alt.toml .` keeps the project's root (and its cache)."""
        config = self.config_for(directory)
        if config is not None and self.config_override is None and _is_within(directory, config.parent):
            return config.parent, config
        marked = self._nearest_marker_directory(directory)
        if marked is not None:
            return marked, config
        # No marker (an archive of a repository, an unpacked wheel): the directory above the
        # outermost package that holds the files, from where Python imports them
        # (`domainbed/scripts/train.py` is `domainbed.scripts.train`), else their own directory.
        # Never the working directory: it is where a command is run from (a folder of many
        # checkouts, home), and one loose script walked every tree below it.
        return _above_packages(directory), config

    def scope_for(self, directory: Path) -> ProjectScope:
        root, config = self.root_for(directory)
        key = (root, config)
        scope = self._scopes.get(key)
        if scope is None:
            scope = self._scopes[key] = ProjectScope(root, config, self.settings_for_config(config, root))
        return scope

    def excluder(self, scope: ProjectScope) -> Excluder:
        key = (scope.root, scope.config)
        if key not in self._excluders:
            self._excluders[key] = Excluder(scope.root, scope.settings.exclude + scope.settings.extend_exclude)
        return self._excluders[key]

    # -- the files of a project ------------------------------------------------------------------
    def _is_boundary(self, scope: ProjectScope, directory: Path, names: Sequence[str]) -> bool:
        """Whether `directory` (inside the scope's tree) is the root of another project."""
        if self.config_override is not None:
            return False
        if config_in(directory, set(names).__contains__) is not None:
            return True
        return scope.config is None and _holds_marker(directory, set(names).__contains__)

    def walk(self, scope: ProjectScope) -> Tuple[List[Path], List[Path]]:
        """Every source file of the project (excludes and `.gitignore` applied), and the
        roots of the sub-projects inside its tree, which the walk does not enter."""
        key = (scope.root, scope.config)
        if key not in self._walked:
            files: List[Path] = []
            boundaries: List[Path] = []
            excluder = self.excluder(scope)
            for directory, dirnames, filenames in os.walk(scope.root):
                base = Path(directory)
                if base != scope.root and self._is_boundary(scope, base, [*filenames, *dirnames]):
                    boundaries.append(base)
                    dirnames[:] = []
                    continue
                dirnames[:] = sorted(d for d in dirnames if not excluder.excluded(base / d, True))
                for name in sorted(filenames):
                    if name.endswith(SOURCE_SUFFIXES):
                        candidate = base / name
                        if not excluder.excluded(candidate, False):
                            files.append(candidate)
            self._walked[key] = (files, boundaries)
        return self._walked[key]

    def _walk_named_directory(self, directory: Path, scope: ProjectScope) -> Iterator[Tuple[ProjectScope, Path]]:
        """The files a named directory contributes, each with its project (sub-projects included)."""
        files, boundaries = self.walk(scope)
        if _is_within(directory, scope.root) and not self._excluded_on_the_way(scope, directory):
            prefix = str(directory) + os.sep
            for path in files:
                if directory == scope.root or str(path).startswith(prefix):
                    yield scope, path
        else:
            # A directory the project excludes, named explicitly: walked on its own terms.
            excluder = self.excluder(scope)
            for base, dirnames, filenames in os.walk(directory):
                dirnames[:] = sorted(d for d in dirnames if not excluder.excluded(Path(base) / d, True))
                for name in sorted(filenames):
                    if name.endswith(SOURCE_SUFFIXES) and not excluder.excluded(Path(base) / name, False):
                        yield scope, Path(base) / name
        for boundary in boundaries:
            if _is_within(boundary, directory):
                yield from self._walk_named_directory(boundary, self.scope_for(boundary))

    def _excluded_on_the_way(self, scope: ProjectScope, directory: Path) -> bool:
        """Whether the project's walk skips `directory` (it or a directory above it is excluded)."""
        excluder = self.excluder(scope)
        current = directory
        while current != scope.root and _is_within(current, scope.root):
            if excluder.excluded(current, True):
                return True
            current = current.parent
        return False

    def scopes(self, paths: Sequence[str], force_exclude: bool = False) -> Tuple[List[ProjectScope], List[str]]:
        """The projects of the named paths, each with all its files and the named ones marked;
        and the paths that do not exist."""
        missing: List[str] = []
        touched: Dict[Tuple[Path, Optional[Path]], ProjectScope] = {}
        extra: Dict[Tuple[Path, Optional[Path]], Set[Path]] = {}
        for raw in paths:
            path = Path(raw)
            absolute = Path(os.path.normpath(path if path.is_absolute() else self.cwd / path))
            if absolute.is_dir():
                scope = self.scope_for(absolute)
                if force_exclude and self.excluder(scope).excluded(absolute, True):
                    continue
                for owner, file in self._walk_named_directory(absolute, scope):
                    touched[(owner.root, owner.config)] = owner
                    owner.named.add(file)
                    extra.setdefault((owner.root, owner.config), set()).add(file)
            elif absolute.exists() or absolute.is_symlink():
                scope = self.scope_for(absolute.parent)
                if force_exclude and self.excluder(scope).excluded(absolute, False):
                    continue
                touched[(scope.root, scope.config)] = scope
                scope.named.add(absolute)
                extra.setdefault((scope.root, scope.config), set()).add(absolute)
            else:
                missing.append(raw)
        explicit = {Path(os.path.normpath(self.cwd / raw)) for raw in paths}
        result = []
        for key, scope in touched.items():
            files, _ = self.walk(scope)
            every = files + sorted(extra.get(key, set()) - set(files))
            scope.files = sorted(
                (SourceFile(path, display_path(path, self.cwd), path in explicit) for path in every),
                key=lambda file: file.display,
            )
            result.append(scope)
        return sorted(result, key=lambda scope: str(scope.root)), missing

    def scope_of_file(self, path: Path) -> ProjectScope:
        """The project of one file (named or not), its files filled in: the editor's
        and the flake8 plugin's view of a buffer."""
        scope = self.scope_for(path.parent)
        if not scope.files:
            files, _ = self.walk(scope)
            every = files if path in files else [*files, path]
            scope.files = sorted((SourceFile(p, display_path(p, self.cwd), p == path) for p in every), key=lambda f: f.display)
        elif all(file.path != path for file in scope.files):
            scope.files = sorted([*scope.files, SourceFile(path, display_path(path, self.cwd), True)], key=lambda f: f.display)
        return scope


def _is_within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents
