// Just enough of the `vscode` module and of vscode-languageclient for
// extension.js to activate under node's test runner (no VS Code build can be
// downloaded here). It records what the extension asks of the editor.
"use strict";

const Module = require("node:module");

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

/** A fresh fake editor: `settings` per key of `torchdetLint`, an optional Python extension selection. */
function createEditor({ settings = {}, interpreter, folder = "/work/project", codeActions = [], brokenPythonApi = false } = {}) {
  const editor = {
    settings: { ...settings },
    errors: [],
    commands: new Map(),
    executed: [],
    applied: [],
    opened: [],
    clients: [],
    listeners: { willSave: [], configuration: [], environment: [] },
    codeActions,
    activeTextEditor: undefined,
    diagnostics: [],
  };
  const event = (list) => (listener) => {
    list.push(listener);
    return { dispose() {} };
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
    TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
    workspace: {
      workspaceFolders: folder ? [{ uri: { fsPath: folder }, name: "project" }] : undefined,
      getConfiguration: (section) => {
        if (section !== "torchdetLint") {
          throw new Error(`unexpected section ${section}`);
        }
        return { get: (key) => editor.settings[key] };
      },
      onWillSaveTextDocument: event(editor.listeners.willSave),
      onDidChangeConfiguration: event(editor.listeners.configuration),
      applyEdit: async (edit) => {
        editor.applied.push(edit);
        return true;
      },
      openTextDocument: async (options) => {
        editor.opened.push(options);
        return { uri: { scheme: "untitled", path: `doc${editor.opened.length}` } };
      },
    },
    window: {
      createOutputChannel: () => ({ lines: [], appendLine() {}, show() {}, dispose() {} }),
      showErrorMessage: async (message) => {
        editor.errors.push(message);
        return undefined;
      },
      setStatusBarMessage: () => ({ dispose() {} }),
      showQuickPick: async (items) => items[0],
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
    languages: { getDiagnostics: () => editor.diagnostics },
  };

  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, running: false, stopped: false });
      editor.clients.push(this);
    }

    async start() {
      this.running = true;
    }

    async stop() {
      this.running = false;
      this.stopped = true;
    }
  }
  editor.languageClient = { LanguageClient };
  return editor;
}

/** extension.js loaded afresh against `editor` (its module state starts empty). */
function loadExtension(editor) {
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
    const file = require.resolve("../src/extension");
    delete require.cache[file];
    return require(file);
  } finally {
    Module._load = load;
  }
}

function fakeContext() {
  return { subscriptions: [] };
}

module.exports = { Range, createEditor, fakeContext, loadExtension };
