#!/usr/bin/env bash
# Interleaved comparison of ringev's backends and modes with the C peers, for ratios on a noisy
# machine: each round runs every peer once, each in a process of its own (`ringev bench pipes
# --shape S --backend B --mode M` per shape, ringev backend and mode, and the Go netpoller); the
# medians of the rounds are printed, for fd_speed1 with their ratios to tevent epoll and to the
# liburing one-shot loop, then the checks of issue 14: each backend's default mode against its
# best mode, and auto's backend against the best backend, with the path the default uring loop
# chose for its handlers' I/O (io_path) in each round.
#
# usage: scripts/compare.sh [ROUNDS] [EVENTS]   (default 7 rounds of 500000 events)
# Environment:
#   SHAPES    the shapes (default "fd_speed1 fd_many10000"; fd_many<N> is `--shape fd_many --fds N`).
#             The C peers run fd_speed1 only. poll is left out of fd_many shapes above 1000 fds
#             (poll(2) scans every fd per wait: ~0.4 ms per event at 10,000).
#   MODES     the ringev modes (default "default syscall ring"; ring runs on uring only).
#   SLOWSYS   N: run every peer, every ringev and the regime's floor under
#             $ANCHORS_BIN/slowsys N (every syscall's entry made slower, as page-table isolation
#             does: 3000 gives `pipe_floor raw` ~760-790k events/s where it is ~2.9M without).
#   CPU       the CPU every process is pinned to (default 0; CPU=none: unpinned): on the 2-vCPU
#             machines we measured, one vCPU runs this benchmark ~15 % slower than the other,
#             for C and Go alike, so unpinned runs are bimodal.
#   ANCHORS_BIN  where ../shared/anchors/run.sh built the peers (default /tmp/ringev-anchors).
# The regime is `pipe_floor raw` (a write and a read of one byte, no loop) run once per round
# under the same pinning and SLOWSYS: its median events/s is printed with the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
events=${2:-500000}
a=${ANCHORS_BIN:-/tmp/ringev-anchors}
shapes=${SHAPES:-fd_speed1 fd_many10000}
modes=${MODES:-default syscall ring}
for b in tevent_pipe uring_pipe uring_epoll_pipe pipe_floor; do
  [ -x "$a/$b" ] || { echo "compare.sh: $a/$b is missing: run the anchors' run.sh once to build them" >&2; exit 2; }
done
for s in $shapes; do
  case $s in
    fd_speed1|fd_speed2|fd_speed3|fd_many[1-9]*) ;;
    *) echo "compare.sh: SHAPES: unknown shape $s (known: fd_speed1 fd_speed2 fd_speed3 fd_many<N>)" >&2; exit 2 ;;
  esac
done
for m in $modes; do
  case $m in
    default|syscall|ring|fresh|all) ;;
    *) echo "compare.sh: MODES: unknown mode $m (known: default syscall ring fresh all)" >&2; exit 2 ;;
  esac
done
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/ringev" ./cmd/ringev
raw="$bin/raw"
cpu=${CPU:-0}
pin=()
if [ "$cpu" != none ] && command -v taskset >/dev/null; then pin=(taskset -c "$cpu"); fi
if [ -n "${SLOWSYS:-}" ]; then
  [ -x "$a/slowsys" ] || { echo "compare.sh: SLOWSYS: $a/slowsys is missing: run the anchors' run.sh once to build it" >&2; exit 2; }
  [[ $SLOWSYS =~ ^[0-9]+$ ]] || { echo "compare.sh: SLOWSYS=$SLOWSYS: want a number of BPF instructions, e.g. 3000" >&2; exit 2; }
  pin+=("$a/slowsys" "$SLOWSYS")
fi
got() { sed -n 's/.*Got \([0-9.]*\).*/'"$1"' \1/p'; }
# shape_args SHAPE: the bench pipes flags of a shape.
shape_args() {
  case $1 in
    fd_many*) echo "--shape fd_many --fds ${1#fd_many}" ;;
    *) echo "--shape $1" ;;
  esac
}
# The ringev backends this kernel lets run (io_uring may be switched off): the others are named
# once and left out, rather than failing every round. auto's backend is the first of uring,
# epoll and poll that runs (ringev.New's rule).
backends=()
auto=
for b in uring epoll poll uring-poll go-netpoller; do
  if "$bin/ringev" bench pipes --shape fd_speed1 --backend "$b" --events 20 >/dev/null 2>"$bin/probe"; then
    backends+=("$b")
    if [ -z "$auto" ] && [[ $b =~ ^(uring|epoll|poll)$ ]]; then auto=$b; fi
  else
    echo "compare.sh: leaving out ringev $b: $(tail -1 "$bin/probe")" >&2
  fi
done
# A failing peer stops the script (set -e), with ringev's notes.
trap 'echo "compare.sh: a peer failed; ringev notes:" >&2; cat "$bin/notes" >&2 2>/dev/null' ERR
for _ in $(seq "$rounds"); do
  "${pin[@]}" "$a/pipe_floor" raw 1 | got "regime pipe_floor-raw"
  for s in $shapes; do
    if [ "$s" = fd_speed1 ]; then
      "${pin[@]}" "$a/tevent_pipe" epoll speed 0 "$events" | got "fd_speed1 tevent-epoll"
      "${pin[@]}" "$a/tevent_pipe" poll speed 0 "$events" | got "fd_speed1 tevent-poll"
      "${pin[@]}" "$a/uring_pipe" oneshot-defer "$events" | got "fd_speed1 liburing-oneshot-defer"
      "${pin[@]}" "$a/uring_epoll_pipe" "$events" 8 | got "fd_speed1 liburing-epollwait8"
    fi
    # One process per ringev backend and mode, as each C peer is one process: in one process
    # the first run was sometimes measured slower than the later ones.
    # Mode default: handlers do their I/O with the loop's methods, the loop choosing the path
    # (uring: through the ring or read(2)/write(2), whichever it measured cheaper); syscall:
    # handlers make their own read(2)/write(2), as the C peers' handlers do; ring: the loop's
    # methods always through the ring (uring only).
    for b in "${backends[@]}"; do
      if [[ $s == fd_many* ]] && [ "$b" = poll ] && [ "${s#fd_many}" -gt 1000 ]; then continue; fi
      for m in $modes; do
        [ "$b" = go-netpoller ] && [ "$m" != default ] && continue
        [ "$m" = ring ] && [ "$b" != uring ] && continue
        # shellcheck disable=SC2046
        "${pin[@]}" "$bin/ringev" bench pipes $(shape_args "$s") --backend "$b" --mode "$m" --events "$events" --json 2>>"$bin/notes" |
          python3 -c 'import json,sys; [print(r["shape"], "ringev-"+r["backend"]+("/"+r["mode"] if r["mode"]!="default" else ""), r["events_per_sec"], r.get("io_path","-")) for r in json.load(sys.stdin)]'
      done
    done
  done
done > "$raw"
sort -u "$bin/notes" >&2 # ringev's notes (e.g. a backend skipped, and why)
python3 - "$raw" "$auto" "${SLOWSYS:-}" "$rounds" "$events" "$cpu" <<'PY'
import collections, statistics, sys
raw, auto, slowsys, rounds, events, cpu = sys.argv[1:]
d = collections.defaultdict(lambda: collections.defaultdict(list))
paths = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(raw):
    f = line.split()
    d[f[0]][f[1]].append(float(f[2]))
    if len(f) > 3:
        paths[f[0]][f[1]].append(f[3])
floor = statistics.median(d["regime"]["pipe_floor-raw"])
regime = f"pipe_floor raw {floor:,.0f} events/s" + (f", every command under slowsys {slowsys}" if slowsys else ", this machine's own syscalls")
print(f"regime: {regime}; {rounds} rounds of {events} events, CPU={cpu}")
med = lambda v: statistics.median(v)
for shape, runs in d.items():
    if shape == "regime":
        continue
    te = med(runs["tevent-epoll"]) if "tevent-epoll" in runs else None
    lo = med(runs["liburing-oneshot-defer"]) if "liburing-oneshot-defer" in runs else None
    print()
    hdr = f"{shape:28s} {'median':>9s} {'ns/event':>9s} {'min':>9s} {'max':>9s}"
    if te:
        hdr += f" {'/tevent-epoll':>14s} {'/liburing-oneshot':>18s}"
    print(hdr + "  handler I/O")
    for k, v in runs.items():
        m = med(v)
        row = f"{k:28s} {m:9.0f} {1e9/m:9.0f} {min(v):9.0f} {max(v):9.0f}"
        if te:
            row += f" {m/te:14.2f} {m/lo:18.2f}"
        p = paths[shape].get(k)
        if p and k == "ringev-uring":
            c = collections.Counter(p)
            row += "  " + ", ".join(f"{x} in {n} of {len(p)} rounds" for x, n in c.most_common())
        print(row)
    # The checks of issue 14: default within 3 % of the backend's best mode; auto's backend
    # (its default mode) within 3 % of the best backend (each backend's best mode).
    print(f"checks ({shape}, {regime}):")
    best_backend = {}
    for k in runs:
        if not k.startswith("ringev-") or k.startswith("ringev-go-netpoller"):
            continue
        b = k[len("ringev-"):].split("/")[0]
        best_backend.setdefault(b, [])
    for b in best_backend:
        ms = {k: med(v) for k, v in runs.items() if k == "ringev-" + b or k.startswith("ringev-" + b + "/")}
        if "ringev-" + b not in ms:
            continue
        best = max(ms, key=ms.get)
        r = ms["ringev-" + b] / ms[best]
        best_backend[b] = (ms[best], best)
        flag = "ok" if r >= 0.97 else "BELOW 0.97"
        print(f"  {b:10s} default {ms['ringev-'+b]:9.0f} = {r:.3f} of its best mode ({best[len('ringev-'):]} {ms[best]:.0f})  {flag}")
    cands = {b: v for b, v in best_backend.items() if v and b in ("uring", "epoll", "poll")}
    if auto and "ringev-" + auto in runs and cands:
        top = max(cands, key=lambda b: cands[b][0])
        ad = med(runs["ringev-" + auto])
        r = ad / cands[top][0]
        flag = "ok" if r >= 0.97 else "BELOW 0.97"
        print(f"  auto's backend {auto} (default mode) {ad:9.0f} = {r:.3f} of the best backend ({cands[top][1][len('ringev-'):]} {cands[top][0]:.0f}; auto chooses among uring, epoll, poll)  {flag}")
        if "uring-poll" in best_backend and best_backend["uring-poll"]:
            up = best_backend["uring-poll"]
            print(f"  (uring-poll, not close-safe, never auto's: {up[1][len('ringev-'):]} {up[0]:.0f} = {up[0]/cands[top][0]:.3f} of it)")
PY
