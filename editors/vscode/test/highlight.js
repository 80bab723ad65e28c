// Renders .wf files as HTML highlighted by the extension's TextMate grammar, in the
// colours of VS Code's Dark Modern theme: the pictures of docs/editors/ (make
// editor-screenshots) are these pages, taken by headless Chromium.
//
// node highlight.js FILE [FIRST_LINE LAST_LINE] > page.html
"use strict";

const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");

// The colours of VS Code's Dark Modern (Dark+) theme, by scope prefix.
const THEME = [
  ["comment", "#6A9955"],
  ["keyword.other.suppression", "#C586C0"],
  ["constant.other.rule-code", "#4FC1FF"],
  ["string", "#CE9178"],
  ["constant.character.escape", "#D7BA7D"],
  ["invalid", "#F44747"],
  ["constant.numeric", "#B5CEA8"],
  ["constant.language", "#569CD6"],
  ["keyword.control", "#C586C0"],
  ["keyword.operator.word", "#569CD6"],
  ["keyword.operator", "#D4D4D4"],
  ["keyword", "#569CD6"],
  ["storage", "#569CD6"],
  ["support.type", "#4EC9B0"],
  ["entity.name.type", "#4EC9B0"],
  ["entity.name.namespace", "#4EC9B0"],
  ["support.function", "#DCDCAA"],
  ["entity.name.function", "#DCDCAA"],
  ["variable.language", "#569CD6"],
  ["variable.other.enummember", "#4FC1FF"],
  ["variable.parameter", "#9CDCFE"],
  ["variable", "#9CDCFE"],
];
const FOREGROUND = "#CCCCCC";
const BACKGROUND = "#1F1F1F";

function colour(scopes) {
  for (let i = scopes.length - 1; i >= 0; i--) {
    let best = null;
    for (const [prefix, value] of THEME) {
      const scope = scopes[i];
      if ((scope === prefix || scope.startsWith(prefix + ".")) && (!best || prefix.length > best[0].length)) {
        best = [prefix, value];
      }
    }
    if (best) return best[1];
  }
  return FOREGROUND;
}

function escape(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function main() {
  const [file, first, last] = process.argv.slice(2);
  const text = fs.readFileSync(file, "utf8");
  const run = spawnSync(process.execPath, [path.join(__dirname, "tokenize.js")], {
    input: JSON.stringify({ [file]: text }),
    maxBuffer: 1 << 28,
  });
  if (run.status !== 0) throw new Error(run.stderr.toString());
  let lines = JSON.parse(run.stdout.toString())[file];
  const from = first ? Number(first) : 1;
  lines = lines.slice(from - 1, last ? Number(last) : lines.length);
  while (lines.length && lines[lines.length - 1].every(([t]) => !t.trim())) lines.pop();
  const width = String(from + lines.length - 1).length;
  const body = lines
    .map((tokens, i) => {
      const number = `<span class="n">${String(from + i).padStart(width)}</span>`;
      const code = tokens
        .map(([t, scopes]) => `<span style="color:${colour(scopes)}">${escape(t)}</span>`)
        .join("");
      return number + code;
    })
    .join("\n");
  process.stdout.write(`<!doctype html>
<html><head><meta charset="utf-8"><title>${escape(path.basename(file))}</title><style>
html, body { margin: 0; background: ${BACKGROUND}; }
.tab { font: 13px system-ui, sans-serif; color: #FFFFFF; background: ${BACKGROUND};
       border-top: 1px solid #0078D4; display: inline-block; padding: 8px 16px; }
.bar { background: #181818; border-bottom: 1px solid #2B2B2B; }
pre { margin: 0; padding: 10px 0; color: ${FOREGROUND}; font: 14px/20px "DejaVu Sans Mono", monospace; }
.n { color: #6E7681; display: inline-block; padding: 0 24px 0 16px; }
</style></head><body>
<div class="bar"><span class="tab">${escape(path.basename(file))}</span></div>
<pre>${body}</pre>
</body></html>
`);
}

main();
