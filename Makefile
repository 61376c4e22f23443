# lanework: targets loop over the modules listed once, in go.work.
MODULES := $(shell sed -n 's|^[[:space:]]*\./\([A-Za-z0-9_/-]*\)[[:space:]]*$$|\1|p' go.work)
ROOT    := $(CURDIR)
LINTMOD := $(ROOT)/internal/lint
# Modules outside the workspace: the lint tools, the release tool that
# builds the worktree proxy (it needs golang.org/x/mod, which no library
# does), and the benchmark chart drawer.
TOOLMODS := internal/lint internal/release internal/plot
RELEASE  = cd $(ROOT)/internal/release && GOWORK=off go run . -root $(ROOT)
# staticcheck and benchstat are pinned as tools in internal/lint/go.mod, a module
# outside the workspace, so library modules never inherit their dependencies.
STATICCHECK = $(shell cd $(LINTMOD) && GOWORK=off go tool -n staticcheck)
BENCHSTAT   = $(shell cd $(LINTMOD) && GOWORK=off go tool -n benchstat)
COUNT ?= 5
BENCH ?= .

.PHONY: cluster test race norace consumer plot-test plots plot-data vet staticcheck lint bench fmt-check tidy tidy-check modules gowork-off release run fuzz soak

## test: vet, staticcheck, the race-enabled tests of every module, and the
## consumer test (THE test command).
test: lint race norace consumer plot-test

race:
	@set -e; for m in $(MODULES); do echo "== test $$m"; (cd $$m && go test -race -count=1 ./...); done

## norace: ringbuf's tests without the race detector, the only build that runs
## its hardware release stores (race builds use sync/atomic stores instead).
norace:
	@echo "== test ringbuf (no race detector)"; cd ringbuf && go test -count=1 ./...

## consumer: the release tool's tests, among them TestConsumer: go get every
## module and go install both programs from a file proxy of the working tree,
## with the workspace off and no network.
consumer:
	@echo "== test internal/release (consumer)"; cd internal/release && GOWORK=off go test -race -count=1 ./...

## plot-test: the chart drawer's tests (parsing, and the SVG it writes).
plot-test:
	@echo "== test internal/plot"; cd internal/plot && GOWORK=off go test -race -count=1 ./...

## plots: draw docs/plots/*.svg from the benchmark outputs in docs/bench-data
## (not part of test). plot-data re-runs those benchmarks (minutes; run it
## on a quiet machine, then make plots and update docs/benchmarks.md).
plots:
	cd internal/plot && GOWORK=off go run . -data $(ROOT)/docs/bench-data -out $(ROOT)/docs/plots

plot-data:
	internal/plot/collect.sh

vet:
	@set -e; for m in $(MODULES); do echo "== vet $$m"; (cd $$m && go vet ./...); done
	@set -e; for m in internal/release internal/plot; do echo "== vet $$m"; (cd $$m && GOWORK=off go vet ./...); done

staticcheck:
	@set -e; sc="$(STATICCHECK)"; for m in $(MODULES); do echo "== staticcheck $$m"; (cd $$m && $$sc ./...); done
	@set -e; sc="$(STATICCHECK)"; for m in internal/release internal/plot; do echo "== staticcheck $$m"; (cd $$m && GOWORK=off $$sc ./...); done

lint: vet staticcheck

bench:
	@set -e; for m in $(MODULES); do echo "== bench $$m"; (cd $$m && go test -run '^$$' -bench '$(BENCH)' -benchmem -count=$(COUNT) ./...); done

fmt-check:
	@out=$$(gofmt -l $(MODULES) $(TOOLMODS)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## tidy, tidy-check: go mod tidy every module against the worktree proxy, on
## a copy; committed files keep sibling requirements at the release version
## and third-party hashes only (see CONTRIBUTING.md).
tidy:
	@$(RELEASE) tidy $(TOOLMODS)

tidy-check:
	@$(RELEASE) tidy -check $(TOOLMODS)

## gowork-off: every module builds and vets on its own (GOWORK=off), its
## siblings resolved from a file proxy of the working tree.
gowork-off:
	@$(RELEASE) gowork-off

## release: make release VERSION=v0.2.0 moves every sibling requirement to
## VERSION in one commit and tags every module there in dependency order.
## It refuses a dirty tree and pushes nothing.
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=v0.2.0"; exit 2; }
	@$(RELEASE) tag $(VERSION)

modules:
	@echo $(MODULES)

## cluster: start a local 3-replica cluster (raft on 127.0.0.1:7101-7103, HTTP on 7201-7203, msgpack on 7301-7303) in ./cluster-data.
cluster:
	cd tools && go run ./cmd/ledger cluster demo --dir $(ROOT)/cluster-data

## run: start `ledger serve` on ./data with default settings (Ctrl-C stops it cleanly).
run:
	cd tools && go run ./cmd/ledger serve --index --dir $(ROOT)/data

## fuzz: run each fuzz target for 30 s (their seed corpora also run in make test).
fuzz:
	cd ledger && for f in FuzzWALBatch FuzzSnapshot; do go test -run '^$$' -fuzz "^$$f\$$" -fuzztime 30s -fuzzminimizetime 1s . || exit 1; done
	cd ledger && go test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime 30s -fuzzminimizetime 1s ./wire
	cd ledger && go test -run '^$$' -fuzz '^FuzzParseOps$$' -fuzztime 30s -fuzzminimizetime 1s ./server
	cd frontier && go test -run '^$$' -fuzz '^FuzzMergeOrder$$' -fuzztime 30s -fuzzminimizetime 1s .

## soak: kill -9 the ledger SOAK_TRIALS times mid-load and check every acknowledged transaction.
SOAK_TRIALS ?= 200
## and the replicated ledger: CLUSTER_TRIALS leader kills, and as many partition runs.
CLUSTER_TRIALS ?= 20
soak:
	cd ledger && go test -run '^TestKill9(Index)?$$' -count=1 -v -timeout 60m . -args -ledger.kill-trials=$(SOAK_TRIALS)
	cd ledgercluster && LEDGERCLUSTER_TRIALS=$(CLUSTER_TRIALS) go test -run '^TestFailoverKill9$$' -count=1 -v -timeout 30m .
	cd ledgercluster && go test -run '^TestPartition(MinorityLeader|DropDelay)$$' -count=$(CLUSTER_TRIALS) -timeout 30m .
