"""A project's final diagnostics kept whole (`.torchdet_lint_cache/results-*.pickle`), so that
a run over a project where nothing changed answers without a file pass or a project phase.

The per-file cache saves the parse of an unchanged file, but a warm run still unpickles every
file's result and runs the project phase over the whole project (on the torch tree: 1 s and 6 s,
for the same answer as last time). What the project phase reads is every file of the project
(their summaries, and the texts of the reported ones for their `noqa` comments), the YAML
configs it lists when a run is built from one, and the settings: when none of them changed since
a run recorded its diagnostics, and every file named now was reported then, those diagnostics are
the answer (what is reported for a file never depends on which other files are named).

A file is unchanged while its size and modification time are those recorded, or, when they moved
or the entry was recorded within the file system's timestamp granularity of the file's last write,
while its content digest is (the summary index's rule, git's "racily clean" entries).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.engine.cache import CACHE_DIR_NAME, RACY_NS, SummaryIndex, content_digest, mark_directory, run_fingerprint

# Bump when the pickled layout changes.
_FORMAT = 1


@dataclass(frozen=True)
class Stamp:
    """What a file was when its content went into a result: stat, when that was taken, digest."""

    size: int
    mtime_ns: int
    recorded_ns: int
    digest: str

    def holds_for(self, path: Path) -> bool:
        try:
            stat = os.stat(path)
        except OSError:
            return False
        if stat.st_size == self.size and stat.st_mtime_ns == self.mtime_ns and self.recorded_ns - self.mtime_ns > RACY_NS:
            return True
        try:
            with open(path, "rb") as handle:
                return content_digest(handle.read()) == self.digest
        except OSError:
            return False


def stamp_of(path: Path) -> Optional[Stamp]:
    """A file's stamp now (its stat taken before its bytes are read), None when it cannot be read."""
    try:
        stat = os.stat(path)
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return Stamp(stat.st_size, stat.st_mtime_ns, time.time_ns(), content_digest(data))


@dataclass
class ResultsRecord:
    """One run's answer for one project, with what it was computed from."""

    cwd: str
    files: Dict[str, Tuple[str, Optional[str], Stamp]]  # index key -> (display, module name, stamp)
    reported: Dict[str, List[Diagnostic]]  # index key of each reported file -> its final diagnostics
    configs: Optional[Dict[str, Stamp]]  # the YAML configs the project phase listed; None: it never looked
    format: int = _FORMAT


class ConfigListing:
    """The project's YAML configs for the project phase, listed on first use, remembering what
    it listed: a results record then depends on them (a config added, removed or edited)."""

    def __init__(self, lister: Callable[[], List[Path]]) -> None:
        self._lister = lister
        self.listed: Optional[List[Path]] = None
        self.stamps: Dict[str, Stamp] = {}

    def __call__(self) -> List[Path]:
        if self.listed is None:
            self.listed = self._lister()
            # Stamped as they are read: the project phase reads them right after listing.
            self.stamps = {str(path): stamp for path in self.listed if (stamp := stamp_of(path)) is not None}
        return self.listed


@dataclass
class ResultsCache:
    """The results record of one project under one configuration and selection."""

    path: Path

    @classmethod
    def for_project(cls, root: Path, options) -> "ResultsCache":
        digest = hashlib.sha256(run_fingerprint(options).encode()).hexdigest()
        return cls(root / CACHE_DIR_NAME / f"results-{digest[:32]}.pickle")

    def answer(
        self,
        keyed_files: Sequence[Tuple[str, object]],
        named: Sequence[str],
        module_of: Callable[[Path], Optional[str]],
        list_configs: Callable[[], List[Path]],
    ) -> Optional[Dict[str, List[Diagnostic]]]:
        """The recorded diagnostics of each named file (by index key), or None unless nothing the
        record depends on changed: the same files with the same displays, contents and modules,
        the same configs, the same working directory, and every named file reported then.
        `keyed_files` holds (index key, `SourceFile`) for every file of the project."""
        record = self._load()
        if record is None or record.cwd != os.getcwd() or len(record.files) != len(keyed_files):
            return None
        if any(key not in record.reported for key in named):
            return None
        for key, file in keyed_files:
            known = record.files.get(key)
            if known is None or known[0] != file.display or known[1] != module_of(file.path):
                return None
        if record.configs is not None:
            listed = list_configs()
            if len(listed) != len(record.configs) or any(str(path) not in record.configs for path in listed):
                return None
            if not all(stamp.holds_for(Path(path)) for path, stamp in record.configs.items()):
                return None
        # Contents last: a stat each, a read only where the stat moved or was racy.
        if not all(record.files[key][2].holds_for(file.path) for key, file in keyed_files):
            return None
        return {key: record.reported[key] for key in named}

    def merged(self, record: ResultsRecord) -> ResultsRecord:
        """`record` with the reported files of the kept record added when both were computed from
        the same files and configs (one file named after a whole run: the next run naming another
        file still finds its answer)."""
        kept = self._load()
        if kept is None or kept.cwd != record.cwd or _contents(kept.files) != _contents(record.files):
            return record
        if _config_contents(kept.configs) != _config_contents(record.configs):
            return record
        record.reported = {**kept.reported, **record.reported}
        return record

    def _load(self) -> Optional[ResultsRecord]:
        try:
            with open(self.path, "rb") as handle:
                record = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None
        return record if isinstance(record, ResultsRecord) and record.format == _FORMAT else None

    def save(self, record: ResultsRecord) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            mark_directory(self.path.parent)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            with os.fdopen(handle, "wb") as out:
                pickle.dump(record, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)
        except OSError:
            pass  # a read-only tree still lints; it just is not cached

    def forget(self) -> None:
        """Drop the record: a run that could not record its answer leaves none that is stale."""
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _contents(files: Dict[str, Tuple[str, Optional[str], Stamp]]) -> Dict[str, Tuple[str, Optional[str], str]]:
    return {key: (display, module, stamp.digest) for key, (display, module, stamp) in files.items()}


def _config_contents(configs: Optional[Dict[str, Stamp]]) -> Optional[Dict[str, str]]:
    return None if configs is None else {path: stamp.digest for path, stamp in configs.items()}


def file_stamps(index: SummaryIndex, keyed_files: Sequence[Tuple[str, object]]) -> Optional[Dict]:
    """Every project file's stamp from the summary index (which holds each file's stat and digest
    once a run has read it), or None when a file has none (unreadable, or given as a text)."""
    files = {}
    for key, file in keyed_files:
        entry = index.entries.get(key)
        if entry is None:
            return None
        files[key] = (file.display, entry.module_name, Stamp(entry.size, entry.mtime_ns, entry.recorded_ns, entry.digest))
    return files
