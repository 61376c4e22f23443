# lanework: targets loop over the modules listed once, in go.work.
MODULES := $(shell sed -n 's|^[[:space:]]*\./\([A-Za-z0-9_/-]*\)[[:space:]]*$$|\1|p' go.work)
ROOT    := $(CURDIR)
LINTMOD := $(ROOT)/internal/lint
# staticcheck and benchstat are pinned as tools in internal/lint/go.mod, a module
# outside the workspace, so library modules never inherit their dependencies.
STATICCHECK = $(shell cd $(LINTMOD) && GOWORK=off go tool -n staticcheck)
BENCHSTAT   = $(shell cd $(LINTMOD) && GOWORK=off go tool -n benchstat)
COUNT ?= 5
BENCH ?= .

.PHONY: test race norace vet staticcheck lint bench fmt-check tidy-check modules gowork-off run fuzz soak

## test: vet, staticcheck and the race-enabled tests of every module (THE test command).
test: lint race norace

race:
	@set -e; for m in $(MODULES); do echo "== test $$m"; (cd $$m && go test -race -count=1 ./...); done

## norace: ringbuf's tests without the race detector, the only build that runs
## its hardware release stores (race builds use sync/atomic stores instead).
norace:
	@echo "== test ringbuf (no race detector)"; cd ringbuf && go test -count=1 ./...

vet:
	@set -e; for m in $(MODULES); do echo "== vet $$m"; (cd $$m && go vet ./...); done

staticcheck:
	@set -e; sc="$(STATICCHECK)"; for m in $(MODULES); do echo "== staticcheck $$m"; (cd $$m && $$sc ./...); done

lint: vet staticcheck

bench:
	@set -e; for m in $(MODULES); do echo "== bench $$m"; (cd $$m && go test -run '^$$' -bench '$(BENCH)' -benchmem -count=$(COUNT) ./...); done

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

tidy-check:
	@set -e; for m in $(MODULES) internal/lint; do \
		(cd $$m && cp go.mod /tmp/lw.go.mod.bak && { [ -f go.sum ] && cp go.sum /tmp/lw.go.sum.bak || rm -f /tmp/lw.go.sum.bak; } && \
		GOWORK=off go mod tidy && \
		if ! cmp -s go.mod /tmp/lw.go.mod.bak || { [ -f /tmp/lw.go.sum.bak ] && ! cmp -s go.sum /tmp/lw.go.sum.bak; }; then \
			echo "go mod tidy changes $$m"; cp /tmp/lw.go.mod.bak go.mod; [ -f /tmp/lw.go.sum.bak ] && cp /tmp/lw.go.sum.bak go.sum; exit 1; fi); \
	done

## gowork-off: every module builds and vets on its own, through its relative replaces.
gowork-off:
	@set -e; for m in $(MODULES); do echo "== GOWORK=off $$m"; (cd $$m && GOWORK=off go vet ./...); done

modules:
	@echo $(MODULES)

## run: start `ledger serve` on ./data with default settings (Ctrl-C stops it cleanly).
run:
	cd tools && go run ./cmd/ledger serve --dir $(ROOT)/data

## fuzz: run each fuzz target for 30 s (their seed corpora also run in make test).
fuzz:
	cd ledger && for f in FuzzWALBatch FuzzSnapshot; do go test -run '^$$' -fuzz "^$$f\$$" -fuzztime 30s -fuzzminimizetime 1s . || exit 1; done
	cd ledger && go test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime 30s -fuzzminimizetime 1s ./wire
	cd ledger && go test -run '^$$' -fuzz '^FuzzParseOps$$' -fuzztime 30s -fuzzminimizetime 1s ./server
	cd frontier && go test -run '^$$' -fuzz '^FuzzMergeOrder$$' -fuzztime 30s -fuzzminimizetime 1s .

## soak: kill -9 the ledger SOAK_TRIALS times mid-load and check every acknowledged transaction.
SOAK_TRIALS ?= 200
soak:
	cd ledger && go test -run '^TestKill9$$' -count=1 -v -timeout 60m . -args -ledger.kill-trials=$(SOAK_TRIALS)
