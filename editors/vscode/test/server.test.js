// The command line the extension builds starts a real `torchdet-lint server`
// that answers over vscode-languageclient's own protocol library: diagnostics
// on open, linked to the rule's virtual document; the fix-all action the "Fix
// All" command and fix-on-save apply; and the Python cells of a notebook, sent
// as the language client sends them.
// Needs a Python with torchdet-lint: TORCHDET_LINT_PYTHON (the pytest run sets it).
"use strict";

const assert = require("node:assert/strict");
const childProcess = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const { it } = require("node:test");

const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require("vscode-languageserver-protocol/node");

const { findServer, serverCommand } = require("../src/resolve");
const ruleDocs = require("../src/ruleDocs");
const { NOTEBOOK_TYPE } = require("../src/scopes");
const { DEFAULTS } = require("../src/settings");

const PYTHON = process.env.TORCHDET_LINT_PYTHON;
const HAZARD = "torch.backends.cudnn.benchmark = True";
const TIMEOUT_MS = 60000;
const needsServer = { skip: PYTHON ? false : "TORCHDET_LINT_PYTHON is not set", timeout: TIMEOUT_MS };

/** A started server for a fresh project folder, initialised as the extension's client does. */
async function session() {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), "torchdet-server-"));
  const found = await findServer({ settings: DEFAULTS, selectedInterpreter: PYTHON, workspaceFolder: project });
  assert.equal(found.ok, true, found.message);
  const { command, args } = serverCommand(found, { ...DEFAULTS, profile: "strict" });
  const server = childProcess.spawn(command, args, { cwd: project, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => server.once("exit", resolve));
  // The server closes its end after `exit`: a write still queued then must not outlive the test.
  server.stdin.on("error", () => {});
  const connection = createMessageConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  const published = [];
  let notify = () => {};
  connection.onNotification("textDocument/publishDiagnostics", (params) => {
    published.push(params);
    notify();
  });
  connection.listen();
  const rootUri = pathToFileURL(project).href;
  const key = rootUri; // the extension's key for this folder's server
  const result = await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri,
    workspaceFolders: [{ uri: rootUri, name: "project" }],
    capabilities: { notebookDocument: { synchronization: { dynamicRegistration: false, executionSummarySupport: false } } },
    initializationOptions: { ruleDocsUrl: ruleDocs.ruleDocsUrl(key) },
  });
  connection.sendNotification("initialized", {});
  return {
    project,
    key,
    connection,
    capabilities: result.capabilities,
    /** The first non-empty diagnostics published for `uri`. */
    async diagnostics(uri) {
      while (!published.some((p) => p.uri === uri && p.diagnostics.length > 0)) {
        await new Promise((resolve) => (notify = resolve));
      }
      return published.find((p) => p.uri === uri && p.diagnostics.length > 0).diagnostics;
    },
    async close() {
      try {
        await connection.sendRequest("shutdown");
        await connection.sendNotification("exit").catch(() => {});
        // Dispose only once the server is gone, so that no write races its closing stream.
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10000).unref())]);
      } finally {
        connection.dispose();
        server.kill();
        fs.rmSync(project, { recursive: true, force: true });
      }
    },
  };
}

it("starts the found server, gets its diagnostics and applies its fix-all", needsServer, async () => {
  const lsp = await session();
  try {
    assert.ok(lsp.capabilities.codeActionProvider.codeActionKinds.includes("source.fixAll.torchdet-lint"));
    const uri = pathToFileURL(path.join(lsp.project, "train.py")).href;
    const text = `import torch\n${HAZARD}\n`;
    lsp.connection.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text } });
    const [diagnostic] = await lsp.diagnostics(uri);
    assert.equal(diagnostic.code, "TDL301");
    assert.deepEqual(diagnostic.range, { start: { line: 1, character: 0 }, end: { line: 1, character: HAZARD.length } });
    // The documentation link is the virtual document the extension serves, not a file of the server's machine.
    assert.equal(diagnostic.codeDescription.href, ruleDocs.ruleUri("TDL301", lsp.key));

    const actions = await lsp.connection.sendRequest("textDocument/codeAction", {
      textDocument: { uri },
      range: { start: { line: 0, character: 0 }, end: { line: 2, character: 0 } },
      context: { diagnostics: [], only: ["source.fixAll.torchdet-lint"] },
    });
    assert.deepEqual(actions.map((a) => a.kind), ["source.fixAll.torchdet-lint"]);
    const [edit] = actions[0].edit.changes[uri];
    const lines = text.split("\n");
    lines[edit.range.start.line] =
      lines[edit.range.start.line].slice(0, edit.range.start.character) + edit.newText + lines[edit.range.end.line].slice(edit.range.end.character);
    assert.equal(lines.join("\n"), `import torch\n${HAZARD.replace("True", "False")}\n`);
  } finally {
    await lsp.close();
  }
});

it("lints the Python cells of a notebook as the language client sends them", needsServer, async () => {
  const lsp = await session();
  try {
    const notebookUri = pathToFileURL(path.join(lsp.project, "explore.ipynb")).href;
    const cell = (index) => `vscode-notebook-cell:${new URL(notebookUri).pathname}#W${index}sZmlsZQ%3D%3D`;
    const cells = [
      { uri: cell(0), languageId: "python", version: 1, text: `import torch\n${HAZARD}\n` },
      { uri: cell(1), languageId: "python", version: 1, text: "steps = 10\n" },
    ];
    const sync = lsp.capabilities.notebookDocumentSync;
    if (sync) {
      // A server that synchronises notebooks gets the whole notebook, if its selector takes ours.
      const takes = (sync.notebookSelector || []).some((entry) => {
        const notebook = typeof entry.notebook === "string" ? { notebookType: entry.notebook } : entry.notebook || {};
        const typeMatches = !notebook.notebookType || notebook.notebookType === NOTEBOOK_TYPE || notebook.notebookType === "*";
        return typeMatches && (!entry.cells || entry.cells.some((c) => c.language === "python" || c.language === "*"));
      });
      assert.ok(takes, JSON.stringify(sync.notebookSelector));
      lsp.connection.sendNotification("notebookDocument/didOpen", {
        notebookDocument: { uri: notebookUri, notebookType: NOTEBOOK_TYPE, version: 1, cells: cells.map((c) => ({ kind: 2, document: c.uri })) },
        cellTextDocuments: cells,
      });
    } else {
      // Otherwise the client opens each Python cell as a text document of its own.
      for (const textDocument of cells) {
        lsp.connection.sendNotification("textDocument/didOpen", { textDocument });
      }
    }
    const [diagnostic] = await lsp.diagnostics(cells[0].uri);
    assert.equal(diagnostic.code, "TDL301");
    assert.deepEqual(diagnostic.range, { start: { line: 1, character: 0 }, end: { line: 1, character: HAZARD.length } });
  } finally {
    await lsp.close();
  }
});
