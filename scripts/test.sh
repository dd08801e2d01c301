#!/usr/bin/env bash
# The test command: formatting, vet (also for darwin, freebsd and windows), staticcheck, every test under the race detector, then the
# RESP and HTTP parsers' fuzz tests for a few seconds each (FUZZTIME, default 60000x: a count,
# not a duration, whose deadline can end a loaded run with "context deadline exceeded").
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(gofmt -l . | grep -v '^vendor/' || true)
if [ -n "$bad" ]; then echo "gofmt: not formatted:"; echo "$bad"; exit 1; fi
go vet ./...
# Every GOOS builds: off Linux New fails, but the packages compile (vet type-checks the tests).
for os in darwin freebsd windows; do GOOS=$os go vet ./...; done
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
# The timeout only ends a hang (every wait in the tests has a deadline of its own); on a loaded
# machine the root package alone takes over 10 minutes under the race detector.
go test -race -count=1 -timeout 30m ./...
# The parsers' fuzz tests, a few seconds each (go test -fuzz takes one target at a time).
for f in FuzzRESP FuzzHTTP; do
  go test -run '^$' -fuzz "^$f\$" -fuzztime "${FUZZTIME:-60000x}" ./server
done
