"""Output formats: one module per format, all over the same diagnostics."""

from __future__ import annotations

import importlib
from typing import Callable

# Format name -> the module under `torchdet_lint.output` that renders it.
_MODULES = {
    "full": "full",
    "concise": "concise",
    "grouped": "grouped",
    "json": "json",
    "json-lines": "json_lines",
    "sarif": "sarif",
    "github": "github",
    "gitlab": "gitlab",
    "pylint": "pylint",
    "junit": "junit",
}
FORMATS = tuple(_MODULES)
# The formats meant for a person: the run's summary line follows them.
TEXT_FORMATS = ("full", "concise", "grouped")


def formatter(name: str) -> Callable[..., str]:
    """The `render(diagnostics, context)` function of a format."""
    if name not in _MODULES:  # pragma: no cover - the CLI validates the name
        raise ValueError(name)
    return importlib.import_module(f"torchdet_lint.output.{_MODULES[name]}").render
