// The command line the extension builds starts a real `torchdet-lint server`
// that answers over vscode-languageclient's own protocol library: diagnostics
// on open, and the fix-all action the "Fix All" command and fix-on-save apply.
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
const { DEFAULTS } = require("../src/settings");

const PYTHON = process.env.TORCHDET_LINT_PYTHON;
const HAZARD = "torch.backends.cudnn.benchmark = True";
const TIMEOUT_MS = 60000;

it("starts the found server, gets its diagnostics and applies its fix-all", { skip: PYTHON ? false : "TORCHDET_LINT_PYTHON is not set", timeout: TIMEOUT_MS }, async () => {
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
  try {
    const rootUri = pathToFileURL(project).href;
    const result = await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri,
      workspaceFolders: [{ uri: rootUri, name: "project" }],
      capabilities: {},
    });
    assert.ok(result.capabilities.codeActionProvider.codeActionKinds.includes("source.fixAll.torchdet-lint"));
    connection.sendNotification("initialized", {});

    const uri = pathToFileURL(path.join(project, "train.py")).href;
    const text = `import torch\n${HAZARD}\n`;
    connection.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text } });
    while (!published.some((p) => p.uri === uri && p.diagnostics.length > 0)) {
      await new Promise((resolve) => (notify = resolve));
    }
    const [diagnostic] = published.find((p) => p.uri === uri && p.diagnostics.length > 0).diagnostics;
    assert.equal(diagnostic.code, "TDL301");
    assert.deepEqual(diagnostic.range, { start: { line: 1, character: 0 }, end: { line: 1, character: HAZARD.length } });

    const actions = await connection.sendRequest("textDocument/codeAction", {
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

    await connection.sendRequest("shutdown");
    await connection.sendNotification("exit").catch(() => {});
    // Dispose only once the server is gone, so that no write races its closing stream.
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10000))]);
  } finally {
    connection.dispose();
    server.kill();
    fs.rmSync(project, { recursive: true, force: true });
  }
});
