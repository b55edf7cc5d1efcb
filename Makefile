# aisp — common tasks. `make help` lists them.
PYTHON ?= python3
TARGETS ?= ch07

.PHONY: help install cuda test bench lint clean

help:
	@echo "make install   install aisp and its dependencies (editable) with the dev extra"
	@echo "make cuda      prebuild every chapter .cu file for this machine's GPU (build/cuda)"
	@echo "make test      run the CPU test suite"
	@echo "make bench     run the benchmarks of TARGETS (default ch07) on this GPU"
	@echo "make lint      byte-compile everything (catches syntax errors)"

install:
	$(PYTHON) -m pip install -e '.[dev]'

cuda:
	$(PYTHON) -c "from core.cuda import build_many, sources; \
	r = build_many(sources()); bad = [str(v) for v in r.values() if isinstance(v, Exception)]; \
	print('\n\n'.join(bad) or f'built {len(r)} files'); raise SystemExit(1 if bad else 0)"

test:
	$(PYTHON) -m pytest -q

bench:
	$(PYTHON) -m cli.aisp bench run --targets $(TARGETS)

lint:
	$(PYTHON) -m compileall -q cli core tests ch[0-9][0-9]

clean:
	rm -rf build artifacts .pytest_cache
