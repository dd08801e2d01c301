#!/usr/bin/env bash
# The slowloris figure: CONNS connections (1,000) that each send one byte of a request head
# every EVERY (5 s) and never end it, against `ringev serve http` (its request timeout: 10 s by
# default), while wrk drives 64 other connections. For each backend and round: wrk's rate alone,
# then with the slow connections open (they are replaced as the server closes them, so that the
# attack lasts), the drop, and when the server closed the slow connections, counted from each
# one's first byte (scripts/slowloris/main.go's report). The server runs on CPU 0, wrk and the
# slow client on CPU 1; backends alternate within a round. Wall-clock figures: run it under
# `flock /work/team/quiet.lock`; the first line gives the regime (`pipe_floor raw`'s events/s).
#
# usage: scripts/slowloris.sh [ROUNDS] [SECONDS]   (from the repository's root; 3 rounds, wrk 10 s)
# env: BACKENDS ("uring epoll"), CONNS (1000), EVERY (5s), SERVE_ARGS (more `serve http` flags),
#      PIPE_FLOOR (the anchors' pipe_floor binary; default /tmp/ringev-anchors/pipe_floor)
# Needs wrk, taskset, ss, go. RLIMIT_NOFILE is raised to 8192 for the server and the client.
set -u
case "${1:-}" in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
rounds=${1:-3}; secs=${2:-10}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "slowloris.sh: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "slowloris.sh: SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
backends=${BACKENDS:-uring epoll}; conns=${CONNS:-1000}; every=${EVERY:-5s}
for c in wrk taskset ss go; do
  command -v $c >/dev/null || { echo "slowloris.sh: $c missing" >&2; exit 2; }
done
ulimit -n 8192 || { echo "slowloris.sh: cannot raise RLIMIT_NOFILE to 8192" >&2; exit 2; }
pid=; slow=
stop() {
  [ -n "$slow" ] && { kill "$slow" 2>/dev/null; wait "$slow" 2>/dev/null; }
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
  pid=; slow=
}
bin=$(mktemp -d); trap 'stop; rm -rf "$bin"' EXIT
go build -o "$bin/ringev" ./cmd/ringev && go build -o "$bin/slowloris" ./scripts/slowloris || exit 2
floor=${PIPE_FLOOR:-/tmp/ringev-anchors/pipe_floor}
if [ -x "$floor" ]; then
  echo "regime: pipe_floor raw 1: $(taskset -c 0 "$floor" raw 1 2>&1 | tail -1)"
else
  echo "regime: unknown ($floor missing: build the anchors with their run.sh)"
fi
echo "slowloris.sh: $rounds round(s), wrk -t1 -c64 -d${secs}s, $conns slow connections, a byte every $every; $(date -u +%FT%TZ)"
port=18000
free_port() { port=$((port + 1)); while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done; }
wrk_rate() { # the rate of one wrk run on the server's port
  taskset -c 1 wrk -t1 -c64 -d"${secs}"s "http://127.0.0.1:$port/plaintext" 2>&1 | awk '/Requests\/sec/ {print $2} /Socket errors|Non-2xx/ {print "wrk: " $0 > "/dev/stderr"}'
}
established() { ss -Htn state established "( dport = :$port )" | wc -l; }
declare -A drops
for r in $(seq "$rounds"); do
  for b in $backends; do
    free_port
    # shellcheck disable=SC2086
    taskset -c 0 "$bin/ringev" serve http --addr 127.0.0.1:$port --backend "$b" ${SERVE_ARGS:-} 2>"$bin/serve.err" &
    pid=$!
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
    taskset -c 1 wrk -t1 -c64 -d1s "http://127.0.0.1:$port/plaintext" >/dev/null 2>&1 # warm-up
    alone=$(wrk_rate)
    taskset -c 1 "$bin/slowloris" --addr 127.0.0.1:$port --conns "$conns" --every "$every" --for $((secs + 15))s --reconnect >"$bin/slow.out" 2>&1 &
    slow=$!
    for _ in $(seq 100); do [ "$(established)" -ge "$conns" ] && break; sleep 0.1; done
    open=$(established)
    attacked=$(wrk_rate)
    wait "$slow"; slow=
    stop
    drop=$(awk -v a="${alone:-0}" -v b="${attacked:-0}" 'BEGIN { if (a > 0) printf "%.1f", 100 * (a - b) / a; else print "nan" }')
    drops[$b]="${drops[$b]:-} $drop"
    echo "$b round $r: wrk alone ${alone:-?} req/s, with $open slow connections open ${attacked:-?} req/s: drop $drop %"
    echo "$b round $r: $(tail -1 "$bin/slow.out")"
    grep -v "listening on" "$bin/serve.err" | head -3
  done
done
for b in $backends; do
  # shellcheck disable=SC2086
  echo "$b: drop of wrk's rate, median of $rounds: $(printf '%s\n' ${drops[$b]} | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}') % (rounds:${drops[$b]})"
done
