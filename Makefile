# Flotilla: `make up` runs a local fleet with Temporal, its Web UI, the worker and an example GitRepo;
# `make test` runs every test on real components. Third-party tools are built once into a cache outside
# the checkout (FLOTILLA_TOOLS_CACHE, default ~/.cache/flotilla/tools) and linked into bin/.
SHELL := /bin/bash
GO ?= go
# VERSION is what the binaries report (`flotilla cluster list` shows it for each agent) and the agent
# image's default tag.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# GO_LDFLAGS_EXTRA: e.g. "-s -w" for the smaller binaries of the Dockerfile.
GOBUILD = $(GO) build -trimpath -ldflags "$(GO_LDFLAGS_EXTRA) -X github.com/flotilla-gitops/flotilla/internal/version.Version=$(VERSION)"
TEST_TIMEOUT ?= 40m
# TEST_PARALLEL is how many end-to-end scenarios run at once, each on its own stack: a scenario spends much
# of its time waiting for readiness, so six keep a 2-core machine busy (four left it idle a fifth of the
# time) without starving one another.
TEST_PARALLEL ?= 6
export CGO_ENABLED ?= 0

.PHONY: all tools build up down test unit e2e vet lint clean bench bench-quick bench-scale bench-compare fuzz chaos

all: build

tools:
	@hack/build-tools.sh

bin/flotilla-worker bin/flotilla bin/flotilla-agent bin/flotilla-controller bin/flotilla-dev bin/flotilla-bench: FORCE
	@mkdir -p bin
	$(GOBUILD) -o bin/flotilla-worker ./worker
	$(GOBUILD) -o bin/flotilla ./starter
	$(GOBUILD) -o bin/flotilla-agent ./cmd/flotilla-agent
	$(GOBUILD) -o bin/flotilla-controller ./cmd/flotilla-controller
	$(GOBUILD) -o bin/flotilla-dev ./cmd/flotilla-dev
	$(GOBUILD) -o bin/flotilla-bench ./cmd/flotilla-bench

build: bin/flotilla-worker
FORCE:

## up: start three local clusters (dev, test, prod), Temporal with its Web UI on 127.0.0.1:8233,
## the worker, an example git repository and GitRepo; wait until every cluster is Ready.
up: tools build
	bin/flotilla-dev up

## down: stop exactly the processes `make up` started, by PID.
down:
	@if [ -x bin/flotilla-dev ]; then bin/flotilla-dev down; else echo "nothing to stop (bin/flotilla-dev missing)"; fi

vet:
	$(GO) vet ./...

## lint: determinism check of workflow code.
lint: tools
	bin/workflowcheck ./workflows/...

## unit: the fast tier, needing only Go and git: every package with -short. A test that starts a program
## from bin/ (API servers, Temporal, the registry, Flotilla's binaries) or runs to a limit is skipped, and
## the report lists each skip with its reason; `make test` runs them all.
unit:
	@set -o pipefail; $(GO) test -short -count=1 -json ./... | $(GO) run ./hack/testreport

## test: everything, on real components (Temporal dev server, kube-apiservers with kwok, git), and beside
## it the quick benchmark and comparison so their harness keeps working (they fail on a broken experiment,
## never on a number, so sharing the machine with the tests costs them nothing); their log is printed at
## the end and kept in $$BENCH_QUICK_LOG.
BENCH_QUICK_LOG ?= $(CURDIR)/bench/out/quick.log
test: tools build vet lint
	@mkdir -p "$(dir $(BENCH_QUICK_LOG))"
	@( bin/flotilla-bench --quick --out "$(BENCH_QUICK_OUT)" && \
	  hack/bench-compare.sh --lenient "$(BASE)" --quick --apiservers 3 --experiments fleet-shape-1x10x3 --rounds 1 --out "$(BENCH_COMPARE_QUICK_OUT)" \
	) > "$(BENCH_QUICK_LOG)" 2>&1 & quick=$$!; \
	FLOTILLA_BIN=$(CURDIR)/bin FLOTILLA_REQUIRE_DOCKER=1 $(GO) test -count=1 -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) ./...; tests=$$?; \
	FLOTILLA_CHAOS=1 CHAOS_KILLS=20 CHAOS_MINUTES=15 FLOTILLA_BIN=$(CURDIR)/bin $(GO) test -count=1 -run '^TestChaosSoak$$' -timeout 30m ./tests/chaos || tests=1; \
	wait $$quick; quickrc=$$?; \
	echo "--- the quick benchmark and comparison, run beside the tests (exit $$quickrc):"; cat "$(BENCH_QUICK_LOG)"; \
	test $$tests -eq 0 -a $$quickrc -eq 0

## bench: every experiment at full scale (about 30 minutes on 2 cores); prints a table with the targets and
## writes JSON to $$BENCH_OUT (default bench/out/results.json). A missed target never fails it; a broken
## experiment does.
BENCH_OUT ?= $(CURDIR)/bench/out/results.json
bench: tools build
	bin/flotilla-bench --out "$(BENCH_OUT)"

## bench-scale: fanout-10000, one GitRepo deployed to 10,000 simulated clusters, left idle for three check
## intervals, then rolled out again (about an hour and a half on 2 cores; BENCH_SCALE_CLUSTERS sets a smaller
## size); prints a table and writes JSON to $$BENCH_SCALE_OUT. Not part of `make test` or `make bench`.
## The clusters are checked every BENCH_SCALE_CHECK_INTERVAL: 10,000 simulated clusters checked each minute
## need about six cores for Temporal and their API servers alone (ADR 36).
BENCH_SCALE_OUT ?= $(CURDIR)/bench/out/scale.json
BENCH_SCALE_CHECK_INTERVAL ?= 5m
bench-scale: tools build
	BENCH_SCALE_CHECK_INTERVAL="$(BENCH_SCALE_CHECK_INTERVAL)" bin/flotilla-bench --scale --out "$(BENCH_SCALE_OUT)"

## bench-quick: every experiment at a small scale, in a few minutes; part of `make test` so the harness keeps working.
BENCH_QUICK_OUT ?= $(CURDIR)/bench/out/quick.json
bench-quick: tools build
	bin/flotilla-bench --quick --out "$(BENCH_QUICK_OUT)"

## bench-compare: the working tree against BASE (a commit or tag; default the last tag, else HEAD~1) on
## BENCH_COMPARE_EXPERIMENTS, interleaved, BENCH_COMPARE_ROUNDS runs of each side; prints medians, ranges and
## ratios, and writes JSON to $$BENCH_COMPARE_OUT. Run it for any change on the apply path (CONTRIBUTING.md).
## A quick form runs in `make test` against the same default base, and never fails on a number.
BASE ?= $(shell git describe --tags --abbrev=0 2>/dev/null || echo HEAD~1)
BENCH_COMPARE_EXPERIMENTS ?= fleet-shape-50x3,fleet-shape-1x10x3
BENCH_COMPARE_ROUNDS ?= 3
BENCH_COMPARE_OUT ?= $(CURDIR)/bench/out/compare.json
BENCH_COMPARE_QUICK_OUT ?= $(CURDIR)/bench/out/compare-quick.json
bench-compare: tools build
	hack/bench-compare.sh "$(BASE)" --apiservers 3 --experiments "$(BENCH_COMPARE_EXPERIMENTS)" --rounds $(BENCH_COMPARE_ROUNDS) --out "$(BENCH_COMPARE_OUT)"

## fuzz: every Go fuzz target for FUZZTIME each, one after the other; prints executions, new interesting
## inputs and findings per target and writes JSON to $$FUZZ_OUT. A finding is a failing input written to the
## package's testdata/fuzz: fix its cause and commit it as a corpus entry. `make test` runs the seed corpora.
FUZZTIME ?= 30s
# FUZZMINIMIZETIME bounds the shrinking of each new interesting input, during which the engine runs nothing else.
FUZZMINIMIZETIME ?= 5s
FUZZ_OUT ?= $(CURDIR)/bench/out/fuzz.json
fuzz:
	$(GO) run ./hack/fuzzrun -fuzztime "$(FUZZTIME)" -minimizetime "$(FUZZMINIMIZETIME)" -out "$(FUZZ_OUT)"

## chaos: the soak: a fleet of API servers (CHAOS_CLUSTERS, "kubeconfig,agents"), two workers, Temporal, a git
## server and a chart repository, while commits and chart versions keep coming and one process at a time is
## SIGKILLed and started again, until CHAOS_KILLS kills or CHAOS_MINUTES; then it checks every release on
## every cluster and writes JSON to $$CHAOS_OUT. CHAOS_SEED replays a run's choices. `make test` runs a short soak.
CHAOS_KILLS ?= 1000
CHAOS_MINUTES ?= 240
CHAOS_CLUSTERS ?= 3,2
CHAOS_OUT ?= $(CURDIR)/bench/out/chaos.json
chaos: tools build
	FLOTILLA_CHAOS=1 CHAOS_KILLS=$(CHAOS_KILLS) CHAOS_MINUTES=$(CHAOS_MINUTES) CHAOS_CLUSTERS=$(CHAOS_CLUSTERS) CHAOS_OUT="$(CHAOS_OUT)" \
	  FLOTILLA_BIN=$(CURDIR)/bin $(GO) test -count=1 -v -run '^TestChaosSoak$$' -timeout $$(( $(CHAOS_MINUTES) + 30 ))m ./tests/chaos

clean:
	rm -rf bin .run
