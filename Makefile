# profile-model — everyday targets. Go 1.26.8; tools are Go tool dependencies.
GO      ?= go
BIN     := bin/profile-model
PKGS    := ./...
FUZZTIME ?= 30s

.PHONY: build test test-gpu bench compare demo lint fuzz update-golden clean

build:
	$(GO) build -o $(BIN) ./cmd/profile-model

# The tests: everything that runs without a GPU (simulated engine, generated
# traces, and the real recorded traces of ../shared/corpus when present).
test:
	$(GO) tool gotestsum --format testname -- -count=1 $(PKGS)

# Sweeps against real engines on a GPU runner.
test-gpu:
	$(GO) tool gotestsum --format testname -- -count=1 -tags gpu -timeout 6h ./profiling/...

# Benchmarks (plain go test: gotestsum reports benchmarks as failures).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Compare two benchmark files: make compare OLD=old.txt NEW=new.txt
compare:
	@test -n "$(OLD)" -a -n "$(NEW)" || { echo "usage: make compare OLD=old.txt NEW=new.txt"; exit 2; }
	$(GO) tool benchstat $(OLD) $(NEW)

# The main job on the built-in default (no GPU): profile-model run on the
# simulated ATOM engine (MiniMax-M2.5 on MI355X), concurrency 4, 8, 16.
CONC       ?= 4,8,16
TIME_SCALE ?= 1
demo: build
	$(BIN) run --engine sim --model MiniMaxAI/MiniMax-M2.5 --max-num-seqs 64 \
		--config fixtures/models/minimax-m2/config.json \
		--conc $(CONC) --isl 1024 --osl 50 --num-prompts-mul 4 --time-scale $(TIME_SCALE) --out demo-out

lint:
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

# Every fuzz target, FUZZTIME each: make fuzz FUZZTIME=10m
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# Rewrite the data files that tests derive and compare (-update), never anything
# else: today the kernel model derived from the corpus tables (kernelmodel/data/).
# Read the diff before committing.
update-golden:
	$(GO) test -count=1 ./kernelmodel/ -run TestDerivedModelData -args -update
	git diff --stat -- kernelmodel/data

clean:
	rm -rf bin demo-out
