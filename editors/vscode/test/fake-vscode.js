// Just enough of the `vscode` module and of vscode-languageclient for
// extension.js to activate under node's test runner (no VS Code build can be
// downloaded here). It records what the extension asks of the editor. The fake
// language client spawns the server process the way the real one does (through
// the extension's server options), then stands in for the protocol.
"use strict";

const Module = require("node:module");
const path = require("node:path");

class Range {
  constructor(startLine, startCharacter, endLine, endCharacter) {
    this.start = { line: startLine, character: startCharacter };
    this.end = { line: endLine, character: endCharacter };
  }

  contains(position) {
    const after = (a, b) => a.line > b.line || (a.line === b.line && a.character >= b.character);
    return after(position, this.start) && after(this.end, position);
  }
}

class Uri {
  constructor(scheme, authority, uriPath, query = "", fragment = "") {
    Object.assign(this, { scheme, authority, path: uriPath, query, fragment });
  }

  static file(fsPath) {
    return new Uri("file", "", fsPath);
  }

  static parse(value) {
    const match = /^([a-z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(value);
    if (!match) {
      throw new Error(`not a URI: ${value}`);
    }
    const [, scheme, authority = "", uriPath, query = "", fragment = ""] = match;
    return new Uri(scheme, authority, decodeURIComponent(uriPath), decodeURIComponent(query), decodeURIComponent(fragment));
  }

  get fsPath() {
    return this.path;
  }

  toString() {
    const authority = this.scheme === "file" || this.authority ? `//${this.authority}` : "";
    const query = this.query ? `?${encodeURIComponent(this.query)}` : "";
    const fragment = this.fragment ? `#${encodeURIComponent(this.fragment)}` : "";
    return `${this.scheme}:${authority}${encodeURI(this.path)}${query}${fragment}`;
  }
}

class RelativePattern {
  constructor(base, pattern) {
    this.baseUri = typeof base === "string" ? Uri.file(base) : base.uri || base;
    this.base = this.baseUri.fsPath;
    this.pattern = pattern;
  }
}

/** VS Code's `languages.match` for the filters the extension writes: does `selector` pick this document? */
function selects(selector, document, notebook) {
  const patternMatches = (pattern, fsPath) => {
    if (typeof pattern === "string") {
      return pattern === fsPath;
    }
    if (pattern.pattern !== "**/*") {
      throw new Error(`the fake matches only **/* relative patterns, not ${pattern.pattern}`);
    }
    const relative = path.relative(pattern.base, fsPath);
    return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
  };
  return selector.some((filter) => {
    if (filter.language && filter.language !== document.languageId) {
      return false;
    }
    if (filter.notebook !== undefined) {
      const wanted = typeof filter.notebook === "string" ? { notebookType: filter.notebook } : filter.notebook;
      return (
        notebook !== undefined &&
        wanted.notebookType === notebook.notebookType &&
        (!wanted.scheme || wanted.scheme === notebook.uri.scheme) &&
        (!wanted.pattern || patternMatches(wanted.pattern, notebook.uri.fsPath))
      );
    }
    return (!filter.scheme || filter.scheme === document.uri.scheme) && (!filter.pattern || patternMatches(filter.pattern, document.uri.fsPath));
  });
}

function pythonDocument(fsPath, text = "import torch\n") {
  const uri = fsPath.startsWith("untitled:") ? Uri.parse(fsPath) : Uri.file(fsPath);
  return { uri, languageId: "python", lineCount: text.split("\n").length };
}

/** A Jupyter notebook whose cells are Python documents (`cells` of them). */
function notebookDocument(fsPath, cells = 1, notebookType = "jupyter-notebook") {
  const uri = Uri.file(fsPath);
  const documents = Array.from({ length: cells }, (_, index) => ({
    uri: new Uri("vscode-notebook-cell", "", fsPath, "", `W${index}sZmlsZQ==`),
    languageId: "python",
    lineCount: 1,
  }));
  return { uri, notebookType, cells: documents, getCells: () => documents.map((document) => ({ document })) };
}

function folder(fsPath, index = 0) {
  return { uri: Uri.file(fsPath), name: path.basename(fsPath), index };
}

/**
 * A fresh fake editor. `settings` per key of `torchdetLint` (every scope),
 * `folderSettings` per folder path over them; `folders` the workspace folders
 * (real directories: the server is spawned in them); `documents` and
 * `notebooks` open before activation; `interpreter` the Python extension's selection.
 */
function createEditor({
  settings = {},
  folderSettings = {},
  interpreter,
  folders = [],
  documents = [],
  notebooks = [],
  codeActions = [],
  brokenPythonApi = false,
  serverVersion = "0.1.0",
} = {}) {
  const editor = {
    settings: { ...settings },
    folderSettings,
    serverVersion,
    errors: [],
    commands: new Map(),
    executed: [],
    applied: [],
    opened: [],
    clients: [],
    statusItems: [],
    contentProviders: new Map(),
    configurationScopes: [],
    listeners: { willSave: [], configuration: [], environment: [], openText: [], openNotebook: [], folders: [], activeEditor: [] },
    codeActions,
    activeTextEditor: undefined,
    diagnostics: [],
  };
  const event = (list) => (listener) => {
    list.push(listener);
    return { dispose() {} };
  };
  const workspace = {
    workspaceFolders: folders.length ? folders.map((fsPath, index) => folder(fsPath, index)) : undefined,
    textDocuments: [...documents],
    notebookDocuments: [...notebooks],
    getConfiguration: (section, scope) => {
      if (section !== "torchdetLint") {
        throw new Error(`unexpected section ${section}`);
      }
      editor.configurationScopes.push(scope);
      const values = { ...editor.settings, ...((scope && editor.folderSettings[scope.fsPath]) || {}) };
      return { get: (key) => values[key] };
    },
    onWillSaveTextDocument: event(editor.listeners.willSave),
    onDidChangeConfiguration: event(editor.listeners.configuration),
    onDidOpenTextDocument: event(editor.listeners.openText),
    onDidOpenNotebookDocument: event(editor.listeners.openNotebook),
    onDidChangeWorkspaceFolders: event(editor.listeners.folders),
    registerTextDocumentContentProvider: (scheme, provider) => {
      editor.contentProviders.set(scheme, provider);
      return { dispose() {} };
    },
    applyEdit: async (edit) => {
      editor.applied.push(edit);
      return true;
    },
    openTextDocument: async (options) => {
      if (options instanceof Uri) {
        const provider = editor.contentProviders.get(options.scheme);
        if (!provider) {
          throw new Error(`no content provider for ${options.toString()}`);
        }
        const content = await provider.provideTextDocumentContent(options);
        editor.opened.push({ uri: options.toString(), content });
        return { uri: options, getText: () => content };
      }
      editor.opened.push(options);
      return { uri: new Uri("untitled", "", `doc${editor.opened.length}`) };
    },
  };
  const pythonExtension = (interpreter || brokenPythonApi) && {
    isActive: true,
    exports: {
      environments: {
        getActiveEnvironmentPath: () => ({ path: interpreter }),
        resolveEnvironment: async (environmentPath) => {
          if (brokenPythonApi) {
            throw new Error("environment vanished");
          }
          return { executable: { uri: { fsPath: environmentPath.path } } };
        },
        onDidChangeActiveEnvironmentPath: event(editor.listeners.environment),
      },
    },
  };
  editor.vscode = {
    Range,
    RelativePattern,
    Uri,
    LanguageStatusSeverity: { Information: 0, Warning: 1, Error: 2 },
    TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
    workspace,
    window: {
      createOutputChannel: () => ({ lines: [], appendLine() {}, append() {}, show() {}, dispose() {} }),
      showErrorMessage: async (message) => {
        editor.errors.push(message);
        return undefined;
      },
      setStatusBarMessage: () => ({ dispose() {} }),
      showQuickPick: async (items) => items[0],
      onDidChangeActiveTextEditor: event(editor.listeners.activeEditor),
      get activeTextEditor() {
        return editor.activeTextEditor;
      },
    },
    commands: {
      registerCommand: (id, callback) => {
        editor.commands.set(id, callback);
        return { dispose() {} };
      },
      executeCommand: async (id, ...args) => {
        editor.executed.push([id, ...args]);
        if (id === "vscode.executeCodeActionProvider") {
          return editor.codeActions;
        }
        return undefined;
      },
    },
    extensions: { getExtension: (id) => (id === "ms-python.python" ? pythonExtension : undefined) },
    languages: {
      getDiagnostics: () => editor.diagnostics,
      createLanguageStatusItem: (id, selector) => {
        // Every state it passes through is kept in `shown` (a start can be over before a test looks).
        const fields = {};
        const item = { id, selector, shown: [], dispose() {} };
        for (const key of ["text", "detail", "busy", "severity"]) {
          Object.defineProperty(item, key, {
            get: () => fields[key],
            set: (value) => {
              fields[key] = value;
              item.shown.push({ ...fields });
            },
          });
        }
        editor.statusItems.push(item);
        return item;
      },
    },
  };

  /** Open a document (or notebook) as VS Code does: listed, then announced. */
  editor.open = (document) => {
    workspace.textDocuments.push(document);
    editor.listeners.openText.forEach((listener) => listener(document));
  };
  editor.openNotebook = (notebook) => {
    for (const cell of notebook.cells) {
      editor.open(cell); // the cells open before their notebook
    }
    workspace.notebookDocuments.push(notebook);
    editor.listeners.openNotebook.forEach((listener) => listener(notebook));
  };
  editor.focus = (document) => {
    editor.activeTextEditor = { document, selection: { active: { line: 0, character: 0 } } };
    editor.listeners.activeEditor.forEach((listener) => listener(editor.activeTextEditor));
  };
  editor.status = () => editor.statusItems[0];

  const State = { Stopped: 1, Running: 2, Starting: 3 };

  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, running: false, stopped: false, stateListeners: [] });
      editor.clients.push(this);
    }

    onDidChangeState(listener) {
      this.stateListeners.push(listener);
      return { dispose() {} };
    }

    changeState(oldState, newState) {
      this.stateListeners.forEach((listener) => listener({ oldState, newState }));
    }

    // What the real client's workspace-folder feature adds to `initialize` when no folder is given.
    fillInitializeParams(params) {
      if (!this.clientOptions.workspaceFolder) {
        const folders = workspace.workspaceFolders;
        params.workspaceFolders = folders ? folders.map((f) => ({ uri: f.uri.toString(), name: f.name })) : null;
      }
    }

    async start() {
      this.changeState(State.Stopped, State.Starting);
      this.process = await this.serverOptions();
      const locked = this.clientOptions.workspaceFolder;
      const root = locked || (workspace.workspaceFolders || [])[0];
      this.initializeParams = {
        rootUri: root ? root.uri.toString() : null,
        workspaceFolders: locked ? [{ uri: locked.uri.toString(), name: locked.name }] : null,
        initializationOptions: this.clientOptions.initializationOptions,
      };
      this.fillInitializeParams(this.initializeParams);
      this.initializeResult = { capabilities: {}, serverInfo: { name: "torchdet-lint", version: editor.serverVersion } };
      this.running = true;
      this.changeState(State.Starting, State.Running);
    }

    async stop() {
      this.running = false;
      this.stopped = true;
      this.changeState(State.Running, State.Stopped);
      if (this.process) {
        this.process.stdin.end(); // what the real client's `exit` amounts to for a server that ignores it
      }
    }

    /** A server crash the client gave up restarting after. */
    crash() {
      this.running = false;
      this.changeState(State.Running, State.Stopped);
    }
  }
  editor.languageClient = { LanguageClient, State };
  return editor;
}

/** `file` (extension.js, or the bundle) loaded afresh against `editor`: its module state starts empty. */
function loadExtension(editor, file = require.resolve("../src/extension")) {
  const load = Module._load;
  Module._load = function (request, ...rest) {
    if (request === "vscode") {
      return editor.vscode;
    }
    if (request === "vscode-languageclient/node") {
      return editor.languageClient;
    }
    return load.call(this, request, ...rest);
  };
  try {
    delete require.cache[file];
    return require(file);
  } finally {
    Module._load = load;
  }
}

function fakeContext() {
  return { subscriptions: [] };
}

module.exports = { Range, RelativePattern, Uri, createEditor, fakeContext, folder, loadExtension, notebookDocument, pythonDocument, selects };
