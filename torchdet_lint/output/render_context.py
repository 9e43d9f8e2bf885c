"""What a formatter may need beyond the diagnostics: sources, colour, fix settings."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from torchdet_lint.core.source import LineIndex


@dataclass
class OutputContext:
    sources: Dict[str, object] = field(default_factory=dict)  # path -> SourceText
    color: bool = False
    unsafe_fixes: bool = False
    _indexes: Dict[str, LineIndex] = field(default_factory=dict)

    def line_index(self, path: str) -> Optional[LineIndex]:
        if path not in self._indexes:
            source = self.sources.get(path)
            if source is None:
                return None
            self._indexes[path] = LineIndex(getattr(source, "text", source))
        return self._indexes[path]

    def location(self, path: str, offset: int) -> Tuple[int, int]:
        """1-based (line, column) of a character offset in a file."""
        index = self.line_index(path)
        if index is None:
            return 1, 1
        line, column = index.position(offset)
        return line, column + 1

    def style(self, text: str, *codes: str) -> str:
        if not self.color or not codes:
            return text
        return "\x1b[" + ";".join(codes) + "m" + text + "\x1b[0m"


def use_color(choice: str, stream=None) -> bool:
    stream = stream or sys.stdout
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def fixable(diagnostic, unsafe_fixes: bool) -> bool:
    fix = diagnostic.fix
    return fix is not None and (fix.applicability.value == "safe" or unsafe_fixes)


def location_prefix(diagnostic) -> str:
    if diagnostic.cell is not None:
        return f"{diagnostic.path}:cell {diagnostic.cell}:{diagnostic.line}:{diagnostic.column}"
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}"
