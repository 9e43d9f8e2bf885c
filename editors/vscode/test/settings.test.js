// The settings as the extension reads them, and as package.json declares them to VS Code.
"use strict";

const assert = require("node:assert/strict");
const { describe, it } = require("node:test");

const manifest = require("../package.json");
const { parseRulesTable } = require("../src/rules");
const { DEFAULTS, PROFILES, readSettings } = require("../src/settings");

function configuration(values) {
  return { get: (key) => values[key] };
}

describe("reading the settings", () => {
  it("keeps well-typed values", () => {
    const values = { path: ["/a/torchdet-lint"], interpreter: ["/env/bin/python"], args: ["--verbose"], profile: "performance", fixAll: true };
    assert.deepEqual(readSettings(configuration(values)), values);
  });

  it("falls back to the defaults for missing or wrongly typed values", () => {
    assert.deepEqual(readSettings(configuration({})), DEFAULTS);
    const wrong = { path: "/a/torchdet-lint", interpreter: [3, "", "/py"], args: null, profile: "fastest", fixAll: "yes" };
    assert.deepEqual(readSettings(configuration(wrong)), { ...DEFAULTS, interpreter: ["/py"] });
  });
});

describe("package.json", () => {
  const properties = manifest.contributes.configuration.properties;

  it("declares exactly the settings the extension reads, with the same defaults", () => {
    assert.deepEqual(Object.keys(properties).sort(), Object.keys(DEFAULTS).map((key) => `torchdetLint.${key}`).sort());
    for (const [key, value] of Object.entries(DEFAULTS)) {
      assert.deepEqual(properties[`torchdetLint.${key}`].default, value, key);
    }
    assert.deepEqual(properties["torchdetLint.profile"].enum, ["", ...PROFILES]);
  });

  it("asks for a VS Code that its language client supports", () => {
    const client = require("vscode-languageclient/package.json");
    assert.equal(manifest.engines.vscode, client.engines.vscode);
  });

  it("starts on Python files and Jupyter notebooks", () => {
    assert.deepEqual(manifest.activationEvents, ["onLanguage:python", "onNotebook:jupyter-notebook"]);
  });

  it("has no run-time dependency: the language client is bundled into the main script", () => {
    assert.equal(manifest.dependencies, undefined);
    assert.ok(manifest.devDependencies["vscode-languageclient"]);
    assert.equal(manifest.scripts["vscode:prepublish"], "node esbuild.js --minify");
  });
});

describe("the rule list", () => {
  it("is read from `torchdet-lint rules`", () => {
    const table = [
      "| Code | Name | Default | Fix | What it finds |",
      "|---|---|---|---|---|",
      "| TDL001 | `unseeded-torch` | yes | unsafe | an entry point never seeds torch |",
      "| TDL301 | `cudnn-benchmark-enabled` | yes | safe | `cudnn.benchmark = True` picks by timing |",
    ].join("\n");
    assert.deepEqual(parseRulesTable(table), [
      { code: "TDL001", name: "unseeded-torch", summary: "an entry point never seeds torch" },
      { code: "TDL301", name: "cudnn-benchmark-enabled", summary: "`cudnn.benchmark = True` picks by timing" },
    ]);
  });
});
