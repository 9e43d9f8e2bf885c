// The VS Code face of `torchdet-lint server`: finds the executable (settings,
// selected Python environment, PATH), starts the language client on it, and
// adds the commands and fix-on-save. Diagnostics, quick fixes and hover come
// from the server itself.
"use strict";

const childProcess = require("child_process");
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

const { findServer, serverCommand } = require("./resolve");
const { parseRulesTable } = require("./rules");
const { readSettings } = require("./settings");

const FIX_ALL_KIND = "source.fixAll.torchdet-lint";
const SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
];
const COMMANDS = {
  restart: "torchdet-lint.restart",
  fixAll: "torchdet-lint.fixAll",
  showRuleDocumentation: "torchdet-lint.showRuleDocumentation",
};

let output;
let client;
let found; // the torchdet-lint in use: { command, prefix, version, source }
let starting = Promise.resolve();

function workspaceFolder() {
  const folders = vscode.workspace.workspaceFolders;
  return folders && folders.length ? folders[0] : undefined;
}

/** The Python extension's API, when it is installed (it is optional). */
async function pythonApi() {
  const extension = vscode.extensions.getExtension("ms-python.python");
  if (!extension) {
    return undefined;
  }
  try {
    if (!extension.isActive) {
      await extension.activate();
    }
    return extension.exports && extension.exports.environments ? extension.exports : undefined;
  } catch (error) {
    output.appendLine(`The Python extension's API is not available: ${error}`);
    return undefined;
  }
}

/** The interpreter selected in the Python extension for a folder, if any. */
async function selectedInterpreter(folder) {
  const api = await pythonApi();
  if (!api) {
    return undefined;
  }
  try {
    const environmentPath = api.environments.getActiveEnvironmentPath(folder ? folder.uri : undefined);
    const environment = await api.environments.resolveEnvironment(environmentPath);
    const executable = environment && environment.executable && environment.executable.uri;
    return executable ? executable.fsPath : undefined;
  } catch (error) {
    // A broken environment must not keep the server from starting: PATH is still searched.
    output.appendLine(`The selected Python environment could not be resolved: ${error}`);
    return undefined;
  }
}

async function notify(message) {
  const choice = await vscode.window.showErrorMessage(message, "Open Settings", "Show Output");
  if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "torchdetLint");
  } else if (choice === "Show Output") {
    output.show();
  }
}

async function start() {
  const folder = workspaceFolder();
  const settings = readSettings(vscode.workspace.getConfiguration("torchdetLint", folder ? folder.uri : undefined));
  const result = await findServer({
    settings,
    workspaceFolder: folder ? folder.uri.fsPath : undefined,
    selectedInterpreter: await selectedInterpreter(folder),
  });
  if (!result.ok) {
    found = undefined;
    output.appendLine(result.message);
    void notify(result.message);
    return;
  }
  found = result;
  const { command, args } = serverCommand(result, settings);
  output.appendLine(`torchdet-lint ${result.version}, from ${result.source}: ${[command, ...args].join(" ")}`);
  client = new LanguageClient(
    "torchdet-lint",
    "torchdet-lint",
    { command, args, options: { cwd: folder ? folder.uri.fsPath : undefined } },
    { documentSelector: SELECTOR, outputChannel: output }
  );
  try {
    await client.start();
  } catch (error) {
    // The server's standard error (e.g. "needs pygls") is in the output channel.
    void notify(`torchdet-lint server did not start (${error && error.message ? error.message : error}); its log is in Output > torchdet-lint.`);
  }
}

async function stop() {
  const running = client;
  client = undefined;
  if (running) {
    try {
      await running.stop();
    } catch (error) {
      output.appendLine(`Stopping the server: ${error}`);
    }
  }
}

function restart() {
  // Serialised: a settings change during a start waits for it; a failed start
  // must not block the next restart.
  starting = starting
    .catch(() => undefined)
    .then(stop)
    .then(start)
    .catch((error) => {
      output.appendLine(`Starting torchdet-lint failed: ${error && error.stack ? error.stack : error}`);
      void notify(`torchdet-lint could not be started: ${error && error.message ? error.message : error}`);
    });
  return starting;
}

/** The WorkspaceEdit of the server's fix-all action for a document, if it has one. */
async function fixAllEdit(document) {
  const whole = new vscode.Range(0, 0, document.lineCount, 0);
  const actions = (await vscode.commands.executeCommand("vscode.executeCodeActionProvider", document.uri, whole, FIX_ALL_KIND)) || [];
  const action = actions.find((a) => a.kind && a.kind.value === FIX_ALL_KIND && a.edit);
  return action ? action.edit : undefined;
}

async function fixAll() {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return false;
  }
  const edit = await fixAllEdit(editor.document);
  if (!edit) {
    vscode.window.setStatusBarMessage("torchdet-lint: nothing to fix", 3000);
    return false;
  }
  return vscode.workspace.applyEdit(edit);
}

function onWillSave(event) {
  const document = event.document;
  if (!client || document.languageId !== "python") {
    return;
  }
  // Auto-save after a delay happens while typing: moving the text under the cursor then would surprise.
  if (event.reason === vscode.TextDocumentSaveReason.AfterDelay) {
    return;
  }
  const settings = readSettings(vscode.workspace.getConfiguration("torchdetLint", document.uri));
  if (!settings.fixAll) {
    return;
  }
  event.waitUntil(fixAllEdit(document).then((edit) => (edit ? edit.get(document.uri) : [])));
}

/** Run the found torchdet-lint with some arguments: its standard output. */
function runTool(args) {
  return new Promise((resolve, reject) => {
    if (!found) {
      reject(new Error("torchdet-lint was not found (see the notification)"));
      return;
    }
    childProcess.execFile(found.command, [...found.prefix, ...args], { timeout: 30000 }, (error, stdout, stderr) =>
      error ? reject(new Error(String(stderr).trim() || error.message)) : resolve(String(stdout))
    );
  });
}

/** The code of a torchdet-lint diagnostic under the cursor. */
function codeAtCursor() {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return undefined;
  }
  const here = editor.selection.active;
  const diagnostic = vscode.languages
    .getDiagnostics(editor.document.uri)
    .find((d) => d.source === "torchdet-lint" && d.range.contains(here));
  if (!diagnostic) {
    return undefined;
  }
  return typeof diagnostic.code === "object" ? String(diagnostic.code.value) : String(diagnostic.code);
}

async function showRuleDocumentation(code) {
  try {
    let wanted = typeof code === "string" ? code : codeAtCursor();
    if (!wanted) {
      const rules = parseRulesTable(await runTool(["rules"]));
      const picked = await vscode.window.showQuickPick(
        rules.map((rule) => ({ label: rule.code, description: rule.name, detail: rule.summary })),
        { placeHolder: "Which rule?", matchOnDescription: true, matchOnDetail: true }
      );
      wanted = picked && picked.label;
    }
    if (!wanted) {
      return;
    }
    const document = await vscode.workspace.openTextDocument({ language: "markdown", content: await runTool(["rule", wanted]) });
    await vscode.commands.executeCommand("markdown.showPreview", document.uri);
  } catch (error) {
    void vscode.window.showErrorMessage(`torchdet-lint: ${error.message}`);
  }
}

async function activate(context) {
  output = vscode.window.createOutputChannel("torchdet-lint");
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand(COMMANDS.restart, restart),
    vscode.commands.registerCommand(COMMANDS.fixAll, fixAll),
    vscode.commands.registerCommand(COMMANDS.showRuleDocumentation, showRuleDocumentation),
    vscode.workspace.onWillSaveTextDocument(onWillSave),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // fixAll is read at each save; everything else changes the server's command line.
      const affected = ["path", "interpreter", "args", "profile"].some((key) => event.affectsConfiguration(`torchdetLint.${key}`));
      if (affected) {
        void restart();
      }
    })
  );
  const api = await pythonApi();
  if (api && api.environments.onDidChangeActiveEnvironmentPath) {
    context.subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => void restart()));
  }
  await restart();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, COMMANDS, FIX_ALL_KIND };
