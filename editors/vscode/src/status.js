// What the language status item says about the server of the active file:
// starting, running (with its version and where it was found), stopped, or
// the error that kept it from starting. Clicking it restarts the server.
"use strict";

const STATES = ["starting", "running", "stopped", "error"];

/** Text, detail, severity ("information" | "warning" | "error") and busy flag for a server's state. */
function describeStatus(server) {
  if (!server) {
    return { text: "torchdet-lint", detail: "no server for this file", severity: "information", busy: false };
  }
  const where = server.source ? ` (${server.source})` : "";
  switch (server.state) {
    case "starting":
      return { text: "torchdet-lint", detail: `starting${where}`, severity: "information", busy: true };
    case "running":
      return { text: `torchdet-lint ${server.version || ""}`.trim(), detail: `running${where}`, severity: "information", busy: false };
    case "error":
      return { text: "torchdet-lint: error", detail: server.message || "the server did not start", severity: "error", busy: false };
    default:
      return { text: "torchdet-lint: stopped", detail: server.message || "the server is not running", severity: "warning", busy: false };
  }
}

module.exports = { STATES, describeStatus };
