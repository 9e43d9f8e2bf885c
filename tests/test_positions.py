"""Statement-local positions equal LibCST's whole-module positions for every node."""

from __future__ import annotations

import libcst as cst
import pytest
from conftest import FIXTURES, ROOT
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

from torchdet_lint.core.positions import LocalPositions, parent_map
from torchdet_lint.core.source import LineIndex, python_ast

TRICKY = (
    "import torch\n"
    "# a comment\n"
    "@decorator(\n    arg=1,\n)\n"
    "class A(  # note\n        Base):\n"
    "    x = 1; y = torch.zeros(\n        3,\n    )\n"
    "\n"
    "    @staticmethod\n"
    "    async def f(a,\n                b):\n"
    "        '''doc\n        string'''\n"
    "        if a:\n            return b.index_add_(0, a, b)  # trailing\n"
    "        else: return None\n"
    "\tdef g(self): pass\n"
)


# Nodes inside the blocks of compound statements: only the innermost statement is rendered.
BLOCKS = (
    "def f(x, xs):\n"
    "    for a in xs:\n"
    "        if a:  # c\n"
    "            y = torch.gather(\n                x, 1, a)\n"
    "        elif a is None:\n"
    "            pass\n"
    "        elif a == 2: z = 1\n"
    "        else:\n"
    "            # only a comment before\n"
    "            x.index_add_(0, a, x)\n"
    "    else:\n"
    "        while x:\n"
    "            x = x[1:]\n"
    "        else:\n"
    "            x = None\n"
    "    try:\n"
    "        with open(x) as h, torch.no_grad():\n"
    "            h.read(); torch.histc(x)\n"
    "    except (ValueError,\n            KeyError) as error:\n"
    "        raise\n"
    "    except Exception:\n"
    "        return [i for i in xs\n                if i]\n"
    "    else:\n"
    "        x = 2\n"
    "    finally:\n"
    "        x = 3\n"
    "    try:\n"
    "        pass\n"
    "    except* OSError:\n"
    "        x = 4\n"
    "    async def g():\n"
    "        async for b in xs:\n"
    "            async with b:\n"
    "                await b\n"
)


def _sources():
    yield pytest.param(TRICKY.replace("\tdef g(self): pass\n", "    def g(self): pass\n"), id="tricky")
    yield pytest.param(BLOCKS, id="blocks")
    yield pytest.param(BLOCKS.replace("\n", "\r\n"), id="blocks-crlf")
    yield pytest.param(TRICKY.replace("\n", "\r\n").replace("\tdef g(self): pass\r\n", ""), id="crlf")
    for path in sorted((ROOT / "examples").rglob("*.py")) + sorted(FIXTURES.rglob("*.py"))[:40]:
        yield pytest.param(path.read_text(encoding="utf-8"), id=str(path.relative_to(ROOT)))


@pytest.mark.parametrize("source", list(_sources()))
def test_local_positions_match_libcst(source: str) -> None:
    module = cst.parse_module(source)
    parents = parent_map(module)
    for provider, inclusive in ((PositionProvider, False), (WhitespaceInclusivePositionProvider, True)):
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(provider)
        local = LocalPositions(module, LineIndex(source), lambda: python_ast(source))
        for node, code_range in expected.items():
            if id(node) not in parents:
                continue  # trivia and the module itself are never reported
            want = (code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column)
            assert local._local_range(node, provider) == want, (type(node).__name__, inclusive)
