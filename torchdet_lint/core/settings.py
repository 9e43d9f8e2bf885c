"""Settings: the validated `[tool.torchdet-lint]` table of one config file, as
frozen data every layer reads (loading and validating it is `config.py`'s job).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Tuple

ALL_PROFILES = frozenset({"reproducible", "strict", "performance"})
DEFAULT_PROFILE = "reproducible"


@dataclass(frozen=True)
class Settings:
    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Tuple[str, ...] = ()
    extend_exclude: Tuple[str, ...] = ()
    profile: str = DEFAULT_PROFILE
    torch_version: Optional[str] = None
    library_versions: Tuple[Tuple[str, str], ...] = ()  # config `library-versions`: (import name, "0.18")
    seed: int = 0
    seed_functions: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    entry_points: Tuple[str, ...] = ()
    assume_deterministic_mode: bool = False
    unsafe_fixes: bool = False
    fixable: Optional[Tuple[str, ...]] = None  # selectors of the rules whose fixes are offered (None: every rule)
    unfixable: Tuple[str, ...] = ()  # selectors of the rules whose fixes are never offered
    line_length: int = 88  # the project's formatter line length ([tool.ruff], [tool.black]): fixes stay within it
    root: Path = field(default_factory=Path.cwd)  # paths in the config are relative to it
    source: Optional[Path] = None  # the configuration file it came from

    def fingerprint(self) -> str:
        """A stable text of everything that can change a result (for the cache)."""
        values = {k: v for k, v in self.__dict__.items() if k not in ("source",)}
        return repr(sorted((k, str(v)) for k, v in values.items()))
