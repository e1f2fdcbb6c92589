# pcstream — the front door. `make help` lists the targets.
#
# Two commands set up everything from a fresh checkout:
#   make demo   installs everything and runs the main job
#   make test   installs everything and runs every test
# `make install` is idempotent: it installs system packages only when missing, creates .venv once,
# and rebuilds the engine incrementally.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Engine tests check every FTL invariant on a schedule.
# pytest workers: one more than the cores, since many tests wait on the programs they record; a
# test file stays on one worker (--dist loadfile), so its module fixtures are built once.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
CARGO_TEST_FEATURES := --features pcstream-core/verify

.PHONY: help install system-deps venv engine demo test test-rust test-python bench policy-table fmt lint clean browser

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

install: engine ## Install everything: system packages if missing, .venv, Python deps, the engine

system-deps: ## Install missing system packages (apt-get, only when something is missing)
	@missing=""; \
	command -v cc >/dev/null 2>&1 || missing="$$missing build-essential"; \
	$(PYTHON) -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	[ -e /usr/include/libaio.h ] || missing="$$missing libaio-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	[ -e /usr/include/zstd.h ] || missing="$$missing libzstd-dev"; \
	command -v gawk >/dev/null 2>&1 || missing="$$missing gawk"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@command -v $(CARGO) >/dev/null 2>&1 || { \
	  echo "error: cargo not found; install Rust (stable) from https://rustup.rs and re-run"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "error: $(PYTHON) is older than 3.11; the pinned test tools need 3.11+ (set PYTHON=...)"; exit 1; }

venv: system-deps $(BIN)/.requirements ## Create .venv and install the pinned Python packages

$(BIN)/python: | system-deps
	$(PYTHON) -m venv $(VENV)

$(BIN)/.requirements: requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install -q -r requirements.lock
	@touch $@

engine: venv ## Build the Rust engine into .venv (maturin develop --release; incremental)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH \
	  $(BIN)/maturin develop --release

demo: install ## Install everything, then run the main job (pcstream demo)
	$(BIN)/pcstream demo

test: install test-rust test-python ## Install everything, then run every test (Rust and Python, lints included)

test-rust: ## Rust: format check, clippy (warnings are errors), tests with invariant checks
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) test --workspace $(CARGO_TEST_FEATURES)

browser: ## Install Chromium (apt package chromium) if missing: the report test opens the HTML in it
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "installing system packages: chromium"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

test-python: install browser ## Python: ruff lint and format check, pytest
	$(BIN)/ruff check python tests
	$(BIN)/ruff format --check python tests
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=25 tests/python

bench: install ## Benchmarks: engine, engine vs a bare C loop, fs model (map), importers, pcstream bench, every policy's cost per write, compare on the suite, record and live hints per write
	$(CARGO) bench -p pcstream-trace --bench engine
	$(CARGO) bench -p pcstream-trace --bench vs_c
	$(CARGO) bench -p pcstream-trace --bench map
	$(CARGO) bench -p pcstream-trace --bench import
	$(CARGO) bench -p pcstream-trace --bench record
	$(BIN)/pcstream bench --no-timing
	$(BIN)/pcstream bench --timing
	$(CARGO) run --release -p pcstream-core --example policy_cost
	$(BIN)/python tools/bench_compare.py
	$(BIN)/python tools/bench_record.py
	$(BIN)/python tools/bench_record.py --repeat 5 --depth 6 --capture

policy-table: ## Regenerate the WAF-per-policy table of docs/POLICIES.md from the gen workloads
	$(CARGO) run --release -p pcstream-trace --example policy_table -- --update docs/POLICIES.md

fmt: ## Format Rust and Python sources in place
	$(CARGO) fmt --all
	$(BIN)/ruff check --fix python tests
	$(BIN)/ruff format python tests

lint: ## Lint without changing anything (rustfmt, clippy, ruff)
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests
	$(BIN)/ruff format --check python tests

clean: ## Remove build outputs, .venv, caches and the demo directory
	$(CARGO) clean
	rm -rf $(VENV) .pytest_cache .ruff_cache pcstream-demo python/pcstream/_engine*.so
	find python tests -name __pycache__ -type d -prune -exec rm -rf {} +

# --- record: the LD_PRELOAD shim, built into the Python package (python/pcstream/_shim/) ---
SHIM_SO := python/pcstream/_shim/pcshim.so
# -flto: the shim's files (shim/src/shim.h lists them) are split by topic, but its write hot path
# crosses them (write hook -> rec_write -> push_record -> my_buf, now_ns, lock_buf; signature ->
# segs, walk_fp -> find_seg, mix64, seen_insert). Compiled separately those calls stay out of line;
# with link-time optimisation gcc inlines across the files as it did when the shim was one file
# (checked: the write hooks, rec_write, push_record, signature and the walkers compile to code of
# the same size and call graph as the one-file build). Preferred to a unity build (one file that
# #includes the others), so that every file compiles on its own and keeps its statics private,
# and to static inline helpers in shim.h, which would move most of util.c and logs.c into it.
SHIM_CFLAGS := -O2 -g -fPIC -shared -fno-omit-frame-pointer -fvisibility=hidden -flto -Wall -Wextra -Werror -Ishim/include
SHIM_SRCS := $(sort $(wildcard shim/src/*.c))
SHIM_HDRS := $(wildcard shim/src/*.h) shim/include/pcshim.h shim/include/pchash.h

.PHONY: shim
install: shim
shim: $(SHIM_SO) ## Build the record shim (C, LD_PRELOAD) into python/pcstream/_shim/

$(SHIM_SO): $(SHIM_SRCS) $(SHIM_HDRS) | system-deps
	@mkdir -p $(dir $@)
	cc $(SHIM_CFLAGS) -o $@ $(SHIM_SRCS) -ldl -lpthread

.PHONY: rocksdb-tools purity bench-record
rocksdb-tools: ## Install db_bench (Debian rocksdb-tools) for the record purity test, if missing
	@command -v db_bench >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq rocksdb-tools; }

purity: install rocksdb-tools ## Record db_bench with every PC method; purity of the signatures
	$(BIN)/python -m pcstream.report.purity --run

bench-record: install ## Per-write overhead of pcstream record by PC method, of --via bpf and of live hints (median ns/write)
	$(BIN)/python tools/bench_record.py

# --- validation of the file-system model against a real ext4 (root: loop device, BPF or tracefs) ---
# The aged regime: the 'medium' SSD's logical size (1.4 GiB), aged to 90 % of its blocks by the
# model's aging plan (replayed on the real ext4 too), in both discard modes; the workloads are
# sized to run in the 10 % left. Each table also goes to $(VALIDATE_DIR)/NAME.txt for
# docs/FSMODEL.md.
VALIDATE_DIR := validate-runs
VALIDATE_ARGS := --ssd medium --age 0.9
DB_BENCH_VALIDATE := --db=./rdb --benchmarks=fillrandom,overwrite --num=50000 --value_size=400 \
  --compression_type=none --write_buffer_size=4194304 --target_file_size_base=4194304 \
  --max_bytes_for_level_base=16777216 --duration=45 --benchmark_write_rate_limit=8000000 \
  --seed=1 --progress_reports=false

.PHONY: validate-fs
validate-fs: install rocksdb-tools ## Model vs real ext4 (root), aged, discard and nodiscard: synthetic workload and db_bench (docs/FSMODEL.md)
	@mkdir -p $(VALIDATE_DIR)
	for mode in discard nodiscard; do \
	  COLUMNS=150 NO_COLOR=1 $(BIN)/pcstream validate --run $(VALIDATE_ARGS) --mount-opts $$mode \
	    -o $(VALIDATE_DIR)/synthetic-$$mode -- $(abspath $(BIN))/python $(abspath tools/fs_workload.py) \
	    --total 1536M --live 60M --db 32M --rate 64M 2>&1 | tee $(VALIDATE_DIR)/synthetic-$$mode.txt; \
	  COLUMNS=150 NO_COLOR=1 $(BIN)/pcstream validate --run $(VALIDATE_ARGS) --mount-opts $$mode \
	    -o $(VALIDATE_DIR)/rocksdb-$$mode -- db_bench $(DB_BENCH_VALIDATE) 2>&1 | tee $(VALIDATE_DIR)/rocksdb-$$mode.txt; \
	done

.PHONY: suite results bench-compare tables
bench-compare: install ## Wall time of compare on the bundled suite, all policies (median of 3; target < 2 min)
	$(BIN)/python tools/bench_compare.py

suite: install ## Record the bundled suite (root: installs the programs): traces/*.parquet + manifest, then results
	$(BIN)/pcstream workload suite --record -o traces
	$(MAKE) results

# The GC-bound workloads (baseline WAF >= 1.3 in docs/RESULTS.md), recorded a second time (as root,
# on an otherwise idle machine: load lowers what the time-bound recipes write) and mapped as the
# suite is; pcstream's table learned on each goes to traces/tables/ (python/pcstream/workloads/tables.py).
TABLE_WORKLOADS := cassandra,fileserver,fio-pareto0.5,fio-uniform,mixed1,mixed2,pgbench,rocksdb-fr,rocksdb-ur,sqlite-tpcc,sqlite-tpcc-wal
SECOND_DIR := target/second
tables: install ## Record the GC-bound workloads again and learn pcstream's table on each (traces/tables/)
	$(BIN)/pcstream workload suite --record --only $(TABLE_WORKLOADS) -o $(SECOND_DIR)
	$(BIN)/python -m pcstream.workloads.tables $(SECOND_DIR)/*.parquet -o traces/tables

results: install ## Compare all policies on the bundled suite; docs/RESULTS.md, the HTML report in results/
	$(BIN)/pcstream compare --report results
	$(BIN)/python -m pcstream.report.suite_results results/results.jsonl --traces traces --ssd paper -o docs/RESULTS.md

# --- record --block: the BPF bio capture (bpf/), built into python/pcstream/_bpf/ ---
# clang compiles the program against a vmlinux.h dumped from the running kernel's BTF (not
# committed; kept per kernel release under target/bpf/), bpftool makes the skeleton, cc links the
# loader with libbpf. Without BTF or clang the target says why and skips: record --block then
# falls back to tracefs (no PCs, no hints in the real block trace).
BPF_BIN := python/pcstream/_bpf/pcbio-capture
# record --via bpf|auto: the capture at the system-call boundary (bpf/pcsys*, shim/include/pcsys.h)
SYS_BIN := python/pcstream/_bpf/pcsys-capture
BPF_BUILD := target/bpf
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
BPF_CLANG ?= clang
BPF_VMLINUX := $(BPF_BUILD)/vmlinux-$(shell uname -r).h
BPF_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/riscv64/riscv/' -e 's/s390x/s390/')

.PHONY: bpf
install: bpf
bpf: ## Build the BPF captures: bios (record --block) and system calls (record --via bpf|auto); skipped, saying why, without BTF or clang
	@if [ ! -r $(BPF_BTF) ]; then \
	  echo "bpf: skipped: the kernel has no BTF ($(BPF_BTF)); record --block will use tracefs"; \
	  exit 0; fi; \
	missing=""; \
	command -v $(BPF_CLANG) >/dev/null 2>&1 || missing="$$missing clang"; \
	command -v $(BPFTOOL) >/dev/null 2>&1 || missing="$$missing bpftool"; \
	[ -e /usr/include/bpf/libbpf.h ] || missing="$$missing libbpf-dev"; \
	[ -e /usr/include/libelf.h ] || missing="$$missing libelf-dev"; \
	[ -e /usr/include/elfutils/libdwfl.h ] || missing="$$missing libdw-dev"; \
	[ -e /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; } \
	    || echo "bpf: could not install$$missing"; fi; \
	for need in "$(BPF_CLANG):clang" "$(BPFTOOL):bpftool"; do \
	  command -v "$${need%%:*}" >/dev/null 2>&1 || { \
	    echo "bpf: skipped: $${need##*:} is not available; record --block will use tracefs"; exit 0; }; done; \
	for h in bpf/libbpf.h libelf.h zlib.h; do [ -e /usr/include/$$h ] || { \
	  echo "bpf: skipped: /usr/include/$$h is missing; record --block will use tracefs"; exit 0; }; done; \
	$(MAKE) --no-print-directory $(BPF_BIN) $(SYS_BIN)

$(BPF_VMLINUX):
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file $(BPF_BTF) format c > $@.tmp && mv $@.tmp $@

$(BPF_BUILD)/pcbio.bpf.o: bpf/pcbio.bpf.c bpf/pcbio.h $(BPF_VMLINUX)
	cp $(BPF_VMLINUX) $(BPF_BUILD)/vmlinux.h
	$(BPF_CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BPF_BUILD) -Ibpf \
	  -c bpf/pcbio.bpf.c -o $@

$(BPF_BUILD)/pcbio.skel.h: $(BPF_BUILD)/pcbio.bpf.o
	$(BPFTOOL) gen skeleton $< name pcbio_bpf > $@.tmp && mv $@.tmp $@

$(BPF_BIN): bpf/pcbio.c bpf/pcbio.h $(BPF_BUILD)/pcbio.skel.h
	@mkdir -p $(dir $@)
	cc -O2 -g -Wall -Wextra -Werror -I$(BPF_BUILD) -Ibpf -o $@ bpf/pcbio.c -lbpf -lelf -lz

$(BPF_BUILD)/pcsys.bpf.o: bpf/pcsys.bpf.c shim/include/pcsys.h $(BPF_VMLINUX)
	cp $(BPF_VMLINUX) $(BPF_BUILD)/vmlinux.h
	$(BPF_CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BPF_BUILD) -Ishim/include \
	  -c bpf/pcsys.bpf.c -o $@

$(BPF_BUILD)/pcsys.skel.h: $(BPF_BUILD)/pcsys.bpf.o
	$(BPFTOOL) gen skeleton $< name pcsys_bpf > $@.tmp && mv $@.tmp $@

SYS_SRCS := bpf/pcsys.c bpf/pcsys_out.c bpf/pcsys_frames.c bpf/pcsys_unwind.c
$(SYS_BIN): $(SYS_SRCS) bpf/pcsys_loader.h shim/include/pcsys.h shim/include/pcshim.h shim/include/pchash.h \
  $(BPF_BUILD)/pcsys.skel.h
	@mkdir -p $(dir $@)
	cc -O2 -g -Wall -Wextra -Werror -I$(BPF_BUILD) -Ishim/include -Ibpf -o $@ $(SYS_SRCS) -lbpf -ldw -lelf -lz

# --- fuzzing: coverage-guided (AFL++ through cargo-afl, stable Rust); docs/HARDENING.md ---
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= import_blkparse import_msr import_alibaba import_tencent import_fio import_mqsim \
  block_trace file_trace shimlog ssd_toml table_json
FUZZ_MEM_MB ?= 4096
# Stop a target after this many executions (empty: only FUZZ_SECONDS bounds it).
FUZZ_EXECS ?=

.PHONY: fuzz
fuzz: ## Fuzz every parser for FUZZ_SECONDS (and at most FUZZ_EXECS executions) each (AFL++ via cargo-afl)
	@command -v cargo-afl >/dev/null 2>&1 || $(CARGO) install cargo-afl
	cd fuzz && $(CARGO) afl config --build >/dev/null 2>&1 || true
	cd fuzz && $(CARGO) afl build --release
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  ( cd fuzz && mkdir -p target/afl && AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	    AFL_NO_AFFINITY=1 AFL_AUTORESUME=1 \
	    $(CARGO) afl fuzz -V $(FUZZ_SECONDS) $(if $(FUZZ_EXECS),-E $(FUZZ_EXECS)) -m $(FUZZ_MEM_MB) \
	      -i corpus/$$t -o target/afl/$$t \
	      target/release/$$t >target/afl/$$t.log 2>&1 || { echo "fuzz: $$t failed, see fuzz/target/afl/$$t.log"; exit 1; } ); \
	done
	$(PYTHON) tools/fuzz_report.py fuzz/target/afl
