# aisp — common tasks. `make help` lists them.
PYTHON ?= python3
TARGETS ?= ch07
# where `bench run` puts run directories (its --output-dir default); `make clean-runs` empties it
RUNS_DIR ?= artifacts/runs
# `make clean`: build outputs and caches, which the next build or run recreates
CLEAN_PATHS = build .pytest_cache

.PHONY: help install cuda test bench lint clean clean-runs

help:
	@echo "make install   install aisp and its dependencies (editable) with the dev extra"
	@echo "make cuda      prebuild every chapter .cu file for this machine's GPU (build/cuda)"
	@echo "make test      run the CPU test suite"
	@echo "make bench     run the benchmarks of TARGETS (default ch07) on this GPU"
	@echo "make lint      byte-compile everything (catches syntax errors)"
	@echo "make clean     delete build outputs and caches (build/, __pycache__, .pytest_cache);"
	@echo "               lists them first; never touches run directories"
	@echo "make clean-runs  list the run directories in $(RUNS_DIR) (measured results) and"
	@echo "               delete them after you confirm (YES=1 make clean-runs: no question)"

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
	@found=$$( { for path in $(CLEAN_PATHS); do [ -e "$$path" ] && echo "$$path"; done; \
	    find . -path './.*' -prune -o -path './$(RUNS_DIR)' -prune -o \
	         -type d -name __pycache__ -print -prune; } ); \
	if [ -z "$$found" ]; then echo "make clean: nothing to delete"; exit 0; fi; \
	echo "make clean: deleting build outputs and caches:"; \
	echo "$$found" | sed 's|^\./||; s|^|  |'; \
	echo "$$found" | while IFS= read -r path; do rm -rf -- "$$path"; done; \
	if [ -d "$(RUNS_DIR)" ]; then echo "kept $(RUNS_DIR) (measured results; make clean-runs deletes them)"; fi

clean-runs:
	@runs="$(strip $(RUNS_DIR))"; \
	if [ -z "$$runs" ]; then echo "make clean-runs: RUNS_DIR is empty" >&2; exit 2; fi; \
	if [ -z "$$(find "$$runs" -mindepth 1 -maxdepth 1 2>/dev/null)" ]; then \
	    echo "make clean-runs: no run directories in $$runs"; exit 0; fi; \
	count=$$(find "$$runs" -mindepth 1 -maxdepth 1 | wc -l | tr -d ' '); \
	noun=directories; [ "$$count" = 1 ] && noun=directory; \
	echo "run directories in $$runs (measured results: results.json/.jsonl/.csv, logs, profiles):"; \
	find "$$runs" -mindepth 1 -maxdepth 1 -exec du -sh {} + | sort -k2 | sed 's|^|  |'; \
	if [ "$(YES)" != "1" ]; then \
	    printf 'delete %s run %s? [y/N] ' "$$count" "$$noun"; \
	    if ! read answer; then echo; \
	        echo "no answer (not a terminal?): nothing deleted; YES=1 make clean-runs deletes without asking" >&2; \
	        exit 1; fi; \
	    case "$$answer" in [yY]|[yY][eE][sS]) ;; *) echo "nothing deleted"; exit 0;; esac; \
	fi; \
	find "$$runs" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; \
	echo "deleted $$count run $$noun from $$runs"
