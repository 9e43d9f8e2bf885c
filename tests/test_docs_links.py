"""The documentation's links hold: every relative link of README.md, CONTRIBUTING.md and docs/
names a file of the repository and, with a `#anchor`, a heading of that file (as GitHub
renders it); and no page cites a document that is not in the repository."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import FrozenSet, Iterator, List, Set, Tuple

import pytest
from conftest import ROOT
from markdown_it import MarkdownIt

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
_PARSER = MarkdownIt("commonmark").enable("table")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _inline_text(token) -> str:
    return "".join(child.content for child in token.children or [] if child.type in ("text", "code_inline"))


@functools.lru_cache(maxsize=None)
def _anchors(path: Path) -> FrozenSet[str]:
    tokens = _PARSER.parse(path.read_text(encoding="utf-8"))
    slugs: Set[str] = set()
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            slug = base = _slug(_inline_text(inline))
            number = 0
            while slug in slugs:  # GitHub numbers repeated headings: x, x-1, x-2
                number += 1
                slug = f"{base}-{number}"
            slugs.add(slug)
    return frozenset(slugs)


def _links(path: Path) -> Iterator[str]:
    for token in _PARSER.parse(path.read_text(encoding="utf-8")):
        for child in token.children or []:
            if child.type == "link_open":
                yield child.attrs["href"]
            elif child.type == "image":
                yield child.attrs["src"]


def _relative_links() -> List[Tuple[Path, str]]:
    return [(page, href) for page in PAGES for href in _links(page) if not re.match(r"[a-z]+:", href)]


@pytest.mark.parametrize("page, href", _relative_links(), ids=lambda value: str(value).replace(str(ROOT) + "/", ""))
def test_relative_link_names_a_file_and_a_heading(page: Path, href: str) -> None:
    target, _, anchor = href.partition("#")
    path = (page.parent / target).resolve() if target else page
    assert path.exists(), f"{page.relative_to(ROOT)}: {href} names no file"
    assert ROOT in path.parents or path == ROOT, f"{page.relative_to(ROOT)}: {href} leaves the repository"
    if anchor:
        assert path.suffix == ".md", f"{page.relative_to(ROOT)}: {href} anchors into a file that is not Markdown"
        assert anchor in _anchors(path), f"{page.relative_to(ROOT)}: {href} names no heading of {path.name}"


def test_the_pages_link_somewhere() -> None:
    """The parsing above sees the links (a broken parser would pass every page)."""
    assert len(_relative_links()) > 40
    assert "what-a-named-file-sees" in _anchors(ROOT / "docs" / "integrations.md")


def test_no_page_cites_a_document_outside_the_repository() -> None:
    for page in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        cited = re.findall(r"\b(?:RULES|INTERFACE|DESIGN)\.md\b|\.\./shared/", text)
        assert not cited, f"{page.relative_to(ROOT)} cites {cited}, which is not in the repository"
