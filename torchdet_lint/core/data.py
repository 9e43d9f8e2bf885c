"""The data files in `rules/`: where they are, and loading them fast.

Parsing the TOML catalogs costs more than the rest of a one-file run, so the
parsed tables are kept, per file content, as pickles in the user's cache
directory (like `.pyc` files: a pure speed-up, rebuilt whenever a file changes,
skipped when the directory is not writable).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict

from torchdet_lint.core.startup import user_cache_directory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError
_FORMAT = b"1"


def rules_directory() -> Path:
    """`torchdet_lint/rules` in an installed wheel, else the repository's `rules/`."""
    package = Path(__file__).resolve().parent.parent  # this module is in torchdet_lint/core/
    packaged = package / "rules"
    if packaged.is_dir():
        return packaged
    return package.parent / "rules"


def _cache_directory() -> Path:
    return user_cache_directory() / "toml"


@functools.lru_cache(maxsize=None)
def load_toml(path: Path) -> Dict[str, Any]:
    """The parsed TOML file (raises TOMLDecodeError or UnicodeDecodeError like tomllib)."""
    raw = path.read_bytes()
    key = hashlib.sha256(_FORMAT + raw).hexdigest()
    cached = _cache_directory() / f"{key}.pickle"
    try:
        with open(cached, "rb") as handle:
            return pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, ValueError):
        pass
    data = tomllib.loads(raw.decode("utf-8"))
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=cached.parent, prefix=".tmp-")
        with os.fdopen(handle, "wb") as out:
            pickle.dump(data, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, cached)
    except OSError:
        pass
    return data
