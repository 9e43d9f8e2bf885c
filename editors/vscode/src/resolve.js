// Which torchdet-lint to start: the executable named in the settings, else the
// one of the selected Python environment (its script, else `python -m
// torchdet_lint`), else the one on PATH. No VS Code API here, so node's test
// runner can check every branch.
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const { MINIMUM_VERSION, isAtLeast, parseVersion } = require("./version");

const EXECUTABLE = "torchdet-lint";
const INSTALL_HINT =
  "pip install '.[server]' in a clone of torchdet-lint, or " +
  "pip install \"torchdet-lint[server] @ git+URL\" with URL the address of the torchdet-lint repository";
const PROBE_TIMEOUT_MS = 20000;

/** `${workspaceFolder}`, `${userHome}` and a leading `~` expanded; a relative path taken from the workspace folder. */
function expandPath(value, workspaceFolder) {
  let expanded = value.replace(/\$\{userHome\}/g, os.homedir());
  if (workspaceFolder) {
    expanded = expanded.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  if (expanded === "~" || expanded.startsWith("~/") || expanded.startsWith("~\\")) {
    expanded = path.join(os.homedir(), expanded.slice(1));
  }
  if (!path.isAbsolute(expanded) && workspaceFolder && /[\\/]/.test(expanded)) {
    expanded = path.join(workspaceFolder, expanded);
  }
  return expanded;
}

function isFile(candidate) {
  try {
    return fs.statSync(candidate).isFile();
  } catch {
    return false;
  }
}

function executableNames(platform, env) {
  if (platform !== "win32") {
    return [EXECUTABLE];
  }
  const extensions = (env.PATHEXT || ".EXE;.CMD;.BAT").split(";").filter(Boolean);
  return extensions.map((extension) => EXECUTABLE + extension.toLowerCase());
}

/** The torchdet-lint script installed beside a Python interpreter (venv `bin/`, Windows `Scripts\`). */
function scriptsBeside(interpreter, platform, env, exists) {
  const directory = path.dirname(interpreter);
  const names = executableNames(platform, env);
  const directories = platform === "win32" ? [directory, path.join(directory, "Scripts")] : [directory];
  return directories.flatMap((dir) => names.map((name) => path.join(dir, name))).filter(exists);
}

function onPath(platform, env, exists) {
  const separator = platform === "win32" ? ";" : ":";
  const directories = (env.PATH || env.Path || "").split(separator).filter(Boolean);
  for (const directory of directories) {
    for (const name of executableNames(platform, env)) {
      const candidate = path.join(directory, name);
      if (exists(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** Run `command ...prefix --version`: its output, or undefined when it does not run. */
function probeVersion(command, prefix, env) {
  return new Promise((resolve) => {
    childProcess.execFile(
      command,
      [...prefix, "--version"],
      { timeout: PROBE_TIMEOUT_MS, env, windowsHide: true },
      (error, stdout) => resolve(error ? undefined : String(stdout))
    );
  });
}

/**
 * Find the torchdet-lint to run.
 *
 * Resolves to `{ ok: true, command, prefix, version, source }` (run `command
 * ...prefix server`) or `{ ok: false, reason: "not-found" | "too-old", message }`.
 */
async function findServer({
  settings,
  workspaceFolder,
  selectedInterpreter,
  env = process.env,
  platform = process.platform,
  exists = isFile,
  probe = probeVersion,
}) {
  const candidates = [];
  if (settings.path.length > 0) {
    // The user named the executable: never fall back to another one silently.
    const named = settings.path.map((value) => expandPath(value, workspaceFolder));
    const first = named.find(exists);
    if (first === undefined) {
      return {
        ok: false,
        reason: "not-found",
        message: `torchdet-lint: none of the executables in torchdetLint.path exists (${named.join(", ")}).`,
      };
    }
    candidates.push({ command: first, prefix: [], source: "torchdetLint.path" });
  } else {
    const configured = settings.interpreter.length > 0 ? expandPath(settings.interpreter[0], workspaceFolder) : undefined;
    const interpreter = configured || selectedInterpreter;
    const interpreterSource = configured ? "torchdetLint.interpreter" : "the selected Python environment";
    if (interpreter) {
      for (const script of scriptsBeside(interpreter, platform, env, exists)) {
        candidates.push({ command: script, prefix: [], source: interpreterSource });
      }
      candidates.push({ command: interpreter, prefix: ["-m", "torchdet_lint"], source: `${interpreterSource} (python -m torchdet_lint)` });
    }
    const found = onPath(platform, env, exists);
    if (found) {
      candidates.push({ command: found, prefix: [], source: "PATH" });
    }
  }

  for (const candidate of candidates) {
    const version = parseVersion(await probe(candidate.command, candidate.prefix, env));
    if (version === undefined) {
      continue; // not installed there (`python -m` fails), or not torchdet-lint at all
    }
    const text = version.join(".");
    if (!isAtLeast(version)) {
      return {
        ok: false,
        reason: "too-old",
        message:
          `torchdet-lint ${text} (${describe(candidate)}) is older than ${MINIMUM_VERSION}, ` +
          `the first version this extension works with: upgrade it with ${INSTALL_HINT.replace("pip install", "pip install -U")}.`,
      };
    }
    return { ok: true, command: candidate.command, prefix: candidate.prefix, version: text, source: candidate.source };
  }
  const tried = candidates.map(describe);
  return {
    ok: false,
    reason: "not-found",
    message:
      "torchdet-lint was not found in the selected Python environment nor on PATH: " +
      `install it there (${INSTALL_HINT}), or set torchdetLint.path or torchdetLint.interpreter.` +
      (tried.length ? ` Tried: ${tried.join("; ")}.` : ""),
  };
}

function describe(candidate) {
  return [candidate.command, ...candidate.prefix].join(" ");
}

/** The command line of the language server for a found torchdet-lint and the settings. */
function serverCommand(found, settings) {
  const profile = settings.profile ? ["--profile", settings.profile] : [];
  return { command: found.command, args: [...found.prefix, "server", ...profile, ...settings.args] };
}

module.exports = { expandPath, findServer, probeVersion, serverCommand, INSTALL_HINT };
