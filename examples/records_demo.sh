#!/usr/bin/env bash
# Records of what happened, on the embedded SQLite store: `make demo` runs this.
#
# Deploys invoice_approval.wf, starts two invoices, runs a worker (each is priced,
# then waits for its approval: `waiting`, not `running`), approves one, and prints
# what each of its steps changed in the context (old -> new), then the instances
# still waiting and those that have not moved for a while.
set -euo pipefail
WF=${WF:-wf}
STORE=${WFLANG_STORE:-sqlite:///.wflang/records-demo.db}
HANDLERS="$(dirname "$0")/invoice_handlers.py"
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

rm -f .wflang/records-demo.db .wflang/records-demo.db-wal .wflang/records-demo.db-shm
say $WF store migrate --store "$STORE"
say $WF deploy "$(dirname "$0")/invoice_approval.wf" --store "$STORE"
say $WF start invoice_approval --id inv-1 --store "$STORE" \
    --input '{"invoice_id": "inv-1", "amount": 100.50}'
say $WF start invoice_approval --id inv-2 --store "$STORE" \
    --input '{"invoice_id": "inv-2", "amount": 19.99}'
say $WF worker --once --handlers "$HANDLERS" --store "$STORE"
say $WF list --status waiting --store "$STORE"
say $WF signal inv-1 approval --store "$STORE" \
    --payload '{"by": "ada", "at": "2026-12-01T10:00:00Z"}'
say $WF worker --once --handlers "$HANDLERS" --store "$STORE"
say $WF history inv-1 --changes --store "$STORE"
say $WF list --waiting-on signal:approval --store "$STORE"
say $WF list --stuck 0s --store "$STORE"
# `make demo` fails if the records are not there
$WF history inv-1 --changes --store "$STORE" | grep -q -- '~ approved_by: null -> "ada"'
[ "$($WF list --waiting-on signal:approval --store "$STORE" | cut -d' ' -f1)" = inv-2 ]
