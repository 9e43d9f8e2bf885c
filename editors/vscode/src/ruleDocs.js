// Rule documentation as a virtual document: `torchdet-lint-rule:/TDL301.md`,
// its text produced by `torchdet-lint rule TDL301` of the server's own
// torchdet-lint. A `file://` link would name a file on the machine the server
// runs on, which the editor cannot open over Remote-SSH, WSL or in a
// container; a virtual document is read through the extension host, which
// runs beside the server.
"use strict";

const SCHEME = "torchdet-lint-rule";
const CODE = /^TDL\d{3}$/;

/** The documentation URI of a rule; `key` names the server whose torchdet-lint renders it. */
function ruleUri(code, key) {
  return `${SCHEME}:/${code}.md` + (key ? `?${encodeURIComponent(key)}` : "");
}

/** The server's `ruleDocsUrl` initialization option: the same URI, `{code}` left for the server to fill in. */
function ruleDocsUrl(key) {
  return ruleUri("{code}", key);
}

/** { code, key } of a documentation URI (a parsed `vscode.Uri`), or undefined when it names no rule. */
function parseRuleUri(uri) {
  if (uri.scheme !== SCHEME) {
    return undefined;
  }
  const code = uri.path.replace(/^\//, "").replace(/\.md$/, "");
  return CODE.test(code) ? { code, key: uri.query || "" } : undefined;
}

/**
 * The diagnostics with every documentation link that is not on the web (a
 * `file://` path from a server that ignored `ruleDocsUrl`) pointed to the
 * virtual document instead. `parse` is `vscode.Uri.parse`.
 */
function withVirtualLinks(diagnostics, key, parse) {
  for (const diagnostic of diagnostics) {
    const code = diagnostic.code;
    if (code && typeof code === "object" && code.target && !["http", "https", SCHEME].includes(code.target.scheme)) {
      const value = String(code.value);
      diagnostic.code = CODE.test(value) ? { value: code.value, target: parse(ruleUri(value, key)) } : code.value;
    }
  }
  return diagnostics;
}

module.exports = { CODE, SCHEME, parseRuleUri, ruleDocsUrl, ruleUri, withVirtualLinks };
