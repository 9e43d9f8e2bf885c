"""`--watch`: poll the linted projects' files (and their configurations) and lint again
when one changes, appears or goes. Polling with the standard library works on every
filesystem and platform without a dependency; a re-run goes through the result cache,
so only the changed files are parsed again while the project phase (which decides
the findings of the files that depend on them) runs over the whole project anew.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional, Tuple

Snapshot = Dict[Path, Tuple[int, int]]


def snapshot(paths: Iterable[Path]) -> Snapshot:
    """(mtime in ns, size) of each existing path."""
    state: Snapshot = {}
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        state[path] = (stat.st_mtime_ns, stat.st_size)
    return state


def changed_paths(before: Snapshot, after: Snapshot) -> list:
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def wait_for_change(
    take: Callable[[], Snapshot],
    before: Snapshot,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    rounds: Optional[int] = None,
) -> Tuple[Snapshot, list]:
    """Poll `take()` every `interval` seconds until it differs from `before`: (new snapshot,
    the paths that changed). `rounds` bounds the polls (tests); None polls until a change."""
    count = 0
    while rounds is None or count < rounds:
        sleep(interval)
        count += 1
        after = take()
        changed = changed_paths(before, after)
        if changed:
            return after, changed
    return before, []
