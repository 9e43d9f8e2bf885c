// Which torchdet-lint the extension starts, with real files and processes:
// fake executables in a temporary directory print the version they claim.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");

const { expandPath, findServer, serverCommand } = require("../src/resolve");
const { DEFAULTS } = require("../src/settings");
const fakes = require("./fakes");

const posixOnly = { skip: process.platform === "win32" ? "fake executables are shell scripts" : false };

let root;

function fakeTool(relative, version) {
  return fakes.fakeTool(path.join(root, relative), version);
}

function fakePython(relative, hasModule, version) {
  return fakes.fakePython(path.join(root, relative), hasModule, version);
}

function settings(overrides = {}) {
  return { ...DEFAULTS, ...overrides };
}

function find(options) {
  return findServer({ env: { PATH: "" }, platform: "linux", ...options });
}

describe("finding torchdet-lint", posixOnly, () => {
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "torchdet-resolve-"));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it("takes the first existing executable of torchdetLint.path before the environment and PATH", async () => {
    const named = fakeTool("named/torchdet-lint", "0.2.0");
    const python = fakePython("venv1/bin/python", true);
    fakeTool("venv1/bin/torchdet-lint", "0.1.0");
    const onPath = fakeTool("path1/torchdet-lint", "0.1.0");
    const result = await find({
      settings: settings({ path: [path.join(root, "missing/torchdet-lint"), named] }),
      selectedInterpreter: python,
      env: { PATH: path.dirname(onPath) },
    });
    assert.deepEqual(result, { ok: true, command: named, prefix: [], version: "0.2.0", source: "torchdetLint.path" });
  });

  it("expands ${workspaceFolder} in torchdetLint.path", async () => {
    const named = fakeTool("ws/tools/torchdet-lint", "0.1.0");
    const result = await find({ settings: settings({ path: ["${workspaceFolder}/tools/torchdet-lint"] }), workspaceFolder: path.join(root, "ws") });
    assert.equal(result.command, named);
    assert.equal(expandPath("~/x", undefined), path.join(os.homedir(), "x"));
  });

  it("never falls back when no executable of torchdetLint.path exists, and says which were tried", async () => {
    const onPath = fakeTool("path2/torchdet-lint", "0.1.0");
    const result = await find({ settings: settings({ path: ["/nowhere/torchdet-lint"] }), env: { PATH: path.dirname(onPath) } });
    assert.equal(result.ok, false);
    assert.equal(result.reason, "not-found");
    assert.match(result.message, /torchdetLint\.path/);
    assert.match(result.message, /\/nowhere\/torchdet-lint/);
  });

  it("takes the script of the selected Python environment before PATH", async () => {
    const python = fakePython("venv2/bin/python", true);
    const script = fakeTool("venv2/bin/torchdet-lint", "0.1.0");
    const onPath = fakeTool("path3/torchdet-lint", "0.1.0");
    const result = await find({ settings: settings(), selectedInterpreter: python, env: { PATH: path.dirname(onPath) } });
    assert.equal(result.command, script);
    assert.deepEqual(result.prefix, []);
    assert.equal(result.source, "the selected Python environment");
  });

  it("runs `python -m torchdet_lint` when the environment has the package but no script", async () => {
    const python = fakePython("venv3/bin/python", true);
    const onPath = fakeTool("path4/torchdet-lint", "0.1.0");
    const result = await find({ settings: settings(), selectedInterpreter: python, env: { PATH: path.dirname(onPath) } });
    assert.equal(result.command, python);
    assert.deepEqual(result.prefix, ["-m", "torchdet_lint"]);
  });

  it("falls back to PATH when the environment does not have torchdet-lint", async () => {
    const python = fakePython("venv4/bin/python", false);
    const onPath = fakeTool("path5/torchdet-lint", "0.1.0");
    const result = await find({ settings: settings(), selectedInterpreter: python, env: { PATH: `/nowhere:${path.dirname(onPath)}` } });
    assert.deepEqual(result, { ok: true, command: onPath, prefix: [], version: "0.1.0", source: "PATH" });
  });

  it("prefers torchdetLint.interpreter to the Python extension's selection", async () => {
    const selected = fakePython("venv5/bin/python", true);
    fakeTool("venv5/bin/torchdet-lint", "0.1.0");
    const configured = fakePython("venv6/bin/python", true);
    const script = fakeTool("venv6/bin/torchdet-lint", "0.3.0");
    const result = await find({ settings: settings({ interpreter: [configured] }), selectedInterpreter: selected });
    assert.equal(result.command, script);
    assert.equal(result.version, "0.3.0");
    assert.equal(result.source, "torchdetLint.interpreter");
  });

  it("explains how to install it when it is nowhere", async () => {
    const python = fakePython("venv7/bin/python", false);
    const result = await find({ settings: settings(), selectedInterpreter: python, env: { PATH: "/nowhere" } });
    assert.equal(result.ok, false);
    assert.equal(result.reason, "not-found");
    assert.match(result.message, /pip install '\.\[server\]'/);
    assert.match(result.message, /venv7\/bin\/python -m torchdet_lint/); // what was tried
  });

  it("refuses a version older than the minimum, naming both", async () => {
    const old = fakeTool("old/torchdet-lint", "0.0.9");
    const result = await find({ settings: settings({ path: [old] }) });
    assert.equal(result.ok, false);
    assert.equal(result.reason, "too-old");
    assert.match(result.message, /torchdet-lint 0\.0\.9/);
    assert.match(result.message, /older than 0\.1\.0/);
    assert.match(result.message, /pip install -U/);
  });

  it("skips an executable that is not torchdet-lint", async () => {
    const impostor = fakes.script(path.join(root, "impostor/torchdet-lint"), "echo 'something else 1.0'\n");
    const result = await find({ settings: settings(), env: { PATH: path.dirname(impostor) } });
    assert.equal(result.ok, false);
    assert.equal(result.reason, "not-found");
  });
});

describe("the server's command line", () => {
  const found = { command: "/env/bin/python", prefix: ["-m", "torchdet_lint"] };

  it("is `server` with the profile and the extra arguments after it", () => {
    const line = serverCommand(found, settings({ profile: "strict", args: ["--log-file", "/tmp/log"] }));
    assert.deepEqual(line, { command: "/env/bin/python", args: ["-m", "torchdet_lint", "server", "--profile", "strict", "--log-file", "/tmp/log"] });
  });

  it("leaves the profile to the project's configuration when none is set", () => {
    assert.deepEqual(serverCommand({ command: "torchdet-lint", prefix: [] }, settings()).args, ["server"]);
  });
});
