// The rule list for "Show Rule Documentation": parsed from `torchdet-lint rules`,
// the same Markdown table the README shows.
"use strict";

/** `| TDL101 | \`name\` | yes | safe | summary |` rows -> [{ code, name, summary }]. */
function parseRulesTable(markdown) {
  const rules = [];
  for (const line of String(markdown).split(/\r?\n/)) {
    const cells = line.split("|").map((cell) => cell.trim());
    // ["", code, name, default, fix, summary, ""]
    if (cells.length >= 7 && /^TDL\d{3}$/.test(cells[1])) {
      rules.push({ code: cells[1], name: cells[2].replace(/`/g, ""), summary: cells[5] });
    }
  }
  return rules;
}

module.exports = { parseRulesTable };
