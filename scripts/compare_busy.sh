#!/usr/bin/env bash
# Issue 12's comparison: ringev's completion modes and the fd_busy shape beside the C peers of the
# completion model and the readiness limit, in interleaved pinned rounds (one process per peer
# per round), medians printed with their ratios, per regime:
#   uring_proactor_pipe inline|armed N   (liburing proactor: the C completion model)
#   epoll_busy N                         (raw level-triggered epoll, every ready handler per wait)
#   tevent_pipe epoll busy N             (tevent, N pipes each with a READ and a WRITE fde)
#   pipe_floor raw                       (the regime: write+read with no loop, one syscall an event)
#   ringev bench pipes --shape S --backend B --mode M   (S = fd_speed1 for N = 1, else
#                                        --shape fd_busy --busy N)
# usage: scripts/compare_busy.sh [ROUNDS] [EVENTS]   (default 5 rounds of 300000 events)
# Environment:
#   BUSY="1 16 256"   pipe counts (1 is fd_speed1)
#   BACKENDS="uring epoll"   ringev backends (those the kernel refuses are left out, by name)
#   MODES="completion completion-inline default syscall"   ringev modes
#   SLOWSYS=N         also run every peer, ringev included, under `$ANCHORS_BIN/slowsys N` (the
#                     regime of machines with dear syscalls; 3000 ~ PTI), in the same rounds
#   STRACE=0          skip the syscall count (default: one `strace -c -f` run per peer and N,
#                     plain regime, STRACE_EVENTS events, default 100000: syscalls per event)
#   CPU=0             the CPU every peer is pinned to (none: unpinned)
#   ANCHORS_BIN       where the anchors are (default /tmp/ringev-anchors); built with
#                     ../shared/anchors/run.sh (ANCHORS_SRC) when missing
# Called by scripts/compare.sh after its fd_speed1 table (COMPARE_BUSY=0 there skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
events=${2:-300000}
busy=${BUSY:-1 16 256}
backends_want=${BACKENDS:-uring epoll}
modes=${MODES:-completion completion-inline default syscall}
slow=${SLOWSYS:-}
a=${ANCHORS_BIN:-/tmp/ringev-anchors}
src=${ANCHORS_SRC:-}
if [ -z "$src" ]; then # ../shared from the main checkout, ../../shared from a worktree in wt/
  for d in ../shared/anchors ../../shared/anchors; do
    if [ -x "$d/run.sh" ]; then src=$(cd "$d" && pwd); break; fi
  done
fi
need=(uring_proactor_pipe epoll_busy tevent_pipe pipe_floor slowsys)
missing=0
for b in "${need[@]}"; do [ -x "$a/$b" ] || missing=1; done
if [ $missing = 1 ]; then
  [ -n "$src" ] && [ -x "$src/run.sh" ] || { echo "compare_busy.sh: anchors missing in $a and no ../shared/anchors/run.sh found (set ANCHORS_SRC)" >&2; exit 2; }
  echo "compare_busy.sh: building the anchors into $a with $src/run.sh (it also runs its own short measurements)" >&2
  ANCHORS_BIN=$a ANCHORS_NOP=0 "$src/run.sh" 2000 >/dev/null
  for b in "${need[@]}"; do [ -x "$a/$b" ] || { echo "compare_busy.sh: $a/$b still missing after run.sh" >&2; exit 2; }; done
fi
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
build_ringev
backends=()
for b in $backends_want; do
  if runs_backend compare_busy.sh "$b" completion; then backends+=("$b"); fi
done
regimes=(plain)
[ -n "$slow" ] && regimes+=("slowsys$slow")
shape_of() { if [ "$1" = 1 ]; then echo fd_speed1; else echo "fd_busy$1"; fi; }
shape_args() { if [ "$1" = 1 ]; then echo "--shape fd_speed1"; else echo "--shape fd_busy --busy $1"; fi; }
# peers N: one line per peer, "NAME<TAB>COMMAND..." (the command prints "Got X pipe events/sec"
# or ringev's JSON)
peers() {
  local n=$1 s
  s=$(shape_args "$n")
  printf 'c-proactor-inline\t%s\n' "$a/uring_proactor_pipe inline $n $events"
  printf 'c-proactor-armed\t%s\n' "$a/uring_proactor_pipe armed $n $events"
  printf 'c-epoll_busy\t%s\n' "$a/epoll_busy $n $events"
  printf 'tevent-epoll-busy\t%s\n' "$a/tevent_pipe epoll busy $n $events"
  for b in "${backends[@]}"; do
    for m in $modes; do
      local label="ringev-$b"
      [ "$m" != default ] && label="$label/$m"
      printf '%s\t%s\n' "$label" "$bin/ringev bench pipes $s --backend $b --mode $m --events $events --json"
    done
  done
}
rate() { # stdin: a peer's output; prints events/s
  python3 -c '
import json, re, sys
t = sys.stdin.read()
m = re.search(r"Got ([0-9.]+)", t)
print(m.group(1) if m else json.loads(t)[0]["events_per_sec"])'
}
trap 'echo "compare_busy.sh: a peer failed; notes:" >&2; cat "$bin/notes" >&2 2>/dev/null' ERR
for _ in $(seq "$rounds"); do
  for reg in "${regimes[@]}"; do
    wrap=("${pin[@]}")
    [ "$reg" != plain ] && wrap+=("$a/slowsys" "$slow")
    v=$("${wrap[@]}" "$a/pipe_floor" raw 0.5 | rate)
    echo "$reg floor pipe_floor-raw $v"
    for n in $busy; do
      while IFS=$'\t' read -r name cmd; do
        # shellcheck disable=SC2086 # cmd is a word list
        v=$("${wrap[@]}" $cmd 2>>"$bin/notes" | rate) # a failing peer stops the script (set -e)
        echo "$reg $(shape_of "$n") $name $v"
      done < <(peers "$n")
    done
  done
done > "$raw"
sort -u "$bin/notes" >&2 2>/dev/null || true
# Syscalls per event: one strace -c -f run per peer and N (plain regime, no pinning: strace's
# own overhead makes the rate meaningless, only the counts are read). ringev runs untimed warm-up
# events first (5 %, at most 50,000), counted here too.
sc="$bin/syscalls"
: > "$sc"
if [ "${STRACE:-1}" = 1 ] && command -v strace >/dev/null; then
  sev=${STRACE_EVENTS:-100000}
  events=$sev
  for n in $busy; do
    while IFS=$'\t' read -r name cmd; do
      ev=$sev
      case $name in ringev-*) ev=$((sev + (sev / 20 < 50000 ? sev / 20 : 50000))) ;; esac
      # shellcheck disable=SC2086
      strace -c -f -o "$bin/st" $cmd >/dev/null 2>>"$bin/notes" || { echo "compare_busy.sh: strace of $name failed" >&2; continue; }
      python3 - "$bin/st" "$(shape_of "$n")" "$name" "$ev" >> "$sc" <<'PY'
import sys
path, shape, name, ev = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
calls = {}
for line in open(path):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        try:
            calls[f[-1]] = int(f[3])
        except ValueError:
            pass
tot = sum(calls.values())
# the loop's own: waits and I/O (the Go runtime's futex, nanosleep, ... are not)
loop = sum(v for k, v in calls.items() if k in ("read", "write", "io_uring_enter", "epoll_wait", "epoll_pwait",
                                                "epoll_pwait2", "epoll_ctl", "poll", "ppoll", "recvfrom", "sendto"))
top = sorted(calls.items(), key=lambda kv: -kv[1])[:3]
print(shape, name, f"{tot/ev:.3f}", f"{loop/ev:.3f}", " ".join(f"{k}={v/ev:.3f}" for k, v in top))
PY
    done < <(peers "$n")
  done
fi
python3 - "$raw" "$sc" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    reg, shape, name, v = line.split()
    d[(reg, shape, name)].append(float(v))
sysc = {}
for line in open(sys.argv[2]):
    f = line.split(maxsplit=4)
    sysc[(f[0], f[1])] = (f[2], f[3], f[4].strip() if len(f) > 4 else "")
med = {k: statistics.median(v) for k, v in d.items()}
for reg in dict.fromkeys(k[0] for k in d):
    floor = med.get((reg, "floor", "pipe_floor-raw"))
    print(f"\n== regime {reg}: pipe_floor raw {floor:,.0f} events/s (median of {len(d[(reg, 'floor', 'pipe_floor-raw')])}) ==")
    for shape in dict.fromkeys(k[1] for k in d if k[0] == reg and k[1] != "floor"):
        best = max(med.get((reg, shape, "c-proactor-inline"), 0), med.get((reg, shape, "c-proactor-armed"), 0))
        eb = med.get((reg, shape, "c-epoll_busy"), 0)
        print(f"{shape:10s} {'peer':34s} {'median':>9s} {'ns/ev':>6s} {'min':>9s} {'max':>9s} {'/proactor-best':>14s} {'/epoll_busy':>11s} {'/own-readiness':>14s} {'sc/ev':>6s} {'loop':>6s}  top syscalls/ev")
        for (r, s, name), v in d.items():
            if r != reg or s != shape:
                continue
            m = med[(r, s, name)]
            own = "-"
            if name.startswith("ringev-") and "/completion" in name:
                base = med.get((r, s, name.split("/")[0]))  # the same backend's default (readiness) mode
                own = f"{m/base:.2f}" if base else "-"
            sc, lsc, top = sysc.get((s, name), ("-", "-", ""))
            print(f"{'':10s} {name:34s} {m:9.0f} {1e9/m:6.0f} {min(v):9.0f} {max(v):9.0f} {m/best if best else 0:14.2f} {m/eb if eb else 0:11.2f} {own:>14s} {sc:>6s} {lsc:>6s}  {top}")
print("\n/proactor-best: over the better of uring_proactor_pipe inline and armed (issue 12's target on uring: >= 0.9);"
      " /epoll_busy: issue 12's target on fd_busy16/256 >= 1.2 plain, >= 2 under slowsys 3000;"
      " /own-readiness: a completion mode over the same backend's default readiness mode (target on epoll: >= 0.9)."
      " sc/ev: syscalls per event from one strace -c -f run (plain regime; every thread's, the Go runtime's"
      " futex and nanosleep included, which strace's slowness inflates); loop: only the waits and the I/O"
      " (read, write, io_uring_enter, epoll_wait/pwait, epoll_ctl, poll, ppoll).")
PY
