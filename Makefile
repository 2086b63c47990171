# ssdbench — top-level targets. `make demo` and `make test` work on a fresh Debian machine
# (run as root to let them install apt packages; elsewhere they say what is missing).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# when this make started: the end of `make test` says how long it took in all (installs too)
TEST_T0 := $(shell date +%s)

.PHONY: all deps venv lint test test-unit test-ui test-integration test-e2e test-image-python demo demo-pts bench \
        dev-image image qemu netboot buildroot-% clean

all: test

deps:
	scripts/install-deps.sh

$(STAMP): tui/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'tui[test]'
	touch $@

venv: $(STAMP)

lint: venv
	$(VENV)/bin/ruff check tui/src tests scripts simdrive
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The README's test command: every tier (unit, UI, integration on loop devices, e2e in QEMU,
# the Buildroot checks), then the unit and UI tests again on the image's Python pins; the QEMU
# tier in a lane of its own beside the rest (scripts/run-tests.sh).
test: deps venv lint
	SSDBENCH_TEST_T0=$(TEST_T0) scripts/run-tests.sh $(PYTEST_ARGS)

test-unit: venv
	$(PY) -m pytest $(PYTEST_ARGS) tests/unit
test-ui: venv
	$(PY) -m pytest $(PYTEST_ARGS) tests/ui
test-integration: deps venv
	$(PY) -m pytest $(PYTEST_ARGS) tests/integration
test-e2e: deps venv
	$(PY) -m pytest $(PYTEST_ARGS) tests/e2e
# Unit + UI tests with the release image's Python package versions (scripts/image-pins.txt)
# on the newest CPython this machine can get (docs/buildroot.md, "Python versions").
test-image-python: deps
	scripts/test-image-python.sh $(PYTEST_ARGS)

# The main job: the appliance in QEMU testing virtual drives; results in demo-results/.
demo: deps venv
	scripts/demo

# The SNIA PTS plans on simulated SSDs on this machine (docs/pts.md); results in
# demo-results/pts/.
demo-pts: deps venv
	scripts/demo-pts

# Speed and memory figures as name=value lines (not timed tests).
bench: deps venv
	$(PY) scripts/bench.py

dev-image: deps venv
	scripts/build-dev-image.sh

qemu: dev-image
	scripts/run-qemu.sh

# What a lab's boot server hands out (docs/lab.md "Network boot"): build/netboot/;
# NETBOOT_ARGS: scripts/netboot.sh options, e.g. --append "ssdbench.config=http://...".
netboot: dev-image
	scripts/netboot.sh $(NETBOOT_ARGS)

# The release image (Buildroot; downloads its sources).
image:
	scripts/build-image.sh

# Forward Buildroot targets (menuconfig, savedefconfig, linux-menuconfig, show-info, ...).
buildroot-%:
	scripts/build-image.sh $*

clean:
	rm -rf $(VENV) build demo-results .pytest_cache .mypy_cache .ruff_cache
