// extension.js against a fake editor (test/fake-vscode.js): which servers it
// starts for which files and notebooks, with which folder's settings, what its
// status item and notifications say, what its commands and fix-on-save do.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");

const manifest = require("../package.json");
const { Range, Uri, createEditor, fakeContext, loadExtension, notebookDocument, pythonDocument, selects } = require("./fake-vscode");
const { fakePython, fakeTool } = require("./fakes");

const posixOnly = { skip: process.platform === "win32" ? "fake executables are shell scripts" : false };

let root;
let python; // the selected environment: its torchdet-lint script is `script`
let script;
let alpha; // workspace folders (real directories: servers are spawned in them)
let beta;

async function activated(options) {
  const editor = createEditor({ interpreter: python, folders: [alpha], documents: [pythonDocument(path.join(alpha, "train.py"))], ...options });
  const extension = loadExtension(editor);
  await extension.activate(fakeContext());
  return { editor, extension };
}

/** The server argv the extension spawned for a client. */
function argv(client) {
  return client.process.spawnargs;
}

/** Resolves once `predicate()` holds (the extension starts servers in the background). */
async function until(predicate, what = "the condition") {
  for (const deadline = Date.now() + 10000; !predicate(); ) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const running = (editor) => editor.clients.filter((client) => client.running);

function restartCommand(editor) {
  return editor.commands.get("torchdet-lint.restart")();
}

const FIX_EDITS = [{ range: new Range(1, 33, 1, 37), newText: "False" }];

function fixAllAction(kind = "source.fixAll.torchdet-lint") {
  return { kind: { value: kind }, title: "torchdet-lint: Fix all safe fixes", edit: { get: () => FIX_EDITS } };
}

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "torchdet-extension-"));
  python = fakePython(path.join(root, "venv/bin/python"), true);
  script = fakeTool(path.join(root, "venv/bin/torchdet-lint"), "0.1.0");
  alpha = path.join(root, "alpha");
  beta = path.join(root, "beta");
  fs.mkdirSync(path.join(alpha, "nested"), { recursive: true });
  fs.mkdirSync(beta);
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

describe("activating the extension", posixOnly, () => {
  it("registers the commands package.json declares", async () => {
    const { editor } = await activated();
    const declared = manifest.contributes.commands.map((command) => command.command).sort();
    assert.deepEqual([...editor.commands.keys()].sort(), declared);
  });

  it("starts the server of the Python extension's selected environment with the settings' arguments", async () => {
    const { editor } = await activated({ settings: { profile: "strict", args: ["--verbose"] } });
    assert.equal(editor.errors.length, 0, editor.errors.join("\n"));
    const [client] = editor.clients;
    assert.equal(client.running, true);
    assert.deepEqual(argv(client), [script, "server", "--profile", "strict", "--verbose"]);
    assert.equal(client.clientOptions.workspaceFolder.uri.fsPath, alpha);
  });

  it("starts nothing until a Python file or notebook is open, then the server of its folder", async () => {
    const { editor } = await activated({ documents: [{ uri: Uri.file(path.join(alpha, "notes.md")), languageId: "markdown" }] });
    assert.equal(editor.clients.length, 0);
    editor.open(pythonDocument(path.join(alpha, "train.py")));
    await until(() => running(editor).length === 1, "the server");
    editor.open(pythonDocument(path.join(alpha, "model.py")));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(editor.clients.length, 1, "one server per folder, not per file");
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
    const { editor } = await activated();
    editor.settings.profile = "performance";
    const change = { affectsConfiguration: (section) => section === "torchdetLint.profile" };
    editor.listeners.configuration.forEach((listener) => listener(change));
    await restartCommand(editor); // queued after the restart the change started
    const [first, ...later] = editor.clients;
    assert.equal(first.stopped, true);
    assert.deepEqual(argv(later.at(-1)).slice(1), ["server", "--profile", "performance"]);
    assert.equal(later.at(-1).running, true);
  });

  it("still searches PATH when the Python extension cannot resolve the selected environment", async () => {
    const onPath = fakeTool(path.join(root, "path/torchdet-lint"), "0.1.0");
    const saved = process.env.PATH;
    process.env.PATH = path.dirname(onPath);
    try {
      const { editor } = await activated({ interpreter: undefined, brokenPythonApi: true });
      assert.deepEqual(editor.errors, []);
      assert.equal(argv(editor.clients[0])[0], onPath);
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
    await restartCommand(editor);
    assert.equal(editor.clients.length, 1);
    assert.equal(argv(editor.clients[0])[0], later);
  });

  it("restarts when another Python environment is selected", async () => {
    const { editor } = await activated();
    editor.listeners.environment.forEach((listener) => listener({}));
    await restartCommand(editor);
    assert.ok(editor.clients.length >= 2);
    assert.equal(editor.clients[0].stopped, true);
  });
});

describe("notebooks", posixOnly, () => {
  it("a notebook opened alone starts its folder's server, whose client takes the notebook's Python cells", async () => {
    const notebook = notebookDocument(path.join(alpha, "explore.ipynb"), 2);
    const { editor } = await activated({ documents: [] });
    editor.openNotebook(notebook);
    await until(() => running(editor).length === 1, "the server");
    assert.equal(editor.clients.length, 1);
    const { documentSelector, notebookDocumentOptions } = editor.clients[0].clientOptions;
    for (const cell of notebook.cells) {
      assert.ok(selects(documentSelector, cell, notebook), "the cells are synchronised as Python documents");
    }
    // A server that synchronises whole notebooks gets every cell of this one.
    assert.deepEqual(notebookDocumentOptions.filterCells(notebook, notebook.getCells()), notebook.getCells());
  });

  it("a window with no folder lints the cells of every Jupyter notebook", async () => {
    const notebook = notebookDocument(path.join(beta, "loose.ipynb"));
    const { editor } = await activated({ folders: [], documents: [], notebooks: [notebook] });
    assert.equal(editor.clients.length, 1);
    const { documentSelector } = editor.clients[0].clientOptions;
    assert.ok(documentSelector.some((filter) => filter.notebook === "jupyter-notebook" && filter.language === "python"));
    assert.ok(selects(documentSelector, notebook.cells[0], notebook));
    assert.ok(selects(documentSelector, pythonDocument("untitled:Untitled-1")));
  });

  it("each folder's server gets the notebooks of its folder only", async () => {
    const inAlpha = notebookDocument(path.join(alpha, "a.ipynb"));
    const inBeta = notebookDocument(path.join(beta, "b.ipynb"));
    const { editor } = await activated({ folders: [alpha, beta], documents: [], notebooks: [inAlpha, inBeta] });
    const [alphaClient, betaClient] = ["alpha", "beta"].map((name) => editor.clients.find((client) => client.clientOptions.workspaceFolder.name === name));
    assert.ok(selects(alphaClient.clientOptions.documentSelector, inAlpha.cells[0], inAlpha));
    assert.ok(!selects(alphaClient.clientOptions.documentSelector, inBeta.cells[0], inBeta));
    assert.ok(selects(betaClient.clientOptions.documentSelector, inBeta.cells[0], inBeta));
    assert.deepEqual(alphaClient.clientOptions.notebookDocumentOptions.filterCells(inBeta, inBeta.getCells()), []);
    assert.equal(betaClient.clientOptions.notebookDocumentOptions.filterCells(inBeta, inBeta.getCells()).length, 1);
  });

  it("starts nothing for a notebook of another kind", async () => {
    const { editor } = await activated({ documents: [], notebooks: [notebookDocument(path.join(alpha, "x.ipynb"), 1, "interactive-other")] });
    assert.equal(editor.clients.length, 0);
  });
});

describe("settings per workspace folder", posixOnly, () => {
  const other = () => fakeTool(path.join(root, "other/torchdet-lint"), "0.2.0");

  function twoFolders(extra = {}) {
    return activated({
      folders: [alpha, beta],
      documents: [pythonDocument(path.join(alpha, "train.py")), pythonDocument(path.join(beta, "eval.py"))],
      folderSettings: { [alpha]: { profile: "strict" }, [beta]: { path: [other()], args: ["--verbose"] } },
      ...extra,
    });
  }

  function clientOf(editor, name) {
    return editor.clients.filter((client) => client.clientOptions.workspaceFolder && client.clientOptions.workspaceFolder.name === name).at(-1);
  }

  it("starts one server per folder, each with its folder's settings, for its folder's files", async () => {
    const { editor } = await twoFolders();
    assert.deepEqual(editor.errors, []);
    assert.deepEqual(argv(clientOf(editor, "alpha")), [script, "server", "--profile", "strict"]);
    assert.deepEqual(argv(clientOf(editor, "beta")), [other(), "server", "--verbose"]);
    assert.deepEqual(editor.configurationScopes.map((scope) => scope && scope.fsPath).sort(), [alpha, beta]);
    const trainPy = pythonDocument(path.join(alpha, "train.py"));
    assert.ok(selects(clientOf(editor, "alpha").clientOptions.documentSelector, trainPy));
    assert.ok(!selects(clientOf(editor, "beta").clientOptions.documentSelector, trainPy));
    // Each server is told of its own folder only, so that it indexes that one.
    assert.deepEqual(clientOf(editor, "beta").initializeParams.workspaceFolders, [{ uri: Uri.file(beta).toString(), name: "beta" }]);
  });

  it("restarts only the server of the folder whose settings changed", async () => {
    const { editor } = await twoFolders();
    const [alphaBefore, betaBefore] = [clientOf(editor, "alpha"), clientOf(editor, "beta")];
    editor.folderSettings[beta] = { ...editor.folderSettings[beta], profile: "performance" };
    const change = { affectsConfiguration: (section, scope) => section === "torchdetLint.profile" && scope !== undefined && scope.fsPath === beta };
    editor.listeners.configuration.forEach((listener) => listener(change));
    await until(() => clientOf(editor, "beta") !== betaBefore && clientOf(editor, "beta").running, "beta's new server");
    assert.ok(betaBefore.stopped);
    assert.deepEqual(argv(clientOf(editor, "beta")).slice(1), ["server", "--profile", "performance", "--verbose"]);
    assert.equal(clientOf(editor, "alpha"), alphaBefore);
    assert.ok(alphaBefore.running);
  });

  it("gives a nested folder's files and untitled files to the server of the first (outer) folder", async () => {
    const nested = path.join(alpha, "nested");
    const { editor } = await activated({
      folders: [alpha, nested, beta],
      documents: [pythonDocument(path.join(nested, "deep.py")), pythonDocument("untitled:Untitled-1")],
    });
    assert.equal(editor.clients.length, 1);
    const { documentSelector, workspaceFolder } = editor.clients[0].clientOptions;
    assert.equal(workspaceFolder.uri.fsPath, alpha);
    assert.ok(selects(documentSelector, pythonDocument(path.join(nested, "deep.py"))));
    assert.ok(selects(documentSelector, pythonDocument("untitled:Untitled-1")));
  });

  it("lints a file outside every folder with the settings of no folder, in a server told of no folder", async () => {
    const outside = path.join(root, "outside");
    fs.mkdirSync(outside, { recursive: true });
    const first = pythonDocument(path.join(outside, "one.py"));
    const { editor } = await activated({ documents: [first], folderSettings: { [alpha]: { profile: "strict" } } });
    assert.equal(editor.clients.length, 1);
    const [loose] = editor.clients;
    assert.equal(loose.clientOptions.workspaceFolder, undefined);
    assert.deepEqual(argv(loose), [script, "server"]); // not alpha's strict profile
    assert.equal(loose.initializeParams.workspaceFolders, null);
    assert.equal(loose.initializeParams.rootUri, null);
    assert.ok(selects(loose.clientOptions.documentSelector, first));
    assert.ok(!selects(loose.clientOptions.documentSelector, pythonDocument(path.join(alpha, "train.py"))));
    // More of them at once: the loose server's client starts again, once, with all of them.
    const more = ["two [draft].py", "three.py"].map((name) => pythonDocument(path.join(outside, name)));
    more.forEach(editor.open);
    await until(() => editor.clients.length === 2 && editor.clients[1].running, "the loose server's new client");
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(editor.clients.length, 2);
    for (const document of [first, ...more]) {
      assert.ok(selects(editor.clients[1].clientOptions.documentSelector, document), document.uri.fsPath);
    }
    assert.ok(loose.stopped);
  });

  it("starts the servers again when the workspace folders change", async () => {
    const { editor } = await activated();
    editor.vscode.workspace.workspaceFolders = [beta, alpha].map((fsPath, index) => ({ uri: Uri.file(fsPath), name: path.basename(fsPath), index }));
    editor.listeners.folders.forEach((listener) => listener({ added: [], removed: [] }));
    await restartCommand(editor);
    assert.ok(editor.clients[0].stopped);
    assert.equal(editor.clients.at(-1).running, true);
    assert.equal(editor.clients.at(-1).clientOptions.workspaceFolder.uri.fsPath, alpha);
  });
});

describe("the status item", posixOnly, () => {
  it("shows the server's state and version for Python files and cells, and restarts it when clicked", async () => {
    const { editor } = await activated({ serverVersion: "0.1.0.dev3" });
    const status = editor.status();
    assert.deepEqual(
      status.selector.map((filter) => filter.scheme),
      ["file", "untitled", "vscode-notebook-cell"]
    );
    assert.equal(status.command.command, "torchdet-lint.restart");
    editor.focus(pythonDocument(path.join(alpha, "train.py")));
    assert.equal(status.text, "torchdet-lint 0.1.0.dev3"); // the version the server reports
    assert.match(status.detail, /running \(the selected Python environment\)/);
    assert.equal(status.severity, 0);
    assert.equal(status.busy, false);

    editor.clients[0].crash();
    assert.equal(status.text, "torchdet-lint: stopped");
    assert.equal(status.severity, 1);

    status.shown.length = 0;
    await editor.commands.get(status.command.command)();
    assert.ok(status.shown.some((shown) => shown.busy && shown.detail === "starting (the selected Python environment)"), JSON.stringify(status.shown));
    assert.equal(status.text, "torchdet-lint 0.1.0.dev3");
    assert.equal(editor.clients.at(-1).running, true);
  });

  it("follows the active file: each folder's server has its own state", async () => {
    const missing = path.join(root, "missing/torchdet-lint");
    const notebook = notebookDocument(path.join(alpha, "explore.ipynb"));
    const { editor } = await activated({
      folders: [alpha, beta],
      documents: [pythonDocument(path.join(beta, "eval.py"))],
      notebooks: [notebook],
      folderSettings: { [beta]: { path: [missing] } },
    });
    const status = editor.status();
    editor.focus(pythonDocument(path.join(beta, "eval.py")));
    assert.equal(status.text, "torchdet-lint: error");
    assert.equal(status.severity, 2);
    assert.match(status.detail, /none of the executables in torchdetLint\.path exists/);
    editor.focus(notebook.cells[0]); // a cell of a notebook in alpha
    assert.equal(status.text, "torchdet-lint 0.1.0");
    assert.equal(status.severity, 0);
  });
});

describe("stopping", posixOnly, () => {
  it("kills a server that does not exit when asked to", async () => {
    const hanging = fakeTool(path.join(root, "hanging/torchdet-lint"), "0.1.0", { hangingServer: true });
    const { editor, extension } = await activated({ settings: { path: [hanging] } });
    extension.timing.killAfterMs = 50;
    const server = editor.clients[0].process;
    const exited = new Promise((resolve) => server.once("exit", (code, signal) => resolve(signal)));
    await extension.deactivate();
    assert.equal(await exited, "SIGKILL");
  });
});

describe("fix all", posixOnly, () => {
  it("applies the server's source.fixAll.torchdet-lint edit to the active file", async () => {
    const { editor } = await activated({ codeActions: [fixAllAction("quickfix"), fixAllAction()] });
    editor.activeTextEditor = { document: pythonDocument(path.join(alpha, "train.py")) };
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
      const { editor } = await activated({ settings: { fixAll }, codeActions: [fixAllAction()] });
      let waited;
      const event = { document: pythonDocument(path.join(alpha, "train.py")), reason, waitUntil: (promise) => (waited = promise) };
      editor.listeners.willSave.forEach((listener) => listener(event));
      assert.deepEqual(waited === undefined ? undefined : await waited, expected, `fixAll=${fixAll} reason=${reason}`);
    }
  });
});

describe("rule documentation", posixOnly, () => {
  it("shows `torchdet-lint rule CODE` for the diagnostic under the cursor as a virtual document's preview", async () => {
    const { editor } = await activated();
    editor.activeTextEditor = { document: pythonDocument(path.join(alpha, "train.py")), selection: { active: { line: 1, character: 5 } } };
    editor.diagnostics = [
      { source: "Pylance", code: "reportMissingImports", range: new Range(1, 0, 1, 40) },
      { source: "torchdet-lint", code: "TDL301", range: new Range(1, 0, 1, 37) },
    ];
    await editor.commands.get("torchdet-lint.showRuleDocumentation")();
    assert.equal(editor.opened.length, 1);
    assert.match(editor.opened[0].uri, /^torchdet-lint-rule:\/TDL301\.md/);
    assert.equal(editor.opened[0].content, "# TDL301 documented by 0.1.0\n");
    const [command, uri] = editor.executed.at(-1);
    assert.equal(command, "markdown.showPreview");
    assert.equal(uri.scheme, "torchdet-lint-rule");
  });

  it("offers the rules to pick from when the cursor is on none", async () => {
    const { editor } = await activated();
    await editor.commands.get("torchdet-lint.showRuleDocumentation")();
    assert.equal(editor.opened[0].content, "# TDL301 documented by 0.1.0\n");
  });

  it("links each diagnostic to the virtual document of its folder's torchdet-lint, never to a file", async () => {
    const other = fakeTool(path.join(root, "docs-other/torchdet-lint"), "0.2.0");
    const { editor } = await activated({
      folders: [alpha, beta],
      documents: [pythonDocument(path.join(alpha, "train.py")), pythonDocument(path.join(beta, "eval.py"))],
      folderSettings: { [beta]: { path: [other] } },
    });
    const betaClient = editor.clients.find((client) => client.clientOptions.workspaceFolder.name === "beta");
    // The server is asked for these links...
    const template = betaClient.clientOptions.initializationOptions.ruleDocsUrl;
    assert.match(template, /^torchdet-lint-rule:\/\{code\}\.md\?/);
    // ...and a file:// link from a server that ignores the request is replaced; a web link is kept.
    const published = [
      { code: { value: "TDL301", target: Uri.parse("file:///home/me/.cache/torchdet-lint/0.1.0/rules/TDL301.md") } },
      { code: { value: "TDL101", target: Uri.parse("https://example.org/rules/TDL101") } },
      { code: "TDL000" },
    ];
    let delivered;
    betaClient.clientOptions.middleware.handleDiagnostics(Uri.file(path.join(beta, "eval.py")), published, (uri, diagnostics) => (delivered = diagnostics));
    assert.equal(delivered[0].code.target.scheme, "torchdet-lint-rule");
    assert.equal(delivered[0].code.target.toString(), template.replace("{code}", "TDL301"));
    assert.equal(delivered[1].code.target.toString(), "https://example.org/rules/TDL101");
    assert.equal(delivered[2].code, "TDL000");
    // Opening the link (what clicking it does) renders the rule with beta's torchdet-lint.
    const document = await editor.vscode.workspace.openTextDocument(delivered[0].code.target);
    assert.equal(document.getText(), "# TDL301 documented by 0.2.0\n");
  });
});
