#!/usr/bin/env bash
# Interleaved comparison of ringev's backends and modes with the C peers, for ratios on a noisy
# machine: each round runs every peer once, each in a process of its own (`ringev bench pipes
# --shape S --backend B --mode M` per shape, ringev backend and mode, and the Go netpoller); the
# medians of the rounds are printed, for fd_speed1 with their ratios to tevent epoll and to the
# liburing one-shot loop, and for ringev with the loop thread's CPU time per event
# (cpu_ns_per_event: time other processes held the CPU does not count, so it moves less on a
# shared machine), then the checks of issue 14, on events/s and on CPU time: each backend's
# default mode against its best mode, and auto's backend against the best backend, with the
# path the default uring loop chose for its handlers' I/O (io_path) in each round.
#
# usage: scripts/compare.sh [ROUNDS] [EVENTS]   (default 7 rounds of 500000 events)
# Then scripts/compare_busy.sh (issue 12: completion modes, fd_busy; COMPARE_BUSY=0 skips it).
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
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
build_ringev
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
  if runs_backend compare.sh "$b" default; then
    backends+=("$b")
    if [ -z "$auto" ] && [[ $b =~ ^(uring|epoll|poll)$ ]]; then auto=$b; fi
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
          python3 -c 'import json,sys; [print(r["shape"], "ringev-"+r["backend"]+("/"+r["mode"] if r["mode"]!="default" else ""), r["events_per_sec"], r.get("io_path","-"), r.get("cpu_ns_per_event",0)) for r in json.load(sys.stdin)]'
      done
    done
  done
done > "$raw"
sort -u "$bin/notes" >&2 # ringev's notes (e.g. a backend skipped, and why)
python3 - "$raw" "$auto" "${SLOWSYS:-}" "$rounds" "$events" "$cpu" <<'PY'
import collections, statistics, sys
raw, auto, slowsys, rounds, events, cpu = sys.argv[1:]
d = collections.defaultdict(lambda: collections.defaultdict(list))     # events/s
cpuns = collections.defaultdict(lambda: collections.defaultdict(list)) # ringev: loop thread CPU ns/event
paths = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(raw):
    f = line.split()
    d[f[0]][f[1]].append(float(f[2]))
    if len(f) > 3:
        paths[f[0]][f[1]].append(f[3])
    if len(f) > 4 and float(f[4]) > 0:
        cpuns[f[0]][f[1]].append(float(f[4]))
med = statistics.median
floor = med(d["regime"]["pipe_floor-raw"])
regime = f"pipe_floor raw {floor:,.0f} events/s" + (f", every command under slowsys {slowsys}" if slowsys else ", this machine's own syscalls")
print(f"regime: {regime}; {rounds} rounds of {events} events, CPU={cpu}")
print("events/s are wall-clock medians; cpu ns/event is the ringev loop thread's CPU time per event (median), which")
print("other processes on the machine disturb less; the checks are made on both (3 %: events/s >= 0.97, cpu <= 1/0.97)")
for shape, runs in d.items():
    if shape == "regime":
        continue
    te = med(runs["tevent-epoll"]) if "tevent-epoll" in runs else None
    lo = med(runs["liburing-oneshot-defer"]) if "liburing-oneshot-defer" in runs else None
    print()
    hdr = f"{shape:28s} {'median':>9s} {'ns/event':>9s} {'min':>9s} {'max':>9s} {'cpu ns/ev':>10s}"
    if te:
        hdr += f" {'/tevent-epoll':>14s} {'/liburing-oneshot':>18s}"
    print(hdr + "  handler I/O")
    for k, v in runs.items():
        m = med(v)
        c = cpuns[shape].get(k)
        row = f"{k:28s} {m:9.0f} {1e9/m:9.0f} {min(v):9.0f} {max(v):9.0f} " + (f"{med(c):10.0f}" if c else f"{'-':>10s}")
        if te:
            row += f" {m/te:14.2f} {m/lo:18.2f}"
        p = paths[shape].get(k)
        if p and k == "ringev-uring":
            n = collections.Counter(p)
            row += "  " + ", ".join(f"{x} in {j} of {len(p)} rounds" for x, j in n.most_common())
        print(row)
    # The checks of issue 14: each backend's default mode within 3 % of its best mode; auto's
    # backend (its default mode) within 3 % of the best backend (each in its best mode) among
    # those auto chooses from.
    print(f"checks ({shape}, {regime}):")
    backs = []
    for k in runs:
        if k.startswith("ringev-") and not k.startswith("ringev-go-netpoller"):
            b = k[len("ringev-"):].split("/")[0]
            if b not in backs:
                backs.append(b)
    def modes_of(b):
        return [k for k in runs if k == "ringev-" + b or k.startswith("ringev-" + b + "/")]
    def label(k):
        return k[len("ringev-"):]
    best = {}  # backend -> (events/s of its best mode, key, cpu of its cheapest mode, key)
    for b in backs:
        ks = modes_of(b)
        if "ringev-" + b not in ks:
            continue
        eps = {k: med(runs[k]) for k in ks}
        kb = max(eps, key=eps.get)
        cs = {k: med(cpuns[shape][k]) for k in ks if cpuns[shape].get(k)}
        kc = min(cs, key=cs.get) if cs else None
        best[b] = (eps[kb], kb, cs.get(kc), kc)
        r = eps["ringev-" + b] / eps[kb]
        line = f"  {b:10s} default {eps['ringev-'+b]:9.0f} events/s = {r:.3f} of its best mode ({label(kb)} {eps[kb]:.0f})  {'ok' if r >= 0.97 else 'BELOW 0.97'}"
        if kc and "ringev-" + b in cs:
            rc = cs[kc] / cs["ringev-" + b]
            line += f"; cpu {cs['ringev-'+b]:.0f} ns/event = {rc:.3f} of its cheapest mode's ({label(kc)} {cs[kc]:.0f})  {'ok' if rc >= 0.97 else 'BELOW 0.97'}"
        print(line)
    cands = {b: v for b, v in best.items() if b in ("uring", "epoll", "poll")}
    if auto and auto in cands:
        top = max(cands, key=lambda b: cands[b][0])
        ad = med(runs["ringev-" + auto])
        r = ad / cands[top][0]
        print(f"  auto's backend {auto} (default) {ad:9.0f} events/s = {r:.3f} of the best backend's ({label(cands[top][1])} {cands[top][0]:.0f})  {'ok' if r >= 0.97 else 'BELOW 0.97'}")
        cc = {b: v for b, v in cands.items() if v[2]}
        if cc and cpuns[shape].get("ringev-" + auto):
            topc = min(cc, key=lambda b: cc[b][2])
            ac = med(cpuns[shape]["ringev-" + auto])
            rc = cc[topc][2] / ac
            print(f"  auto's backend {auto} (default) cpu {ac:.0f} ns/event = {rc:.3f} of the cheapest backend's ({label(cc[topc][3])} {cc[topc][2]:.0f})  {'ok' if rc >= 0.97 else 'BELOW 0.97'}")
        print("  (auto chooses among uring, epoll and poll; uring-poll, not close-safe, never)")
PY
# --- issue 12: the completion modes and the fd_busy shape beside the C proactor, epoll_busy and
# tevent busy, in both regimes when SLOWSYS is set, with syscalls per event (strace -c): a
# separate script, with the same rounds and events (COMPARE_BUSY=0 skips it; see its header for
# BUSY, BACKENDS, MODES, SLOWSYS, STRACE).
if [ "${COMPARE_BUSY:-1}" = 1 ]; then
  trap - ERR
  scripts/compare_busy.sh "$rounds" "$events"
fi
