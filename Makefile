# Two commands set everything up on a fresh machine with Python >= 3.11 and make:
#   make run    install, then run the main job on the embedded default
#   make test   install, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= out/main

.PHONY: run test bench kernels clean help

help:
	@echo "make run     install, then run the main job (writes $(OUT)/)"
	@echo "make test    install, then run the whole test suite"
	@echo "make bench   install, then run the benchmarks and record them"
	@echo "make kernels build the CUDA programs in gpu_kernels/ (needs nvcc)"

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(STAMP)
	$(BIN)/hostlink run --out $(OUT)

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	@for f in tests/bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

kernels:
	$(MAKE) -C gpu_kernels

clean:
	rm -rf $(VENV) out .pytest_cache
