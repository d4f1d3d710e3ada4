# DashFloat: every set-up step lives here, so a fresh clone needs only `make run` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-stamp

# install-user puts `dashfloat` on PATH and its man page where man finds it, as links
# into this checkout's .venv and man/ (so they follow `git pull`; `make` rebuilds the venv)
PREFIX ?= $(HOME)/.local
BINDIR  = $(PREFIX)/bin
MAN1DIR = $(PREFIX)/share/man/man1

.PHONY: install run test test-litellm oracle mutation lint bench man pyz exe clean install-user uninstall-user

$(STAMP): setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/dashfloat $(ARGS)

# the end-to-end tests and the rest side by side (tests/run_suite.py); PYTEST_ARGS go to both,
# or name tests to run just those
test: $(STAMP)
	$(PY) tests/run_suite.py -q -rs $(PYTEST_ARGS)

# DashFloat against a real gateway: the LiteLLM proxy with scripted models, on 127.0.0.1.
# Installs litellm[proxy] into the venv (large; `make test` skips these tests without it).
test-litellm: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check 'litellm[proxy]'
	DASHFLOAT_REQUIRE_LITELLM=1 $(PY) -m pytest -q -rs tests/e2e/test_litellm.py $(PYTEST_ARGS)

# The screen oracle at length: 2,000 randomised sessions (400 seeds x 5 terminals, ~570,000
# frames, ~30 min), every frame compared with a full repaint (make test runs 40 of them).
oracle: $(STAMP)
	DASHFLOAT_ORACLE_SEEDS=400 $(PY) -m pytest -q tests/widget/test_screen_oracle.py $(PYTEST_ARGS)

# Mutation testing of llm/, tools/, the agent and the conversation (not part of `make test`:
# a day of CPU from cold, minutes for what changed: results are kept in tests/mutation/results.json). MUTATION_ARGS="dashfloat/tools/edit.py"
# tries one module; --report reprints the last results. tests/mutation/run_mutation.py says more.
mutation: $(STAMP)
	nice -n 19 $(PY) tests/mutation/run_mutation.py $(MUTATION_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check --select E,F,W,I,UP,B --ignore E501 dashfloat tests
	$(PY) -m dashfloat.manpage --check man/dashfloat.1
	$(PY) -m dashfloat.events --check schema/dashfloat-events.schema.json
	@if command -v groff >/dev/null; then \
	  out=$$(groff -ww -man -Tutf8 man/dashfloat.1 2>&1 >/dev/null); \
	  if [ -n "$$out" ]; then echo "groff warnings:"; echo "$$out"; exit 1; fi; \
	else echo "groff not installed: man page render check skipped"; fi

man: $(STAMP)
	$(PY) -m dashfloat.manpage > man/dashfloat.1
	$(PY) -m dashfloat.events > schema/dashfloat-events.schema.json

install-user: $(STAMP)
	@mkdir -p $(BINDIR) $(MAN1DIR)
	@for pair in "$(abspath $(VENV))/bin/dashfloat $(BINDIR)/dashfloat" \
	             "$(abspath man/dashfloat.1) $(MAN1DIR)/dashfloat.1"; do \
	  set -- $$pair; \
	  if [ -e "$$2" ] || [ -L "$$2" ]; then \
	    if [ "$$(readlink "$$2")" != "$$1" ]; then \
	      echo "$$2 exists and is not this checkout's: remove it first (or set PREFIX=...)"; exit 1; \
	    fi; \
	  fi; \
	  ln -sfn "$$1" "$$2" && echo "$$2 -> $$1"; \
	done
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; \
	  *) echo "$(BINDIR) is not on your PATH: add it, e.g. in ~/.profile: export PATH=\"$(BINDIR):\$$PATH\"";; \
	esac

uninstall-user:
	@for pair in "$(abspath $(VENV))/bin/dashfloat $(BINDIR)/dashfloat" \
	             "$(abspath man/dashfloat.1) $(MAN1DIR)/dashfloat.1"; do \
	  set -- $$pair; \
	  if [ "$$(readlink "$$2")" = "$$1" ]; then rm -f "$$2" && echo "removed $$2"; fi; \
	done

# One file to copy to a server with Python >= 3.11 and nothing else (README, "On a server"):
# DashFloat and its dependencies, pure Python, byte-identical from one commit to the next.
pyz: $(STAMP)
	$(PY) tests/pyzbuild.py dist/dashfloat.pyz

# One executable for a Linux server without Python 3.11 (README, "On a server without
# Python"): PyInstaller one-file, installed pinned into the venv here (not a test extra).
# Prints the size and the glibc it needs.
exe: $(STAMP)
	$(PY) tests/exebuild.py --install dist/dashfloat-$$(uname -m)

bench: $(STAMP)
	$(PY) tests/bench/run_bench.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
