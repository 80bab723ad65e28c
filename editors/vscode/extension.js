// The wflang extension's client: starts the language server (`wf lsp`, over stdio)
// and restarts it when its settings change. Highlighting, snippets and the language
// configuration are declared in package.json and need no code.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

const SECTION = "wflang";
let client;

/** How to start the server, from the user's settings (`wflang.server.*`). */
function serverOptions(settings) {
  const command = settings.get("server.path", "wf") || "wf";
  const args = settings.get("server.args", ["lsp"]);
  return { command, args, transport: TransportKind.stdio };
}

function clientOptions() {
  return {
    documentSelector: [{ scheme: "file", language: "wflang" }, { scheme: "untitled", language: "wflang" }],
    synchronize: {
      // the server reads [tool.wflang] and the files a workflow imports
      fileEvents: vscode.workspace.createFileSystemWatcher("**/{*.wf,pyproject.toml}"),
    },
  };
}

async function start() {
  const settings = vscode.workspace.getConfiguration(SECTION);
  if (!settings.get("server.enabled", true)) return;
  const options = serverOptions(settings);
  client = new LanguageClient("wflang", "wflang language server", options, clientOptions());
  try {
    await client.start();
  } catch (err) {
    client = undefined;
    vscode.window.showErrorMessage(
      `wflang: could not start the language server with '${options.command} ${options.args.join(" ")}' ` +
        `(${err && err.message ? err.message : err}). Install wflang (pip install wflang) or set ` +
        "'wflang.server.path' to your environment's wf.",
    );
  }
}

async function stop() {
  if (client === undefined) return;
  const running = client;
  client = undefined;
  await running.stop();
}

async function restart() {
  await stop();
  await start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("wflang.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) restart();
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, serverOptions };
