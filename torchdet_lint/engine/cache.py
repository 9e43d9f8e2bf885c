"""The result cache (`.torchdet_lint_cache/`): one entry per file pass, keyed by
the file's bytes, the tool version, the effective config, the catalogs and the
target torch version, so that a warm run never re-parses an unchanged file and
the project phase runs over cached summaries.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from torchdet_lint import __version__
from torchdet_lint.core.data import rules_directory
from torchdet_lint.engine.file_pass import cyclic_gc_paused

CACHE_DIR_NAME = ".torchdet_lint_cache"
# Bump when the pickled result layout changes (2: the classes moved into core/ and engine/;
# 3: FileSummary.aliases; 4: star imports; 5: the modules of `from m import` statements; 6: set_epoch
# receivers with their origin; 7: FileResult.suppressed; 8: the resume-data, rank-order and library
# checkpoint facts, and draws through loop and comprehension names; 9: the arguments of first-party
# calls, each function's parameters and the attributes set outside `__init__`; 10: the harness that
# seeds a test runner's classes and the package an unresolved import stays in; 11: what the arguments
# of first-party calls carry of a gradient, and the functions handed on; 12: the command-line options
# a draw or loader runs under, the parsed namespaces calls pass on and call arguments that are loop
# variables over a literal table; 13: the parameter tests a draw runs under, and
# the draws `model.eval()` leaves on; 14: call arguments and attributes known by their length).
_FORMAT = 14


def _catalog_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted(rules_directory().glob("*.toml")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


_CATALOG_FINGERPRINT: Optional[str] = None
_CODE_FINGERPRINT: Optional[str] = None


def code_fingerprint() -> str:
    """Size and mtime of the package's own modules: a development install that
    changes the code (and so the pickled result layout) never reads stale entries."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        package = Path(__file__).resolve().parent.parent  # the whole package, not just engine/
        digest = hashlib.sha256()
        for path in sorted(package.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        _CODE_FINGERPRINT = digest.hexdigest()
    return _CODE_FINGERPRINT


def catalog_fingerprint() -> str:
    global _CATALOG_FINGERPRINT
    if _CATALOG_FINGERPRINT is None:
        _CATALOG_FINGERPRINT = _catalog_fingerprint()
    return _CATALOG_FINGERPRINT


def run_fingerprint(options) -> str:
    """Everything except the file's own bytes that can change a file's result."""
    parts = [
        str(_FORMAT),
        __version__,
        code_fingerprint(),
        options.settings.fingerprint(),
        ",".join(sorted(options.selected)),
        "%d.%d" % options.torch_version,
        repr(options.library_versions),
        ",".join(sorted(options.first_party)),
        catalog_fingerprint(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class Cache:
    def __init__(self, root: Path, options) -> None:
        self.directory = root / CACHE_DIR_NAME
        self.fingerprint = run_fingerprint(options)
        self.hits = 0
        self.misses = 0
        self._made: set = set()  # entry directories known to exist

    def key(self, data: bytes, path: Path, module_name: Optional[str]) -> str:
        digest = hashlib.sha256(data)
        digest.update(b"\0" + str(path).encode() + b"\0" + (module_name or "").encode() + b"\0" + self.fingerprint.encode())
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def load(self, key: str):
        try:
            with open(self._entry(key), "rb") as handle:
                result = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return result

    def store(self, key: str, result) -> None:
        entry = self._entry(key)
        # Written under a name of its own (this process and thread), then renamed: a reader
        # never sees half an entry. One entry per file of a cold run, so the directories are
        # made and marked once each rather than checked every time.
        temporary = entry.with_name(f".tmp-{key}-{os.getpid()}-{threading.get_ident()}")
        try:
            if entry.parent not in self._made:
                entry.parent.mkdir(parents=True, exist_ok=True)
                mark_directory(self.directory)
                self._made.add(entry.parent)
            with open(temporary, "wb") as out:
                pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, entry)
        except OSError:
            self._made.discard(entry.parent)  # removed meanwhile? made again next time
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            # a read-only tree still lints; it just is not cached


def mark_directory(directory: Path) -> None:
    """The cache directory ignores itself in git and says it is a cache (CACHEDIR.TAG)."""
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by torchdet-lint\n*\n", encoding="utf-8")
        (directory / "CACHEDIR.TAG").write_text(
            "Signature: 8a477f597d28d172789f06886806bc55\n# torchdet-lint cache\n", encoding="utf-8"
        )


def summary_fingerprint(options) -> str:
    """Everything except a file's bytes that can change its summary: not the rule
    selection (the summary collector runs whatever rules are selected)."""
    settings = options.settings
    relevant = (settings.seed_functions, settings.entry_points, str(settings.root))
    parts = [
        str(_FORMAT),
        __version__,
        code_fingerprint(),
        repr(relevant),
        "%d.%d" % options.torch_version,
        repr(options.library_versions),
        ",".join(sorted(options.first_party)),
        catalog_fingerprint(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# A file changed within this long before its entry was recorded may have changed
# again within the file system's timestamp granularity: its content is checked
# (git's "racily clean" entries).
RACY_NS = 2_000_000_000


@dataclass
class SummaryEntry:
    size: int
    mtime_ns: int
    recorded_ns: int
    digest: str
    module_name: Optional[str]
    summary: Any  # FileSummary or None (a file that cannot be parsed)


class SummaryIndex:
    """Every file summary of one project in one file (`.torchdet_lint_cache/summaries-*.pickle`),
    so that a run that names a few files reads the rest of the project in one go.

    An entry is fresh while the file's size and modification time are those
    recorded; a racily recorded entry, or one whose stat changed, is checked
    against the file's content digest.
    """

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.path = root / CACHE_DIR_NAME / f"summaries-{fingerprint[:32]}.pickle"
        self.entries: Dict[str, SummaryEntry] = {}
        self.dirty = False
        self.loaded = False

    def load(self) -> "SummaryIndex":
        if not self.loaded:
            self.loaded = True
            try:
                with open(self.path, "rb") as handle, cyclic_gc_paused():  # 3x faster without the collector
                    entries = pickle.load(handle)
                    # Long-lived data without reference cycles: out of the collector's sight, or its
                    # next full collection walks every summary (another third of the load time).
                    gc.freeze()
                if isinstance(entries, dict):
                    self.entries = entries
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
                self.entries = {}
        return self

    def lookup(self, key: str, path: Path, module_name: Optional[str]) -> Tuple[bool, Any]:
        """(fresh, summary) of a file from its entry, checking the file on disk."""
        entry = self.entries.get(key)
        if entry is None or entry.module_name != module_name:
            return False, None
        try:
            stat = os.stat(path)
        except OSError:
            return False, None
        if stat.st_size == entry.size and stat.st_mtime_ns == entry.mtime_ns and entry.recorded_ns - entry.mtime_ns > RACY_NS:
            return True, entry.summary
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return False, None
        if content_digest(data) != entry.digest:
            return False, None
        self.record(key, (stat.st_size, stat.st_mtime_ns), entry.digest, module_name, entry.summary)  # the stat moved on
        return True, entry.summary

    def record(self, key: str, stat: Tuple[int, int], digest: str, module_name: Optional[str], summary: Any) -> None:
        """Keep a file's summary, with the (size, mtime in ns) taken before its bytes (of
        `digest`) were read: a write after that read changes them, so the entry is checked again."""
        known = self.entries.get(key)
        now = time.time_ns()
        if (
            known is not None
            and (known.size, known.mtime_ns, known.digest, known.module_name) == (stat[0], stat[1], digest, module_name)
            and known.recorded_ns - known.mtime_ns > RACY_NS
        ):
            return  # nothing new: the index need not be written again
        # The summary's strings are not interned: on torch's 2,285 summaries that made the index
        # 14% smaller and its load 3% faster, and cost 2-3 s of every cold run.
        self.entries[key] = SummaryEntry(stat[0], stat[1], now, digest, module_name, summary)
        self.dirty = True

    def forget_missing(self, keys: set) -> None:
        """Drop the entries of files that are no longer in the project."""
        for key in [key for key in self.entries if key not in keys]:
            del self.entries[key]
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            mark_directory(self.path.parent)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            with os.fdopen(handle, "wb") as out:
                pickle.dump(self.entries, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)
            self.dirty = False
        except OSError:
            pass  # a read-only tree still lints; it just is not cached
