// The VS Code face of `torchdet-lint server`. For each workspace folder with an
// open Python file or notebook it finds the executable (that folder's
// settings, its selected Python environment, PATH) and starts a language
// client on it; a language status item shows the state of the active file's
// server. It adds the commands, fix-on-save, and the rule documentation as a
// virtual document. Diagnostics, quick fixes and hover come from the server.
"use strict";

const childProcess = require("child_process");
const vscode = require("vscode");
const { LanguageClient, State } = require("vscode-languageclient/node");

const { findServer, serverCommand } = require("./resolve");
const ruleDocs = require("./ruleDocs");
const { parseRulesTable } = require("./rules");
const scopes = require("./scopes");
const { readSettings } = require("./settings");
const { describeStatus } = require("./status");

const FIX_ALL_KIND = "source.fixAll.torchdet-lint";
const COMMANDS = {
  restart: "torchdet-lint.restart",
  fixAll: "torchdet-lint.fixAll",
  showRuleDocumentation: "torchdet-lint.showRuleDocumentation",
};
const STATUS_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
  { scheme: scopes.CELL_SCHEME, language: "python" },
];
// The settings that are part of the server's command line (fixAll is read at each save).
const RESTART_KEYS = ["path", "interpreter", "args", "profile"];
// A server still alive this long after it was asked to stop is killed. The
// language client's own fallback runs a script that lies beside its sources,
// which the bundle does not have.
const timing = { killAfterMs: 3000 };

let output;
let status;
const servers = new Map(); // scopes.serverKey -> Server
const notified = new Set(); // messages shown since the last "Restart Server"

/** One server: the folder it lints (its key), its client and process, and its state for the status item. */
class Server {
  constructor(key) {
    this.key = key;
    this.state = "stopped"; // one of status.STATES
    this.message = undefined;
    this.client = undefined;
    this.process = undefined;
    this.found = undefined; // the torchdet-lint in use: { command, prefix, version, source }
    this.version = undefined;
    this.source = undefined;
    this.looseFiles = []; // the loose server's files, when folders are open
    this.queue = Promise.resolve(); // starts and stops, one after the other
    this.restartPending = false;
  }

  get folder() {
    return this.key === scopes.LOOSE ? undefined : scopes.folderOf(this.key, vscode.workspace.workspaceFolders);
  }
}

/** The client of the files outside every folder: its server is told of no folder, so that it indexes none of them. */
class LooseClient extends LanguageClient {
  fillInitializeParams(params) {
    super.fillInitializeParams(params);
    params.workspaceFolders = null;
    params.rootPath = null;
    params.rootUri = null;
  }
}

function errorMessage(error) {
  return error && error.message ? error.message : String(error);
}

function anyFolder() {
  return scopes.serverFolders(vscode.workspace.workspaceFolders).length > 0;
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
  // Several folders without torchdet-lint say the same thing: once is enough.
  if (notified.has(message)) {
    return;
  }
  notified.add(message);
  const choice = await vscode.window.showErrorMessage(message, "Open Settings", "Show Output");
  if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "torchdetLint");
  } else if (choice === "Show Output") {
    output.show();
  }
}

// -- the status item -------------------------------------------------------------------

function notebookOf(document) {
  const uri = document.uri.toString();
  return (vscode.workspace.notebookDocuments || []).find((notebook) => notebook.getCells().some((cell) => cell.document.uri.toString() === uri));
}

/** The URI that decides a document's server: a notebook cell's notebook, else the document itself. */
function ownerUri(document) {
  if (document.uri.scheme !== scopes.CELL_SCHEME) {
    return document.uri;
  }
  const notebook = notebookOf(document);
  return notebook ? notebook.uri : undefined;
}

function serverOf(uri) {
  const key = uri ? scopes.serverKey(uri, vscode.workspace.workspaceFolders) : undefined;
  return key === undefined ? undefined : servers.get(key);
}

function activeServer() {
  const editor = vscode.window.activeTextEditor;
  return editor ? serverOf(ownerUri(editor.document)) : undefined;
}

function updateStatus() {
  if (!status) {
    return;
  }
  const shown = describeStatus(activeServer());
  const severities = {
    information: vscode.LanguageStatusSeverity.Information,
    warning: vscode.LanguageStatusSeverity.Warning,
    error: vscode.LanguageStatusSeverity.Error,
  };
  status.text = shown.text;
  status.detail = shown.detail;
  status.busy = shown.busy;
  status.severity = severities[shown.severity];
}

function setState(server, state, message) {
  server.state = state;
  server.message = message;
  updateStatus();
}

// -- starting and stopping -------------------------------------------------------------

/** Server options that spawn the server here, so that one that will not exit can be killed (see `timing`). */
function spawner(server, command, args, cwd) {
  return () =>
    new Promise((resolve, reject) => {
      const spawned = childProcess.spawn(command, args, { cwd, env: process.env, windowsHide: true });
      spawned.once("error", reject);
      spawned.once("spawn", () => {
        spawned.on("error", (error) => output.appendLine(`torchdet-lint server: ${error}`));
        server.process = spawned;
        resolve(spawned);
      });
    });
}

function killIfAlive(spawned) {
  const timer = setTimeout(() => {
    if (spawned.exitCode === null && spawned.signalCode === null) {
      output.appendLine(`torchdet-lint server (process ${spawned.pid}) did not exit when asked to: killed.`);
      spawned.kill("SIGKILL");
    }
  }, timing.killAfterMs);
  timer.unref();
}

function clientOptions(server, folder) {
  const folders = scopes.serverFolders(vscode.workspace.workspaceFolders);
  const selector = scopes.documentSelector(
    { folder, first: Boolean(folder) && scopes.folderKey(folders[0]) === server.key, looseFiles: server.looseFiles, anyFolder: folders.length > 0 },
    (base, pattern) => new vscode.RelativePattern(base, pattern)
  );
  const options = {
    documentSelector: selector,
    outputChannel: output,
    workspaceFolder: folder,
    // The server links each diagnostic to the rule's virtual document instead of writing a file for it.
    initializationOptions: { ruleDocsUrl: ruleDocs.ruleDocsUrl(server.key) },
    // A server that synchronises whole notebooks is offered every open one: it gets those of its folder only.
    notebookDocumentOptions: { filterCells: (notebook, cells) => (serverOf(notebook.uri) === server ? cells : []) },
    middleware: {
      handleDiagnostics: (uri, diagnostics, next) => next(uri, ruleDocs.withVirtualLinks(diagnostics, server.key, (value) => vscode.Uri.parse(value))),
    },
  };
  if (!folder) {
    options.middleware.workspace = { workspaceFolders: () => null, didChangeWorkspaceFolders: () => Promise.resolve() };
  }
  return options;
}

async function startServer(server) {
  const folder = server.folder;
  setState(server, "starting");
  const settings = readSettings(vscode.workspace.getConfiguration("torchdetLint", folder ? folder.uri : undefined));
  const result = await findServer({
    settings,
    workspaceFolder: folder ? folder.uri.fsPath : undefined,
    selectedInterpreter: await selectedInterpreter(folder),
  });
  if (!result.ok) {
    server.found = undefined;
    output.appendLine(result.message);
    setState(server, "error", result.message);
    void notify(result.message);
    return;
  }
  Object.assign(server, { found: result, version: result.version, source: result.source });
  const { command, args } = serverCommand(result, settings);
  const cwd = folder ? folder.uri.fsPath : undefined;
  const scope = folder ? `folder ${folder.name}` : "files outside the workspace folders";
  output.appendLine(`torchdet-lint ${result.version}, from ${result.source}, for ${scope}: ${[command, ...args].join(" ")}`);
  const Client = folder ? LanguageClient : LooseClient;
  const name = folder && (vscode.workspace.workspaceFolders || []).length > 1 ? `torchdet-lint (${folder.name})` : "torchdet-lint";
  const client = new Client("torchdet-lint", name, spawner(server, command, args, cwd), clientOptions(server, folder));
  server.client = client;
  client.onDidChangeState((event) => {
    if (server.client !== client) {
      return; // a client being replaced
    }
    if (event.newState === State.Running) {
      const info = client.initializeResult && client.initializeResult.serverInfo;
      server.version = (info && info.version) || server.version;
      setState(server, "running");
    } else if (event.newState === State.Starting) {
      setState(server, "starting");
    } else {
      setState(server, "stopped", "the server stopped; its log is in Output > torchdet-lint");
    }
  });
  try {
    await client.start();
  } catch (error) {
    // The server's standard error (e.g. "needs pygls") is in the output channel.
    const message = `torchdet-lint server did not start (${errorMessage(error)}); its log is in Output > torchdet-lint.`;
    setState(server, "error", message);
    void notify(message);
  }
}

async function stopServer(server) {
  const { client, process: spawned } = server;
  server.client = undefined;
  server.process = undefined;
  if (client) {
    try {
      await client.stop();
    } catch (error) {
      output.appendLine(`Stopping the server: ${error}`);
    }
  }
  if (spawned) {
    killIfAlive(spawned);
  }
  setState(server, "stopped");
}

function restart(server) {
  // Serialised: a settings change during a start waits for it; a failed start
  // must not block the next restart. Restarts asked for while one is still
  // waiting its turn are that one: it reads the settings when it begins.
  if (server.restartPending) {
    return server.queue;
  }
  server.restartPending = true;
  server.queue = server.queue
    .catch(() => undefined)
    .then(() => {
      server.restartPending = false;
      return stopServer(server);
    })
    .then(() => startServer(server))
    .catch((error) => {
      output.appendLine(`Starting torchdet-lint failed: ${error && error.stack ? error.stack : error}`);
      const message = `torchdet-lint could not be started: ${errorMessage(error)}`;
      setState(server, "error", message);
      void notify(message);
    });
  return server.queue;
}

/** The server of a document or notebook URI, started when it is the first of its folder. */
function ensureServer(uri) {
  const key = scopes.serverKey(uri, vscode.workspace.workspaceFolders);
  if (key === undefined) {
    return undefined;
  }
  let server = servers.get(key);
  const fresh = server === undefined;
  if (fresh) {
    server = new Server(key);
    servers.set(key, server);
  }
  // The loose server's selector names its files: a new one needs a new client.
  const newLooseFile = key === scopes.LOOSE && uri.scheme === "file" && anyFolder() && !server.looseFiles.includes(uri.fsPath);
  if (newLooseFile) {
    server.looseFiles.push(uri.fsPath);
  }
  if (fresh || newLooseFile) {
    void restart(server);
  }
  return server;
}

function documentOpened(document) {
  if (document.languageId !== "python") {
    return;
  }
  // A cell opens before its notebook: the notebook, once open, starts the server.
  const uri = ownerUri(document);
  if (uri) {
    ensureServer(uri);
  }
}

function notebookOpened(notebook) {
  if (notebook.notebookType === scopes.NOTEBOOK_TYPE && notebook.getCells().some((cell) => cell.document.languageId === "python")) {
    ensureServer(notebook.uri);
  }
}

function openDocuments() {
  vscode.workspace.textDocuments.forEach(documentOpened);
  (vscode.workspace.notebookDocuments || []).forEach(notebookOpened);
}

function settled() {
  return Promise.all([...servers.values()].map((server) => server.queue));
}

async function restartAll() {
  notified.clear();
  for (const server of servers.values()) {
    void restart(server);
  }
  openDocuments(); // and start the servers of files that have none
  await settled();
}

async function stopAll() {
  const stopping = [...servers.values()].map((server) => server.queue.catch(() => undefined).then(() => stopServer(server)));
  servers.clear();
  await Promise.all(stopping);
}

async function foldersChanged() {
  // Which folder owns which file, and the first folder, may both have changed.
  await stopAll();
  openDocuments();
  await settled();
}

// -- fix all -----------------------------------------------------------------------------

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
  if (document.languageId !== "python") {
    return;
  }
  const server = serverOf(document.uri);
  if (!server || !server.client) {
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

// -- rule documentation ------------------------------------------------------------------

/** Run a server's torchdet-lint (else any found one) with some arguments: its standard output. */
function runTool(server, args) {
  const found = (server && server.found) || [...servers.values()].map((s) => s.found).find(Boolean);
  return new Promise((resolve, reject) => {
    if (!found) {
      reject(new Error("torchdet-lint was not found (see the notification)"));
      return;
    }
    childProcess.execFile(found.command, [...found.prefix, ...args], { timeout: 30000, windowsHide: true }, (error, stdout, stderr) =>
      error ? reject(new Error(String(stderr).trim() || error.message)) : resolve(String(stdout))
    );
  });
}

const ruleDocumentProvider = {
  async provideTextDocumentContent(uri) {
    const rule = ruleDocs.parseRuleUri(uri);
    if (!rule) {
      return `${uri.toString()} names no torchdet-lint rule.\n`;
    }
    try {
      return await runTool(servers.get(rule.key), ["rule", rule.code]);
    } catch (error) {
      return `# ${rule.code}\n\nThe documentation could not be read: ${errorMessage(error)}\n`;
    }
  },
};

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
    const server = activeServer();
    let wanted = typeof code === "string" ? code : codeAtCursor();
    if (!wanted) {
      const rules = parseRulesTable(await runTool(server, ["rules"]));
      const picked = await vscode.window.showQuickPick(
        rules.map((rule) => ({ label: rule.code, description: rule.name, detail: rule.summary })),
        { placeHolder: "Which rule?", matchOnDescription: true, matchOnDetail: true }
      );
      wanted = picked && picked.label;
    }
    if (!wanted) {
      return;
    }
    const uri = vscode.Uri.parse(ruleDocs.ruleUri(wanted, server ? server.key : scopes.LOOSE));
    await vscode.workspace.openTextDocument(uri);
    await vscode.commands.executeCommand("markdown.showPreview", uri);
  } catch (error) {
    void vscode.window.showErrorMessage(`torchdet-lint: ${error.message}`);
  }
}

// -- activation --------------------------------------------------------------------------

async function activate(context) {
  output = vscode.window.createOutputChannel("torchdet-lint");
  status = vscode.languages.createLanguageStatusItem("torchdet-lint.status", STATUS_SELECTOR);
  status.name = "torchdet-lint";
  status.command = { title: "Restart", command: COMMANDS.restart, tooltip: "Restart the torchdet-lint server" };
  updateStatus();
  context.subscriptions.push(
    output,
    status,
    vscode.commands.registerCommand(COMMANDS.restart, restartAll),
    vscode.commands.registerCommand(COMMANDS.fixAll, fixAll),
    vscode.commands.registerCommand(COMMANDS.showRuleDocumentation, showRuleDocumentation),
    vscode.workspace.registerTextDocumentContentProvider(ruleDocs.SCHEME, ruleDocumentProvider),
    vscode.workspace.onWillSaveTextDocument(onWillSave),
    vscode.workspace.onDidOpenTextDocument(documentOpened),
    vscode.workspace.onDidOpenNotebookDocument(notebookOpened),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void foldersChanged()),
    vscode.window.onDidChangeActiveTextEditor(updateStatus),
    vscode.workspace.onDidChangeConfiguration((event) => {
      for (const server of servers.values()) {
        const folder = server.folder;
        if (RESTART_KEYS.some((key) => event.affectsConfiguration(`torchdetLint.${key}`, folder ? folder.uri : undefined))) {
          void restart(server);
        }
      }
    })
  );
  const api = await pythonApi();
  if (api && api.environments.onDidChangeActiveEnvironmentPath) {
    context.subscriptions.push(
      api.environments.onDidChangeActiveEnvironmentPath((event) => {
        // The selection of one folder, or (no resource) the one every folder without its own uses.
        const changed = event && event.resource && event.resource.uri ? event.resource.uri.toString() : undefined;
        for (const server of servers.values()) {
          if (changed === undefined || server.key === changed) {
            void restart(server);
          }
        }
      })
    );
  }
  openDocuments();
  await settled();
}

function deactivate() {
  return stopAll();
}

module.exports = { activate, deactivate, COMMANDS, FIX_ALL_KIND, timing };
