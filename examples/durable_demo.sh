#!/usr/bin/env bash
# Durable execution on the embedded SQLite store, no server: `make demo` runs this.
#
# Deploys payment_retry.wf, starts two payments, runs a worker, sends a signal
# (twice: the second is ignored), fires the settle-delay timer instead of
# waiting two minutes, and prints both histories.
set -euo pipefail
WF=${WF:-wf}
STORE=${WFLANG_STORE:-sqlite:///.wflang/demo.db}
export PYTHONPATH="$(dirname "$0")${PYTHONPATH:+:$PYTHONPATH}"
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

rm -f .wflang/demo.db .wflang/demo.db-wal .wflang/demo.db-shm
say $WF store migrate --store "$STORE"
say $WF deploy examples/payment_retry.wf --store "$STORE"
customer='{"id": "c-7", "name": "Ada Lovelace", "email": "ada@example.com", "tier": "gold"}'
declined='{"id": "c-declined", "name": "Charles Babbage", "email": "cb@example.com", "tier": "standard"}'
say $WF start payment_retry --id pay-ok --store "$STORE" \
    --input "{\"payment_id\": \"pay-ok\", \"customer\": $customer, \"amount\": 42.50}"
say $WF start payment_retry --id pay-declined --store "$STORE" \
    --input "{\"payment_id\": \"pay-declined\", \"customer\": $declined, \"amount\": 19.99}"
say $WF worker --once --handlers payment_handlers --store "$STORE"
say $WF status pay-declined --store "$STORE"
say $WF signal pay-declined card_updated --key update-1 --store "$STORE" \
    --payload '{"method_id": "card-2", "updated_by": "customer"}'
say $WF signal pay-declined card_updated --key update-1 --store "$STORE" \
    --payload '{"method_id": "card-2", "updated_by": "customer"}'
say $WF worker --once --handlers payment_handlers --store "$STORE"
say $WF ops fire-timers pay-declined --reason "demo: skip the two-minute settle delay" \
    --store "$STORE"
say $WF worker --once --handlers payment_handlers --store "$STORE"
say $WF history pay-ok --store "$STORE"
say $WF history pay-declined --store "$STORE"
say $WF list --store "$STORE"
say $WF versions --store "$STORE"
