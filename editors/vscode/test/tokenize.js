// Tokenizes documents with the extension's TextMate grammar, as VS Code does
// (vscode-textmate on the Oniguruma regular expressions of vscode-oniguruma).
//
// Reads a JSON object {name: text} on standard input; writes {name: lines}, where
// each line is a list of [token text, [scopes...]] (the root scope source.wf left
// out). tests/test_editor_grammar.py drives it: the snapshots of the examples, the
// keywords of the Lark grammar, the snippets.
"use strict";

const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const GRAMMAR = path.join(__dirname, "..", "syntaxes", "wflang.tmLanguage.json");
const ROOT = "source.wf";

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== ROOT) return null;
      return vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, "utf8"), GRAMMAR);
    },
  });
  return registry.loadGrammar(ROOT);
}

function tokenize(grammar, text) {
  let state = vsctm.INITIAL;
  const lines = [];
  for (const line of text.split(/\r?\n/)) {
    const result = grammar.tokenizeLine(line, state);
    lines.push(
      result.tokens.map((t) => [
        line.substring(t.startIndex, t.endIndex),
        t.scopes.filter((s) => s !== ROOT),
      ]),
    );
    state = result.ruleStack;
  }
  return lines;
}

async function main() {
  const documents = JSON.parse(fs.readFileSync(0, "utf8"));
  const grammar = await loadGrammar();
  const out = {};
  for (const [name, text] of Object.entries(documents)) out[name] = tokenize(grammar, text);
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(`tokenize.js: ${err.stack || err}\n`);
  process.exit(2);
});
