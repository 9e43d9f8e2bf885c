"""Where an inserted import goes: the isort section and position that `ruff check
--select I` (isort's defaults) expects, with one blank line between sections.

One implementation for both kinds of fix: file rules describe the header imports
from the CST (`FileContext.import_edit`), project rules from the summaries'
anchors (`checks/insertions.py`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

from torchdet_lint.core.diagnostics import Edit

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))

FUTURE, STANDARD_LIBRARY, THIRD_PARTY, FIRST_PARTY, LOCAL_FOLDER = range(5)


@dataclass(frozen=True)
class HeaderImportLine:
    """One import statement of a file's leading block: its (first) module, its form, and
    the offsets of its line start and of the line after it."""

    module: str
    is_from: bool
    start: int
    end: int


def import_section(module: str, first_party: frozenset) -> int:
    """isort's sections, in order: future, standard library, third party, first party,
    and relative imports (the local folder), each its own block."""
    top = module.split(".")[0]
    if top == "__future__":
        return FUTURE
    if module.startswith("."):
        return LOCAL_FOLDER
    if top in _STDLIB:
        return STANDARD_LIBRARY
    if top in first_party:
        return FIRST_PARTY
    return THIRD_PARTY


def _sort_key(is_from: bool, module: str) -> tuple:
    # isort's default (force_sort_within_sections off): `import x` lines before `from x import y`
    return (1 if is_from else 0, module.lower())


def place_import(
    line: str,
    module: str,
    header: Sequence[HeaderImportLine],
    first_party: frozenset,
    after_imports: int,
    at_end_without_newline: bool = False,
    newline: str = "\n",
) -> Edit:
    """The edit inserting `line` (`import x` / `from x import y`) among the header imports:
    in its section in sorted position, or as a new section with a blank line around it."""
    section = import_section(module, first_party)
    key = _sort_key(line.startswith("from "), module)
    last_of_section = None
    for existing in header:
        other = import_section(existing.module, first_party)
        if other == section:
            if _sort_key(existing.is_from, existing.module) > key:
                return Edit(existing.start, existing.start, line + newline)
            last_of_section = existing
        elif other > section:
            if last_of_section is not None:
                break
            # A new section before the later ones: a blank line separates it from them.
            return Edit(existing.start, existing.start, line + newline + newline)
    if last_of_section is not None:
        return Edit(last_of_section.end, last_of_section.end, line + newline)
    prefix = newline if at_end_without_newline else ""
    if header:
        # A new last section: a blank line after the sections above.
        return Edit(after_imports, after_imports, prefix + newline + line + newline)
    # The first import of the file: a blank line after a docstring or comments above it,
    # and one after it, before the code (isort's lines after imports).
    if after_imports > 0:
        prefix += newline
    return Edit(after_imports, after_imports, prefix + line + newline + newline)
