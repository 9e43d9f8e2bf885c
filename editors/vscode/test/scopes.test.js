// Which server a document belongs to, the rule documentation URIs, and what
// the status item says: plain functions, checked without an editor.
"use strict";

const assert = require("node:assert/strict");
const { describe, it } = require("node:test");

const { Uri, folder } = require("./fake-vscode");
const ruleDocs = require("../src/ruleDocs");
const { LOOSE, serverFolders, serverKey } = require("../src/scopes");
const { STATES, describeStatus } = require("../src/status");

describe("the server of a document", () => {
  const folders = [folder("/work/project"), folder("/work/project/sub"), folder("/work/project-two"), { uri: new Uri("vscode-vfs", "github", "/o/r"), name: "r" }];

  it("is its folder's, a nested folder's being the outer one's", () => {
    assert.deepEqual(serverFolders(folders).map((f) => f.name), ["project", "project-two"]);
    assert.equal(serverKey(Uri.file("/work/project/sub/train.py"), folders), "file:///work/project");
    assert.equal(serverKey(Uri.file("/work/project-two/train.py"), folders), "file:///work/project-two");
  });

  it("is the first folder's for an untitled document, the loose one's for a file outside every folder", () => {
    assert.equal(serverKey(new Uri("untitled", "", "Untitled-1"), folders), "file:///work/project");
    assert.equal(serverKey(Uri.file("/tmp/scratch.py"), folders), LOOSE);
    assert.equal(serverKey(Uri.file("/tmp/scratch.py"), undefined), LOOSE);
    assert.equal(serverKey(new Uri("untitled", "", "Untitled-1"), []), LOOSE);
  });

  it("is none for a document that is not a file (a git: version, a virtual workspace)", () => {
    assert.equal(serverKey(new Uri("git", "", "/work/project/train.py"), folders), undefined);
    assert.equal(serverKey(new Uri("vscode-vfs", "github", "/o/r/train.py"), folders), undefined);
  });

  it("compares Windows paths without regard to case", () => {
    const windows = [{ uri: { scheme: "file", fsPath: "C:\\Work\\Project", toString: () => "file:///c%3A/Work/Project" }, name: "Project" }];
    assert.equal(serverKey({ scheme: "file", fsPath: "c:\\work\\project\\train.py" }, windows, "win32"), "file:///c%3A/Work/Project");
    assert.equal(serverKey({ scheme: "file", fsPath: "D:\\work\\project\\train.py" }, windows, "win32"), LOOSE);
  });
});

describe("rule documentation URIs", () => {
  it("name the rule and the server whose torchdet-lint renders it", () => {
    const uri = Uri.parse(ruleDocs.ruleUri("TDL301", "file:///work/project two"));
    assert.equal(uri.scheme, "torchdet-lint-rule");
    assert.equal(uri.path, "/TDL301.md");
    assert.deepEqual(ruleDocs.parseRuleUri(uri), { code: "TDL301", key: "file:///work/project two" });
    assert.deepEqual(ruleDocs.parseRuleUri(Uri.parse(ruleDocs.ruleUri("TDL101", LOOSE))), { code: "TDL101", key: LOOSE });
    assert.equal(ruleDocs.ruleDocsUrl(LOOSE).replace("{code}", "TDL101"), ruleDocs.ruleUri("TDL101", LOOSE));
  });

  it("name nothing but a rule code (they become a command's arguments)", () => {
    assert.equal(ruleDocs.parseRuleUri(Uri.parse("torchdet-lint-rule:/--help.md")), undefined);
    assert.equal(ruleDocs.parseRuleUri(Uri.parse("file:///TDL301.md")), undefined);
  });
});

describe("the status item's text", () => {
  it("says each state, the version when running, the error when there is one", () => {
    const server = { version: "0.1.0", source: "PATH" };
    const shown = Object.fromEntries(STATES.map((state) => [state, describeStatus({ ...server, state, message: state === "error" ? "not found" : undefined })]));
    assert.deepEqual(shown.starting, { text: "torchdet-lint", detail: "starting (PATH)", severity: "information", busy: true });
    assert.deepEqual(shown.running, { text: "torchdet-lint 0.1.0", detail: "running (PATH)", severity: "information", busy: false });
    assert.deepEqual(shown.stopped, { text: "torchdet-lint: stopped", detail: "the server is not running", severity: "warning", busy: false });
    assert.deepEqual(shown.error, { text: "torchdet-lint: error", detail: "not found", severity: "error", busy: false });
    assert.equal(describeStatus(undefined).text, "torchdet-lint");
  });
});
