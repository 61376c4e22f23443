#!/usr/bin/env bash
# collect.sh runs the benchmarks behind docs/benchmarks.md's charts and
# writes their raw output, each under a header naming the command, the date
# and the host, to docs/bench-data/. Run from the project root:
#
#     internal/plot/collect.sh [walbatch] [latency] [chronon] [reference]
#
# (no argument: all four; several minutes). `make plots` then draws them.
# The reference comparison needs the C++ benchmarks of the side-by-side
# script ($REFERENCE, default /work/shared/reference).
set -euo pipefail
[ -f go.work ] || { echo "run from the project root" >&2; exit 2; }
out=docs/bench-data
mkdir -p "$out"
reference=${REFERENCE:-/work/shared/reference}
targets=${*:-walbatch latency chronon reference}

# header FILE COMMAND: start FILE with the run's provenance.
header() {
	{
		echo "# command: $2"
		echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "# host: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "# go: $(go version | cut -d' ' -f3-)"
	} > "$1"
}

for t in $targets; do
	case $t in
	walbatch)
		cmd="cd ledger && go test -run '^\$' -bench '^BenchmarkSubmitWALMaxBatch\$' -count 5 ."
		header "$out/ledger-walbatch.txt" "$cmd"
		(cd ledger && go test -run '^$' -bench '^BenchmarkSubmitWALMaxBatch$' -count 5 .) >> "$out/ledger-walbatch.txt"
		;;
	latency)
		tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
		(cd tools && go build -o "$tmp/ledger" ./cmd/ledger)
		rates="25000 50000 100000 200000 400000 800000 1600000"
		cmd="ledger bench --duration 5s --submitters 2 --rate R --progress-every 0 --json, R in $rates, 3 rounds alternating"
		header "$out/ledger-latency.json" "$cmd"
		for round in 1 2 3; do
			for r in $rates; do
				"$tmp/ledger" bench --duration 5s --submitters 2 --rate "$r" --progress-every 0 --json >> "$out/ledger-latency.json"
			done
		done
		;;
	chronon)
		cmd="cd chronon && go test -run '^\$' -bench '^BenchmarkRepresentative64\$' -count 5 ."
		header "$out/chronon-workers.txt" "$cmd"
		(cd chronon && go test -run '^$' -bench '^BenchmarkRepresentative64$' -count 5 .) >> "$out/chronon-workers.txt"
		;;
	reference)
		cmd="$reference/side-by-side.sh 5"
		header "$out/frontier-reference.txt" "$cmd"
		"$reference/side-by-side.sh" 5 >> "$out/frontier-reference.txt"
		;;
	*) echo "collect.sh: unknown target $t (walbatch, latency, chronon, reference)" >&2; exit 2 ;;
	esac
done
