// The script the .vsix ships: esbuild's bundle of the extension. It must hold
// everything but `vscode` (the .vsix has no node_modules), carry the licences
// of what it bundles, and activate as the sources do.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const { builtinModules } = require("node:module");
const os = require("node:os");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");

const { OUTFILE, build, bundledPackages } = require("../esbuild");
const manifest = require("../package.json");
const { createEditor, fakeContext, loadExtension } = require("./fake-vscode");

describe("the bundle", () => {
  let directory;
  let outfile;
  let metafile;

  before(async () => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), "torchdet-bundle-"));
    outfile = path.join(directory, "extension.js");
    metafile = await build({ outfile, minify: true });
  });
  after(() => fs.rmSync(directory, { recursive: true, force: true }));

  it("is the main script package.json names", () => {
    assert.equal(path.resolve(__dirname, "..", manifest.main), OUTFILE);
  });

  it("leaves out only `vscode` and Node.js's own modules", () => {
    const [output] = Object.values(metafile.outputs);
    const external = [...new Set(output.imports.filter((entry) => entry.external).map((entry) => entry.path))];
    const builtins = new Set(builtinModules);
    assert.deepEqual(external.filter((name) => name !== "vscode" && !builtins.has(name.replace(/^node:/, ""))), []);
    assert.ok(external.includes("vscode"));
    const packages = bundledPackages(metafile).map((directory) => path.basename(directory));
    for (const name of ["vscode-languageclient", "vscode-languageserver-protocol", "vscode-jsonrpc"]) {
      assert.ok(packages.includes(name), `${name} is bundled`);
    }
  });

  it("ends with the licence of every package it bundles", () => {
    const text = fs.readFileSync(outfile, "utf8");
    const notice = text.slice(text.lastIndexOf("\n/*\nThis file bundles"));
    for (const directory of bundledPackages(metafile)) {
      const { name, version } = JSON.parse(fs.readFileSync(path.join(__dirname, "..", directory, "package.json"), "utf8"));
      assert.ok(notice.includes(`\n${name} ${version}\n`), `${name} ${version}`);
    }
    assert.match(notice, /Permission is hereby granted/);
    assert.ok(notice.trimEnd().endsWith("*/") && notice.indexOf("*/") === notice.length - 3, "one comment");
  });

  it("activates against VS Code's API and registers the commands", async () => {
    const editor = createEditor();
    // The language client's classes extend these at load time; the sources' tests fake the client instead.
    editor.vscode = new Proxy(editor.vscode, { get: (target, key) => (key in target ? target[key] : /^[A-Z]/.test(String(key)) ? class {} : undefined) });
    const extension = loadExtension(editor, outfile);
    await extension.activate(fakeContext());
    assert.deepEqual([...editor.commands.keys()].sort(), manifest.contributes.commands.map((command) => command.command).sort());
    assert.equal(editor.statusItems.length, 1);
    await extension.deactivate();
  });
});
