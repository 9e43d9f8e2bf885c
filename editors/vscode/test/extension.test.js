// extension.js against a fake editor (test/fake-vscode.js): what it starts,
// what it tells the user, what its commands and fix-on-save do.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");

const manifest = require("../package.json");
const { Range, createEditor, fakeContext, loadExtension } = require("./fake-vscode");
const { fakePython, fakeTool } = require("./fakes");

const posixOnly = { skip: process.platform === "win32" ? "fake executables are shell scripts" : false };

let root;
let python;
let script;

async function activated(options) {
  const editor = createEditor(options);
  const extension = loadExtension(editor);
  await extension.activate(fakeContext());
  return { editor, extension };
}

function pythonDocument(text = "import torch\n") {
  return { uri: { fsPath: "/work/project/train.py", toString: () => "file:///work/project/train.py" }, languageId: "python", lineCount: text.split("\n").length };
}

const FIX_EDITS = [{ range: new Range(1, 33, 1, 37), newText: "False" }];

function fixAllAction(kind = "source.fixAll.torchdet-lint") {
  return { kind: { value: kind }, title: "torchdet-lint: Fix all safe fixes", edit: { get: () => FIX_EDITS } };
}

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "torchdet-extension-"));
  python = fakePython(path.join(root, "venv/bin/python"), true);
  script = fakeTool(path.join(root, "venv/bin/torchdet-lint"), "0.1.0");
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

describe("activating the extension", posixOnly, () => {
  it("registers the commands package.json declares", async () => {
    const { editor } = await activated({ interpreter: python });
    const declared = manifest.contributes.commands.map((command) => command.command).sort();
    assert.deepEqual([...editor.commands.keys()].sort(), declared);
  });

  it("starts the server of the Python extension's selected environment with the settings' arguments", async () => {
    const { editor } = await activated({ interpreter: python, settings: { profile: "strict", args: ["--verbose"] } });
    assert.equal(editor.errors.length, 0, editor.errors.join("\n"));
    const [client] = editor.clients;
    assert.equal(client.running, true);
    assert.deepEqual(client.serverOptions, { command: script, args: ["server", "--profile", "strict", "--verbose"], options: { cwd: "/work/project" } });
    assert.deepEqual(client.clientOptions.documentSelector.map((s) => s.language), ["python", "python"]);
  });

  it("tells the user how to install torchdet-lint when there is none, and starts nothing", async () => {
    const bare = fakePython(path.join(root, "bare/bin/python"), false);
    const saved = process.env.PATH;
    process.env.PATH = "/nowhere";
    try {
      const { editor } = await activated({ interpreter: bare });
      assert.equal(editor.clients.length, 0);
      assert.equal(editor.errors.length, 1);
      assert.match(editor.errors[0], /torchdet-lint was not found/);
      assert.match(editor.errors[0], /pip install '\.\[server\]'/);
    } finally {
      process.env.PATH = saved;
    }
  });

  it("tells the user when the torchdet-lint found is too old", async () => {
    const old = fakeTool(path.join(root, "old/torchdet-lint"), "0.0.1");
    const { editor } = await activated({ settings: { path: [old] } });
    assert.equal(editor.clients.length, 0);
    assert.match(editor.errors[0], /torchdet-lint 0\.0\.1 .* is older than 0\.1\.0/);
  });

  it("restarts the server with the new command line when a setting changes", async () => {
    const { editor } = await activated({ interpreter: python });
    editor.settings.profile = "performance";
    const change = { affectsConfiguration: (section) => section === "torchdetLint.profile" };
    editor.listeners.configuration.forEach((listener) => listener(change));
    await editor.commands.get("torchdet-lint.restart")(); // queued after the restart the change started
    const [first, ...later] = editor.clients;
    assert.equal(first.stopped, true);
    assert.deepEqual(later.at(-1).serverOptions.args, ["server", "--profile", "performance"]);
    assert.equal(later.at(-1).running, true);
  });

  it("still searches PATH when the Python extension cannot resolve the selected environment", async () => {
    const onPath = fakeTool(path.join(root, "path/torchdet-lint"), "0.1.0");
    const saved = process.env.PATH;
    process.env.PATH = path.dirname(onPath);
    try {
      const { editor } = await activated({ brokenPythonApi: true });
      assert.deepEqual(editor.errors, []);
      assert.equal(editor.clients[0].serverOptions.command, onPath);
    } finally {
      process.env.PATH = saved;
    }
  });

  it("restarts after a failed start once torchdet-lint is installed", async () => {
    const later = path.join(root, "later/torchdet-lint");
    const { editor } = await activated({ settings: { path: [later] } });
    assert.equal(editor.clients.length, 0);
    assert.match(editor.errors[0], /none of the executables in torchdetLint\.path exists/);
    fakeTool(later, "0.1.0"); // the user installs it, then runs "Restart Server"
    await editor.commands.get("torchdet-lint.restart")();
    assert.equal(editor.clients.length, 1);
    assert.equal(editor.clients[0].serverOptions.command, later);
  });

  it("restarts when another Python environment is selected", async () => {
    const { editor } = await activated({ interpreter: python });
    editor.listeners.environment.forEach((listener) => listener({}));
    await editor.commands.get("torchdet-lint.restart")();
    assert.ok(editor.clients.length >= 2);
    assert.equal(editor.clients[0].stopped, true);
  });
});

describe("fix all", posixOnly, () => {
  it("applies the server's source.fixAll.torchdet-lint edit to the active file", async () => {
    const { editor } = await activated({ interpreter: python, codeActions: [fixAllAction("quickfix"), fixAllAction()] });
    editor.activeTextEditor = { document: pythonDocument() };
    assert.equal(await editor.commands.get("torchdet-lint.fixAll")(), true);
    const [request] = editor.executed.filter(([id]) => id === "vscode.executeCodeActionProvider");
    assert.equal(request[3], "source.fixAll.torchdet-lint");
    assert.equal(editor.applied.length, 1);
    assert.deepEqual(editor.applied[0].get(), FIX_EDITS);
  });

  it("on save when torchdetLint.fixAll is on, not on auto-save after a delay, never when it is off", async () => {
    for (const [fixAll, reason, expected] of [
      [true, 1, FIX_EDITS],
      [true, 2, undefined],
      [false, 1, undefined],
    ]) {
      const { editor } = await activated({ interpreter: python, settings: { fixAll }, codeActions: [fixAllAction()] });
      let waited;
      const event = { document: pythonDocument(), reason, waitUntil: (promise) => (waited = promise) };
      editor.listeners.willSave.forEach((listener) => listener(event));
      assert.deepEqual(waited === undefined ? undefined : await waited, expected, `fixAll=${fixAll} reason=${reason}`);
    }
  });
});

describe("rule documentation", posixOnly, () => {
  it("shows `torchdet-lint rule CODE` for the diagnostic under the cursor as a Markdown preview", async () => {
    const { editor } = await activated({ interpreter: python });
    editor.activeTextEditor = { document: pythonDocument(), selection: { active: { line: 1, character: 5 } } };
    editor.diagnostics = [
      { source: "Pylance", code: "reportMissingImports", range: new Range(1, 0, 1, 40) },
      { source: "torchdet-lint", code: "TDL301", range: new Range(1, 0, 1, 37) },
    ];
    await editor.commands.get("torchdet-lint.showRuleDocumentation")();
    assert.deepEqual(editor.opened, [{ language: "markdown", content: "# TDL301 documented\n" }]);
    assert.equal(editor.executed.at(-1)[0], "markdown.showPreview");
  });

  it("offers the rules to pick from when the cursor is on none", async () => {
    const { editor } = await activated({ interpreter: python });
    await editor.commands.get("torchdet-lint.showRuleDocumentation")();
    assert.deepEqual(editor.opened, [{ language: "markdown", content: "# TDL301 documented\n" }]);
  });
});
