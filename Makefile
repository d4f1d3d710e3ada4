# DashFloat: every set-up step lives here, so a fresh clone needs only `make run` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-stamp

.PHONY: install run test test-litellm lint bench man clean

$(STAMP): setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/dashfloat $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

# DashFloat against a real gateway: the LiteLLM proxy with scripted models, on 127.0.0.1.
# Installs litellm[proxy] into the venv (large; `make test` skips these tests without it).
test-litellm: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check 'litellm[proxy]'
	DASHFLOAT_REQUIRE_LITELLM=1 $(PY) -m pytest -q -rs tests/e2e/test_litellm.py $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check --select E,F,W,I,UP,B --ignore E501 dashfloat tests
	$(PY) -m dashfloat.manpage --check man/dashfloat.1
	@if command -v groff >/dev/null; then \
	  out=$$(groff -ww -man -Tutf8 man/dashfloat.1 2>&1 >/dev/null); \
	  if [ -n "$$out" ]; then echo "groff warnings:"; echo "$$out"; exit 1; fi; \
	else echo "groff not installed: man page render check skipped"; fi

man: $(STAMP)
	$(PY) -m dashfloat.manpage > man/dashfloat.1

bench: $(STAMP)
	$(PY) tests/bench/run_bench.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
