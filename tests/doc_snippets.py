"""The editor configurations of docs/integrations.md, as the tests read them: each
is the fenced block right after an `<!-- editor-config: NAME -->` comment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Tuple

from conftest import ROOT

INTEGRATIONS = ROOT / "docs" / "integrations.md"
_SNIPPET = re.compile(r"<!-- editor-config: (?P<name>[\w.-]+) -->\n```(?P<language>\w+)\n(?P<body>.*?)```", re.DOTALL)


def snippets(path: Path = INTEGRATIONS) -> Dict[str, Tuple[str, str]]:
    """name -> (language, text) of every marked snippet in a Markdown file."""
    found: Dict[str, Tuple[str, str]] = {}
    for match in _SNIPPET.finditer(path.read_text(encoding="utf-8")):
        assert match["name"] not in found, f"{path.name}: two snippets named {match['name']}"
        found[match["name"]] = (match["language"], match["body"])
    return found


def snippet(name: str) -> str:
    return snippets()[name][1]
