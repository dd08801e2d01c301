#!/usr/bin/env bash
# Interleaved fd_speed1 comparison of ringev's backends with the C peers, for ratios on a noisy
# machine: each round runs every peer once, each in a process of its own (`ringev bench pipes
# --shape fd_speed1 --backend B --mode M` per ringev backend and mode, and the Go netpoller); the medians
# of the rounds are printed with their ratios to tevent epoll and to the liburing one-shot loop.
# usage: scripts/compare.sh [ROUNDS] [EVENTS]   (default 7 rounds of 500000 events)
# Then scripts/compare_busy.sh (issue 12: completion modes, fd_busy; COMPARE_BUSY=0 skips it).
# Needs the anchors built by ../shared/anchors/run.sh (in $ANCHORS_BIN, default /tmp/ringev-anchors).
# Every peer runs pinned to one CPU ($CPU, default 0; CPU=none: unpinned): on the 2-vCPU machines
# we measured, one vCPU runs this benchmark ~15 % slower than the other, for C and Go alike, so
# unpinned runs are bimodal and their ratios depend on where each process landed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
events=${2:-500000}
a=${ANCHORS_BIN:-/tmp/ringev-anchors}
for b in tevent_pipe uring_pipe uring_epoll_pipe; do
  [ -x "$a/$b" ] || { echo "compare.sh: $a/$b is missing: run the anchors' run.sh once to build them" >&2; exit 2; }
done
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/ringev" ./cmd/ringev
raw="$bin/raw"
cpu=${CPU:-0}
pin=()
if [ "$cpu" != none ] && command -v taskset >/dev/null; then pin=(taskset -c "$cpu"); fi
got() { sed -n 's/.*Got \([0-9.]*\).*/'"$1"' \1/p'; }
# The ringev backends this kernel lets run (io_uring may be switched off): the others are named
# once and left out, rather than failing every round.
backends=()
for b in uring epoll poll uring-poll go-netpoller; do
  if "$bin/ringev" bench pipes --shape fd_speed1 --backend "$b" --events 20 >/dev/null 2>"$bin/probe"; then
    backends+=("$b")
  else
    echo "compare.sh: leaving out ringev $b: $(tail -1 "$bin/probe")" >&2
  fi
done
# A failing peer stops the script (set -e), with ringev's notes.
trap 'echo "compare.sh: a peer failed; ringev notes:" >&2; cat "$bin/notes" >&2 2>/dev/null' ERR
for _ in $(seq "$rounds"); do
  "${pin[@]}" "$a/tevent_pipe" epoll speed 0 "$events" | got tevent-epoll
  "${pin[@]}" "$a/tevent_pipe" poll speed 0 "$events" | got tevent-poll
  "${pin[@]}" "$a/uring_pipe" oneshot-defer "$events" | got liburing-oneshot-defer
  "${pin[@]}" "$a/uring_epoll_pipe" "$events" 8 | got liburing-epollwait8
  # One process per ringev backend, as each C peer is one process: in one process the first run
  # was sometimes measured slower than the later ones.
  # Mode default: handlers do their I/O with the loop's methods; mode syscall: with read(2) and
  # write(2) of their own, as the C peers' handlers do (ringev-B/syscall).
  for b in "${backends[@]}"; do
    for m in default syscall; do
      [ "$b" = go-netpoller ] && [ "$m" = syscall ] && continue
      "${pin[@]}" "$bin/ringev" bench pipes --shape fd_speed1 --backend "$b" --mode "$m" --events "$events" --json 2>>"$bin/notes" |
        python3 -c 'import json,sys; [print("ringev-"+r["backend"]+("/"+r["mode"] if r["mode"]!="default" else ""), r["events_per_sec"]) for r in json.load(sys.stdin)]'
    done
  done
done > "$raw"
sort -u "$bin/notes" >&2 # ringev's notes (e.g. a backend skipped, and why)
python3 - "$raw" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split()
    d[k].append(float(v))
te = statistics.median(d["tevent-epoll"])
lo = statistics.median(d["liburing-oneshot-defer"])
print(f"{'fd_speed1':28s} {'median':>9s} {'ns/event':>9s} {'min':>9s} {'max':>9s} {'/tevent-epoll':>14s} {'/liburing-oneshot':>18s}")
for k, v in d.items():
    m = statistics.median(v)
    print(f"{k:28s} {m:9.0f} {1e9/m:9.0f} {min(v):9.0f} {max(v):9.0f} {m/te:14.2f} {m/lo:18.2f}")
PY
# --- issue 12: the completion modes and the fd_busy shape beside the C proactor, epoll_busy and
# tevent busy, in both regimes when SLOWSYS is set, with syscalls per event (strace -c): a
# separate script, with the same rounds and events (COMPARE_BUSY=0 skips it; see its header for
# BUSY, BACKENDS, MODES, SLOWSYS, STRACE).
if [ "${COMPARE_BUSY:-1}" = 1 ]; then
  trap - ERR
  scripts/compare_busy.sh "$rounds" "$events"
fi
