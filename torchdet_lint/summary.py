"""FileSummary: what the project phase needs to know about one file, as plain
picklable data, filled by `SummaryCollector` during the shared traversal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.context import FileContext


@dataclass
class FileSummary:
    path: str
    module_name: Optional[str] = None
    imports: List[str] = field(default_factory=list)  # qualified modules/names imported, in order
    imports_torch: bool = False


def empty_summary(path: str, module_name: Optional[str], text: str) -> FileSummary:
    """The summary of a file the pre-filter skipped."""
    return FileSummary(path=path, module_name=module_name)


class SummaryCollector(cst.BatchableCSTVisitor):
    def __init__(self, context: "FileContext") -> None:
        super().__init__()
        self.context = context
        context.summary = FileSummary(path=context.path, module_name=context.module_name, imports_torch=context.imports_torch)

    def finish(self) -> None:
        self.context.summary.imports = list(self.context.resolver.imported_modules)
