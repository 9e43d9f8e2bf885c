// The extension's settings (`torchdetLint.*`, named as in Ruff's extension),
// read from a VS Code configuration section and checked, so that a wrong type
// in settings.json gives the default rather than a crash.
"use strict";

const PROFILES = ["reproducible", "strict", "performance"];

// Every key, with its default: package.json declares the same (a test checks).
const DEFAULTS = Object.freeze({
  path: [],
  interpreter: [],
  args: [],
  profile: "",
  fixAll: false,
});

function stringList(value) {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string" && item.trim() !== "") : [];
}

/** Settings from a configuration section (anything with `get(key)`, as `vscode.workspace.getConfiguration("torchdetLint")`). */
function readSettings(configuration) {
  const profile = configuration.get("profile");
  return {
    path: stringList(configuration.get("path")),
    interpreter: stringList(configuration.get("interpreter")),
    args: stringList(configuration.get("args")),
    profile: PROFILES.includes(profile) ? profile : DEFAULTS.profile,
    fixAll: configuration.get("fixAll") === true,
  };
}

module.exports = { DEFAULTS, PROFILES, readSettings };
