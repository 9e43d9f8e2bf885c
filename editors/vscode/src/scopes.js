// Which server a document belongs to. Every workspace folder gets its own
// server, started with that folder's settings (the settings are the server's
// command line, so two folders with different settings cannot share one), and
// lints only the documents and notebooks inside it. A folder nested in another
// belongs to the outer one. Untitled documents go to the first folder's server,
// whose directory they are linted in; files outside every folder go to a
// "loose" server with the settings of no folder. No VS Code API is imported
// here, so node's test runner checks the routing with plain objects.
"use strict";

const path = require("path");

const LOOSE = ""; // the key of the server for files outside every workspace folder
const NOTEBOOK_TYPE = "jupyter-notebook";
const CELL_SCHEME = "vscode-notebook-cell";

function pathApi(platform) {
  return platform === "win32" ? path.win32 : path.posix;
}

function isInside(folderPath, filePath, platform = process.platform) {
  const relative = pathApi(platform).relative(folderPath, filePath);
  return relative === "" || (!relative.startsWith("..") && !pathApi(platform).isAbsolute(relative));
}

/** The folders that get a server: those on disk, and not inside another one. */
function serverFolders(folders, platform = process.platform) {
  const local = (folders || []).filter((folder) => folder.uri.scheme === "file");
  return local.filter(
    (folder) => !local.some((other) => other !== folder && other.uri.fsPath !== folder.uri.fsPath && isInside(other.uri.fsPath, folder.uri.fsPath, platform))
  );
}

function folderKey(folder) {
  return folder.uri.toString();
}

/**
 * The key of the server of a document (or notebook) URI: its folder's, LOOSE,
 * or undefined when no server lints it (a git: or other virtual document).
 */
function serverKey(uri, folders, platform = process.platform) {
  const candidates = serverFolders(folders, platform);
  if (uri.scheme === "untitled") {
    return candidates.length ? folderKey(candidates[0]) : LOOSE;
  }
  if (uri.scheme !== "file") {
    return undefined;
  }
  const folder = candidates.find((candidate) => isInside(candidate.uri.fsPath, uri.fsPath, platform));
  return folder ? folderKey(folder) : LOOSE;
}

function folderOf(key, folders, platform = process.platform) {
  return serverFolders(folders, platform).find((folder) => folderKey(folder) === key);
}

/**
 * The language client's document selector for a server: its Python files and
 * the Python cells of its Jupyter notebooks. `relativePattern(base, glob)`
 * builds a `vscode.RelativePattern` (it takes the base literally, where a glob
 * string would read brackets in a folder name as a pattern).
 */
function documentSelector({ folder, first = false, looseFiles = [], anyFolder = true }, relativePattern) {
  if (folder) {
    const inside = relativePattern(folder, "**/*");
    const selector = [
      { scheme: "file", language: "python", pattern: inside },
      { notebook: { notebookType: NOTEBOOK_TYPE, scheme: "file", pattern: inside }, language: "python" },
    ];
    if (first) {
      selector.push({ scheme: "untitled", language: "python" }, { notebook: { notebookType: NOTEBOOK_TYPE, scheme: "untitled" }, language: "python" });
    }
    return selector;
  }
  if (!anyFolder) {
    // A window with no folder open: every Python file and notebook is loose.
    return [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      { notebook: NOTEBOOK_TYPE, language: "python" },
    ];
  }
  // Files opened from outside the folders, one by one (a glob cannot say "not in
  // those folders"); VS Code matches a pattern equal to a file's path as that file.
  return looseFiles.flatMap((file) => [
    { scheme: "file", language: "python", pattern: file },
    { notebook: { notebookType: NOTEBOOK_TYPE, scheme: "file", pattern: file }, language: "python" },
  ]);
}

module.exports = { CELL_SCHEME, LOOSE, NOTEBOOK_TYPE, documentSelector, folderKey, folderOf, isInside, serverFolders, serverKey };
