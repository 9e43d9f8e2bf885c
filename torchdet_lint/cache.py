"""The result cache (`.torchdet_lint_cache/`): one entry per file pass, keyed by
the file's bytes, the tool version, the effective config, the catalogs and the
target torch version, so that a warm run never re-parses an unchanged file and
the project phase runs over cached summaries.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

from torchdet_lint import __version__
from torchdet_lint.data import rules_directory

CACHE_DIR_NAME = ".torchdet_lint_cache"
_FORMAT = 1  # bump when the pickled result layout changes


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
        package = Path(__file__).resolve().parent
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
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            self._mark_directory()
            handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
            with os.fdopen(handle, "wb") as out:
                pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, entry)
        except OSError:
            pass  # a read-only tree still lints; it just is not cached

    def _mark_directory(self) -> None:
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by torchdet-lint\n*\n", encoding="utf-8")
            (self.directory / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# torchdet-lint cache\n", encoding="utf-8"
            )
