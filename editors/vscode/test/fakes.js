// Fake executables for the tests: shell scripts that answer as torchdet-lint
// (or a Python with or without it) would, so the real process code runs.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

function script(file, body) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}`, { mode: 0o755 });
  return file;
}

/**
 * torchdet-lint claiming `version`; `rule CODE` prints a title, `rules` a
 * one-row table; `server` exits at once, or with `hangingServer` runs until killed.
 */
function fakeTool(file, version, { hangingServer = false } = {}) {
  return script(
    file,
    [
      'case "$1" in',
      `  --version) echo "torchdet-lint ${version}" ;;`,
      `  rule) echo "# $2 documented by ${version}" ;;`,
      '  rules) echo "| TDL301 | \\`cudnn-benchmark-enabled\\` | yes | safe | benchmark |" ;;',
      ...(hangingServer ? ["  server) exec sleep 60 ;;"] : []),
      "  *) exit 2 ;;",
      "esac",
      "",
    ].join("\n")
  );
}

/** A Python whose `-m torchdet_lint --version` works only when `hasModule`. */
function fakePython(file, hasModule, version = "0.1.0") {
  const body = hasModule
    ? `if [ "$1 $2 $3" = "-m torchdet_lint --version" ]; then echo "torchdet-lint ${version}"; exit 0; fi\nexit 3\n`
    : 'echo "No module named torchdet_lint" >&2\nexit 1\n';
  return script(file, body);
}

module.exports = { fakePython, fakeTool, script };
