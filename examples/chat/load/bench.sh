#!/usr/bin/env bash
# Times examples/chat against gnet-chat (the same chat on gnet v2, ../shared/anchors/netpeers)
# under examples/chat/load: 50 clients x 200 lines (490,000 deliveries), the server pinned to
# CPU 0 ($SERVER_CPU), the client to CPU 1 ($CLIENT_CPU), one fresh server per run, rounds
# interleaved, medians with their ratio to gnet-chat on as many loops. The regime is printed
# first and last (pipe_floor raw: events/s).
# usage: examples/chat/load/bench.sh [ROUNDS]    (default 5)
# Environment:
#   SERVERS="gnet-chat uring epoll poll"   what to time (ringev's are backends of examples/chat)
#   LOOPS="1 2"         loop counts
#   LOAD_ARGS="..."     more flags for the load client (e.g. --batch 200: all lines in one write)
#   NICE=-19            run the server and the client at that nice value, both peers alike: on a
#                       machine shared with other work a short bursty run waits for a CPU far
#                       more than a long busy one (the "waited" column), which biases the ratio
#   ANCHORS_BIN         where netpeers and pipe_floor are, built here when missing (default
#                       /tmp/ringev-anchors); ANCHORS_SRC the anchors' sources (default
#                       ../shared/anchors from the main checkout, ../../shared/anchors from a worktree)
# Take /work/team/quiet.lock around it on a shared machine: `flock /work/team/quiet.lock CMD`.
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-5}
servers=${SERVERS:-gnet-chat uring epoll poll}
loops_list=${LOOPS:-1 2}
scpu=${SERVER_CPU:-0}; ccpu=${CLIENT_CPU:-1}
nice=(nice -n "${NICE:-0}")
a=${ANCHORS_BIN:-/tmp/ringev-anchors}; mkdir -p "$a"
src=${ANCHORS_SRC:-}
if [ -z "$src" ]; then
  for d in ../shared/anchors ../../shared/anchors; do
    if [ -d "$d/netpeers" ]; then src=$(cd "$d" && pwd); break; fi
  done
fi
[ -n "$src" ] || { echo "bench.sh: no ../shared/anchors found (set ANCHORS_SRC)" >&2; exit 2; }
# netpeers as ../shared/anchors/net.sh builds it; pipe_floor as run.sh does.
if ! [ "$a/netpeers" -nt "$src/netpeers/main.go" ] || ! [ "$a/netpeers" -nt "$src/netpeers/chat.go" ]; then
  (cd "$src/netpeers" && GOFLAGS=-mod=mod go build -o "$a/netpeers" .)
fi
[ "$a/pipe_floor" -nt "$src/pipe_floor.c" ] || ${CC:-gcc} -O2 -o "$a/pipe_floor" "$src/pipe_floor.c"
tmp=$(mktemp -d)
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap 'stop; rm -rf "$tmp"' EXIT
go build -o "$tmp/chat" ./examples/chat
go build -o "$tmp/load" ./examples/chat/load
port=19100
free() { # the next port nothing listens on
  port=$((port+1)); while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port+1)); done; }
start() { # start SERVER LOOPS on fresh ports, pinned; waits until it accepts
  free; local p=$port; free; local adm=$port
  if [ "$1" = gnet-chat ]; then
    "${nice[@]}" taskset -c "$scpu" "$a/netpeers" gnet-chat 127.0.0.1:$p 127.0.0.1:$adm 60s "$2" >"$tmp/server.log" 2>&1 & pid=$!
  else
    "${nice[@]}" taskset -c "$scpu" "$tmp/chat" --addr 127.0.0.1:$p --admin 127.0.0.1:$adm --idle 60s --backend "$1" --loops "$2" >"$tmp/server.log" 2>&1 & pid=$!
  fi
  port=$p
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench.sh: $1 with $2 loops did not start: $(cat "$tmp/server.log")" >&2; return 1
}
echo "regime: $("$a/pipe_floor" raw 2)"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r), $(go version | cut -d' ' -f3), nice ${NICE:-0}"
declare -A times cpus waits
for r in $(seq "$rounds"); do
  for L in $loops_list; do
    for s in $servers; do
      start "$s" "$L" || continue
      # shellcheck disable=SC2086
      line=$("${nice[@]}" taskset -c "$ccpu" "$tmp/load" --addr 127.0.0.1:$port --pid "$pid" ${LOAD_ARGS:-} 2>&1) || line="FAILED: $line"
      stop
      echo "round $r $s loops $L: $line"
      [[ $line == FAILED* ]] && continue
      t=$(sed -E 's/.* in ([0-9.]+) s .*/\1/' <<<"$line")
      c=$(sed -E 's/.*server ([0-9.]+) s .*/\1/' <<<"$line")
      w=$(sed -E 's/.*waited ([0-9.]+) s .*/\1/' <<<"$line")
      times[$s/$L]="${times[$s/$L]:-} $t"; cpus[$s/$L]="${cpus[$s/$L]:-} $c"; waits[$s/$L]="${waits[$s/$L]:-} $w"
    done
  done
done
echo "regime: $("$a/pipe_floor" raw 2)"
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END{if (NR==0) print "-"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
echo
echo "| server | loops | runs | time (median) | ÷ gnet-chat | server CPU (median) | ÷ gnet-chat | server waited for a CPU (median) |"
echo "|---|---|---|---|---|---|---|---|"
for L in $loops_list; do
  gt=$(median "${times[gnet-chat/$L]:-}"); gc=$(median "${cpus[gnet-chat/$L]:-}")
  for s in $servers; do
    t=$(median "${times[$s/$L]:-}"); c=$(median "${cpus[$s/$L]:-}"); w=$(median "${waits[$s/$L]:-}")
    n=$(wc -w <<<"${times[$s/$L]:-}")
    awk -v s="$s" -v L="$L" -v n="$n" -v t="$t" -v c="$c" -v gt="$gt" -v gc="$gc" -v w="$w" 'BEGIN{
      rt = (t!="-" && gt!="-" && gt>0) ? sprintf("%.3f", t/gt) : "-"; rc = (c!="-" && gc!="-" && gc>0) ? sprintf("%.3f", c/gc) : "-"
      printf "| %s | %s | %s | %s s | %s | %s s | %s | %s s |\n", (s=="gnet-chat" ? s : "ringev " s), L, n, t, rt, c, rc, w }'
  done
done
