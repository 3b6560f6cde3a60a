# Every target creates .venv itself (idempotently) and installs the package with its test extra.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv test demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --durations=20 tests

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

demo: $(STAMP)
	$(PY) -m train quadrilaterals --config demo --workdir runs/demo --resume

bench: $(STAMP)
	$(PY) -m bench.run_all
