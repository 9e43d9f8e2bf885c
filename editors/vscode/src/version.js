// The torchdet-lint version a found executable reports, and whether it is new
// enough for what this extension asks of it (`server --profile`).
"use strict";

// The first release whose server this extension can drive.
const MINIMUM_VERSION = "0.1.0";

/** "torchdet-lint 0.1.0\n" -> [0, 1, 0]; undefined when the output is not a version. */
function parseVersion(output) {
  const match = /torchdet-lint\s+(\d+)\.(\d+)(?:\.(\d+))?/.exec(output || "");
  if (!match) {
    return undefined;
  }
  return [Number(match[1]), Number(match[2]), Number(match[3] || 0)];
}

function isAtLeast(version, minimum = MINIMUM_VERSION) {
  const wanted = minimum.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if ((version[i] || 0) !== (wanted[i] || 0)) {
      return (version[i] || 0) > (wanted[i] || 0);
    }
  }
  return true;
}

module.exports = { MINIMUM_VERSION, parseVersion, isAtLeast };
