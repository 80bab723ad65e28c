// The client, run against a stand-in for VS Code's API (there is no VS Code here):
// it starts `wf lsp` (or the configured command) over stdio for .wf documents, says
// how to fix a server that does not start, and restarts when its settings change.
// Prints a JSON report that tests/test_editor_extension.py checks.
"use strict";

const Module = require("module");
const path = require("path");

const settings = JSON.parse(process.argv[2] || "{}");
const failStart = process.argv[3] === "fail";
const report = { clients: [], errors: [], commands: [], stopped: 0 };
let configurationListener;

const vscode = {
  workspace: {
    getConfiguration: () => ({ get: (key, fallback) => (key in settings ? settings[key] : fallback) }),
    createFileSystemWatcher: (glob) => ({ glob }),
    onDidChangeConfiguration: (listener) => {
      configurationListener = listener;
      return { dispose() {} };
    },
  },
  window: { showErrorMessage: (message) => report.errors.push(message) },
  commands: {
    registerCommand: (name) => {
      report.commands.push(name);
      return { dispose() {} };
    },
  },
};

class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    report.clients.push({
      id,
      command: serverOptions.command,
      args: serverOptions.args,
      transport: serverOptions.transport,
      languages: clientOptions.documentSelector.map((s) => s.language),
      watched: clientOptions.synchronize.fileEvents.glob,
    });
  }
  async start() {
    if (failStart) throw new Error("spawn wf ENOENT");
  }
  async stop() {
    report.stopped += 1;
  }
}

const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === "vscode") return vscode;
  if (request === "vscode-languageclient/node") return { LanguageClient, TransportKind: { stdio: 0 } };
  return load.call(this, request, parent, isMain);
};

(async () => {
  const extension = require(path.join(__dirname, "..", "extension.js"));
  await extension.activate({ subscriptions: [] });
  configurationListener({ affectsConfiguration: (section) => section === "wflang.server" });
  await new Promise((resolve) => setImmediate(resolve));
  await extension.deactivate();
  process.stdout.write(JSON.stringify(report));
})();
