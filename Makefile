# profile-model — everyday targets. Go 1.26.8; tools are Go tool dependencies.
GO      ?= go
BIN     := bin/profile-model
PKGS    := ./...
FUZZTIME ?= 30s

.PHONY: build test test-gpu bench bench-sweep compare demo calibrate lint fuzz update-golden clean

# A static binary (no cgo: it runs on any Linux of the same architecture,
# and leaves libc unmapped, 1.5 MB less resident) without this machine's
# paths in it.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o $(BIN) ./cmd/profile-model

# The tests: everything that runs without a GPU (simulated engine and its
# golden sweeps, generated traces, and the real recorded traces of
# ../shared/corpus when present). JUNIT=FILE also writes a JUnit report.
JUNIT ?=
test:
	$(GO) tool gotestsum --format testname $(if $(JUNIT),--junitfile $(JUNIT)) -- -count=1 $(PKGS)

# The sweeps against real engines on a GPU runner (-tags gpu): a sweep this
# machine cannot run skips, naming what is missing (fails instead with
# PROFILE_MODEL_REQUIRE_GPU=1).
test-gpu:
	@echo "test-gpu: the whole suite plus TestGPUSweeps, the real-engine sweeps of fixtures/sweeps"
	@echo "  (atom-minimax-m2.5-mi355x, vllm-qwen3-0.6b, sglang-qwen3-0.6b). Each skips, naming what is"
	@echo "  missing (engine, GPU, weights), unless PROFILE_MODEL_REQUIRE_GPU=1. None has goldens in the"
	@echo "  repository yet: one that runs fails, asking for them to be recorded with -update."
	$(GO) tool gotestsum --format testname $(if $(JUNIT),--junitfile $(JUNIT)) -- -count=1 -tags gpu -timeout 6h ./profiling/...

# Benchmarks (plain go test: gotestsum reports benchmarks as failures).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The declared sweeps as Go benchmarks, one profiled level per op, into
# OUT (default bench-sweep.txt): make bench-sweep OUT=new.txt [COUNT=6]
# [SWEEP=sim-minimax-m2.5] [TAGS=gpu]. Compare two with make compare.
OUT   ?= bench-sweep.txt
COUNT ?= 6
SWEEP ?=
TAGS  ?=
bench-sweep:
	$(GO) test $(if $(TAGS),-tags $(TAGS)) -run '^$$' -bench 'Sweep/sweep=$(SWEEP)' -benchtime 1x -count $(COUNT) -timeout 6h ./profiling/ > $(OUT)
	@echo "wrote $(OUT)"

# Compare two benchmark files (BenchmarkSweep output or a run's bench.txt):
# make compare OLD=old.txt NEW=new.txt. Between a run's bench.txt and
# BenchmarkSweep output, pass BENCHSTAT_FLAGS=-ignore=/sweep,/gomaxprocs,goos,goarch,pkg,cpu.
BENCHSTAT_FLAGS ?=
compare:
	@test -n "$(OLD)" -a -n "$(NEW)" || { echo "usage: make compare OLD=old.txt NEW=new.txt"; exit 2; }
	$(GO) tool benchstat $(BENCHSTAT_FLAGS) $(OLD) $(NEW)

# The main job on the built-in default (no GPU): profile-model run on the
# simulated ATOM engine (MiniMax-M2.5 on MI355X), concurrency 4, 8, 16.
CONC       ?= 4,8,16
TIME_SCALE ?= 1
demo: build
	$(BIN) run --engine sim --model MiniMaxAI/MiniMax-M2.5 --max-num-seqs 64 \
		--config fixtures/models/minimax-m2/config.json \
		--conc $(CONC) --isl 1024 --osl 50 --num-prompts-mul 4 --time-scale $(TIME_SCALE) --out demo-out

# The simulated engine against the recorded runs of the reference corpus:
# a profiled sweep at each recorded level (ISL 1024 and 8192, 50 prompts,
# the recorded sweep's max-num-seqs and graph sizes) and a table of
# recorded vs simulated median TTFT and TPOT (median over five seeded runs
# of each level); fails beyond 15%. About 8 minutes of wall time on a quiet
# machine (the sim runs in real time).
calibrate:
	PROFILE_MODEL_CALIBRATE=1 $(GO) test -count=1 -run TestCalibrationAgainstRecorded -v -timeout 30m ./profiling/

lint:
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	@dead=$$($(GO) tool deadcode -test $(PKGS)); if [ -n "$$dead" ]; then echo "unreachable even from tests (delete it):"; echo "$$dead"; exit 1; fi
	./scripts/imports.sh --check

# Every fuzz target, FUZZTIME each: make fuzz FUZZTIME=10m
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# Rewrite the data files that tests derive and compare (-update), never anything
# else: the kernel model derived from the corpus tables
# (profiling/kernelmodel/data/), the commands' golden output
# (cmd/profile-model/testdata/golden/), the report's golden readme
# (profiling/report/testdata/) and the simulated sweeps' golden CSVs
# (fixtures/golden/). -update goes only to the packages that define it.
# Read the diff before committing.
GOLDEN_DIRS := profiling/kernelmodel/data cmd/profile-model/testdata profiling/report/testdata fixtures/golden
update-golden:
	$(GO) test -count=1 ./profiling/kernelmodel/ -run TestDerivedModelData -args -update
	$(GO) test -count=1 ./cmd/profile-model/ -update
	$(GO) test -count=1 ./profiling/report/ -update
	$(GO) test -count=1 ./profiling/ -update
	git status --short -- $(GOLDEN_DIRS)
	git diff --stat -- $(GOLDEN_DIRS)

clean:
	rm -rf bin demo-out test-results
