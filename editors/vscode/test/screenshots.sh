#!/usr/bin/env bash
# The pictures of docs/editors/: examples highlighted by the extension's TextMate
# grammar (test/highlight.js, VS Code's Dark Modern colours), taken by headless
# Chromium (Debian: apt-get install chromium). Run by `make editor-screenshots`.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/editors
mkdir -p "$out"
page=$(mktemp --suffix=.html)
trap 'rm -f "$page"' EXIT
shot() {  # NAME FILE FIRST LAST
    node editors/vscode/test/highlight.js "$2" "$3" "$4" > "$page"
    height=$(( ($4 - $3 + 1) * 20 + 60 ))
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=960,"$height" --screenshot="$out/$1.png" "file://$page" 2>/dev/null
}
shot declarations examples/pricing.wf 1 36
shot tasks examples/order_saga.wf 45 89
shot waits examples/incident_escalation.wf 60 100
shot parallel-and-map examples/kyc_check.wf 37 80
