"""GitLab Code Quality report (a JSON array of issues), as Ruff's `gitlab` format.

Paths are relative to `CI_PROJECT_DIR` when GitLab sets it (the report is read at
the repository root); each issue's fingerprint is stable across runs and unique
within the report.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def _path(path: str) -> str:
    project = os.environ.get("CI_PROJECT_DIR")
    if project:
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(project)).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def render(diagnostics, context) -> str:
    issues = []
    seen = set()
    for d in diagnostics:
        path = _path(d.path)
        occurrence = 0
        while True:
            text = f"{path}\0{d.code}\0{d.message}\0{occurrence}"
            fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
            if fingerprint not in seen:
                break
            occurrence += 1
        seen.add(fingerprint)
        issues.append(
            {
                "description": f"{d.code} {d.message}",
                "check_name": d.code,
                "fingerprint": fingerprint,
                "severity": "major",
                "location": {"path": path, "lines": {"begin": d.line, "end": d.end_line}},
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
