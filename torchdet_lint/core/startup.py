"""A fast start: the code that `dataclasses` generates is compiled once per machine.

Most of a one-file run is spent importing LibCST, and most of that import is
`dataclasses` compiling the source text of `__init__`, `__eq__`, `__repr__`,
`__hash__` and `__setattr__` for LibCST's ~230 node classes: about 1,100 calls
to `compile`, ~60% of the import. Those texts are the same on every run, so
while our imports run, `dataclasses` is handed a code object compiled earlier
(kept in the user's cache directory, keyed by the exact text and Python's
bytecode tag) instead of compiling the text again.

`exec(compile(text, "<string>", "exec"))` is precisely what `exec(text)` does,
so the classes are identical; the cache is a pure speed-up like a `.pyc` file,
rebuilt when missing or unreadable and skipped when the directory is not
writable. `dataclasses` calls the built-in `exec` by its global name in every
Python from 3.9 to 3.13, which is the one seam this relies on: a module global
named `exec` shadows the built-in for that module only, for the duration of
the `with` block.
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import CodeType
from typing import Dict, Iterator, Optional, Tuple

# A cache file that grows past this (new libcst versions over time) is
# rewritten with only what the latest run used.
_MAX_ENTRIES = 5000


def user_cache_directory() -> Path:
    """`$XDG_CACHE_HOME/torchdet-lint`, else `~/.cache/torchdet-lint`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchdet-lint"


def _cache_file() -> Path:
    return user_cache_directory() / f"dataclasses.{sys.implementation.cache_tag}.marshal"


def _load(path: Path) -> Dict[str, CodeType]:
    try:
        with open(path, "rb") as handle:
            codes = marshal.loads(handle.read())  # far faster than marshal.load on a file
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {text: code for text, code in codes.items() if isinstance(text, str) and isinstance(code, CodeType)}


def _store(path: Path, codes: Dict[str, CodeType]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                marshal.dump(codes, out)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass


# The cache file as last read or written by this process, with its (size, mtime): a process
# that enters the block many times (the registry imports each rule module in it) reads it once.
_READ: Dict[Path, Tuple[Tuple[int, int], Dict[str, CodeType]]] = {}
# Guards the hook: threads of the language server may import at the same time.
_HOOK_LOCK = threading.Lock()


def _stat(path: Path) -> Optional[Tuple[int, int]]:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _known(path: Path) -> Dict[str, CodeType]:
    stat = _stat(path)
    read = _READ.get(path)
    if read is not None and stat is not None and read[0] == stat:
        return read[1]
    codes = _load(path)
    if stat is not None:
        _READ[path] = (stat, codes)
    return codes


@contextlib.contextmanager
def cached_dataclass_code() -> Iterator[None]:
    """Within the block, dataclasses defined by imports reuse code compiled by earlier runs."""
    import dataclasses

    with _HOOK_LOCK:
        hooked = "exec" in vars(dataclasses)  # ours, in an enclosing block or another thread, or somebody else's
        if not hooked:
            path = _cache_file()
            known = _known(path)
            used: Dict[str, CodeType] = {}

            def exec_compiled_once(source, globals=None, locals=None):  # noqa: A002 - the signature of exec
                if isinstance(source, str):
                    code = known.get(source)
                    if code is None:
                        # dont_inherit: compile as `exec(text)` inside dataclasses would, not with our __future__ flags
                        code = compile(source, "<string>", "exec", dont_inherit=True)
                    used[source] = code
                    source = code
                return builtins.exec(source, globals, locals)

            dataclasses.exec = exec_compiled_once  # type: ignore[attr-defined]
    if hooked:
        yield
        return
    try:
        yield
    finally:
        with _HOOK_LOCK:
            del dataclasses.exec  # type: ignore[attr-defined]
        if any(text not in known for text in used):
            merged = {**known, **used}
            stored = merged if len(merged) <= _MAX_ENTRIES else used
            _store(path, stored)
            stat = _stat(path)
            if stat is not None:
                _READ[path] = (stat, stored)
