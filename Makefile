# Two commands do everything on a fresh machine with only python3:
#   make demo   creates .venv, installs wflang, runs the main example in memory,
#               then durably on the embedded SQLite store (no server)
#   make test   installs the dev extras, then runs ruff, mypy --strict and pytest
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck unit bench clean editor-deps vsix editor-screenshots console-screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEVSTAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,postgres]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/wf fmt --check examples/
	$(BIN)/wf check examples/
	$(BIN)/wf parse examples/order_saga.wf --summary
	$(BIN)/wf table examples/order_saga.wf | head -n 12
	$(BIN)/wf gen python examples -o examples/typed --check
	$(BIN)/wf gen json-schema examples -o examples/schema --check
	$(BIN)/wf gen typescript examples -o examples/typescript --check
	PYTHONPATH=examples $(BIN)/wf run examples/order_saga.wf --input @examples/order_input.json --handlers examples/order_handlers.py
	WF=$(BIN)/wf bash examples/durable_demo.sh
	WF=$(BIN)/wf bash examples/records_demo.sh

lint: $(DEVSTAMP)
	$(BIN)/ruff check wflang tests bench
	$(BIN)/ruff format --check wflang tests bench

typecheck: $(DEVSTAMP)
	$(BIN)/mypy

unit: $(DEVSTAMP)
	$(BIN)/pytest

test: lint typecheck unit

# The VS Code extension (editors/vscode): its npm packages, from the lock file (the
# tests of its grammar and client install them too), and its installable .vsix.
EXT    := editors/vscode
EXTSTAMP := $(EXT)/node_modules/.package-lock.json
VSIX   ?= dist/wflang.vsix

$(EXTSTAMP): $(EXT)/package.json $(EXT)/package-lock.json
	cd $(EXT) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

editor-deps: $(EXTSTAMP)

vsix: $(EXTSTAMP)
	mkdir -p $(dir $(abspath $(VSIX)))
	cd $(EXT) && npx --no-install vsce package --allow-missing-repository --out $(abspath $(VSIX)) </dev/null

editor-screenshots: $(EXTSTAMP)
	bash $(EXT)/test/screenshots.sh

# The console's screenshots in docs/console/: the browser tests take them (headless
# Chromium, tests/browser/) and copy the ones the docs show there.
console-screenshots: $(DEVSTAMP)
	WFLANG_UPDATE_SCREENSHOTS=1 $(BIN)/pytest tests/browser

bench: $(DEVSTAMP)
	$(BIN)/python bench/parse.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis $(EXT)/node_modules dist
