// Bundles the extension and the parts of its dependencies it uses into one
// script, dist/extension.js: VS Code loads one file instead of a node_modules
// tree, and the .vsix holds that file, the manifest and the documents only.
// `vscode` is the editor's own module, provided at run time.
//
//   node esbuild.js [--minify] [--outfile FILE]
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const esbuild = require("esbuild");

const OPTIONS = {
  entryPoints: [path.join(__dirname, "src", "extension.js")],
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node18", // the Node.js of the oldest VS Code that package.json's engines admits (1.82)
  external: ["vscode"],
  metafile: true,
  logLevel: "warning",
};

const OUTFILE = path.join(__dirname, "dist", "extension.js"); // package.json's "main"
const LICENSE_FILE = /^(licen[cs]e|copying)(\.(md|txt))?$/i;

/** The package directories under node_modules whose code the bundle holds. */
function bundledPackages(metafile) {
  const directories = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const parts = input.split("/");
    const at = parts.lastIndexOf("node_modules");
    if (at >= 0) {
      const length = parts[at + 1].startsWith("@") ? 3 : 2;
      directories.add(parts.slice(0, at + length).join("/"));
    }
  }
  return [...directories].sort();
}

/**
 * The licences of the bundled packages, as a comment for the end of the bundle:
 * their MIT and ISC terms ask for the notice to go wherever the code goes, and
 * the bundle is the only file of the .vsix that holds their code.
 */
function licenseNotice(metafile, cwd) {
  const sections = bundledPackages(metafile).map((directory) => {
    const absolute = path.resolve(cwd, directory);
    const manifest = JSON.parse(fs.readFileSync(path.join(absolute, "package.json"), "utf8"));
    const file = fs.readdirSync(absolute).find((name) => LICENSE_FILE.test(name));
    const text = file ? fs.readFileSync(path.join(absolute, file), "utf8").trim() : `License: ${manifest.license}`;
    return `${manifest.name} ${manifest.version}\n\n${text}`;
  });
  const body = ["This file bundles the following packages, under these licences.", ...sections].join("\n\n" + "-".repeat(72) + "\n\n");
  return `\n/*\n${body.replace(/\*\//g, "* /")}\n*/\n`;
}

/** Build the bundle; resolves to esbuild's metafile (what went in, what stayed external). */
async function build({ outfile = OUTFILE, minify = false } = {}) {
  const result = await esbuild.build({ ...OPTIONS, outfile, minify, absWorkingDir: __dirname });
  fs.appendFileSync(outfile, licenseNotice(result.metafile, __dirname));
  return result.metafile;
}

module.exports = { OUTFILE, build, bundledPackages };

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--outfile");
  build({ minify: args.includes("--minify"), ...(at >= 0 ? { outfile: path.resolve(args[at + 1]) } : {}) }).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
