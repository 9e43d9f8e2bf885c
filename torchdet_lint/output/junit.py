"""JUnit XML: one test suite per file, one failed test case per diagnostic (as Ruff's `junit`);
a run without diagnostics is one passing test case, so CI dashboards show the run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby


def render(diagnostics, context) -> str:
    root = ET.Element("testsuites", name="torchdet-lint", tests=str(len(diagnostics) or 1), failures=str(len(diagnostics)))
    root.set("errors", "0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="torchdet-lint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No errors found", classname="torchdet-lint")
    for path, group in groupby(diagnostics, key=lambda d: d.path):
        rows = list(group)
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(rows)), failures=str(len(rows)), errors="0")
        for d in rows:
            case = ET.SubElement(suite, "testcase", name=f"org.torchdet-lint.{d.code}", classname=path)
            case.set("line", str(d.line))
            case.set("column", str(d.column))
            if d.cell is not None:
                case.set("cell", str(d.cell))
            failure = ET.SubElement(case, "failure", message=d.message)
            where = f"cell {d.cell}, line {d.line}" if d.cell is not None else f"line {d.line}"
            failure.text = f"{where}, col {d.column}, {d.code} {d.message}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
