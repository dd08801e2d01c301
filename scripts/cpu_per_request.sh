#!/usr/bin/env bash
# Where the CPU per request goes (docs/serve.md): ringev's servers (requests API on uring) against
# redis-server (redis-benchmark GET -c 50 -P 1) and gnet v2 (wrk -t1 -c256, plaintext depth 1),
# each server pinned to CPU 0 and its client to CPU 1, the servers taking turns in each round.
# For each server and round: requests/s; CPU per request (utime+stime of the whole process from
# /proc/PID/stat around the client's run); syscalls and context switches per request (perf stat
# on the syscall tracepoints, a second run: strace -c slows every syscall, which lets the
# requests API batch more per io_uring_enter and undercounts them); a perf profile (perf record
# -g -e cpu-clock, a third run). scripts/perf_groups.py then sorts the samples into groups.
#
# usage: scripts/cpu_per_request.sh [ROUNDS] [OUTDIR]    (from the repository's root)
# env: N (requests per redis-benchmark run, 200000), SECS (seconds per wrk run, 5),
#      ANCHORS (the anchors directory; default shared/anchors beside the repository),
#      RESP_SERVERS / HTTP_SERVERS: more servers in the same rounds, "NAME=COMMAND" separated by
#      ';', COMMAND with {port} and $bin for the built binaries (e.g. 'ringev-resp-epoll=$bin/ringev
#      serve resp --addr 127.0.0.1:{port} --backend epoll --api readiness').
# Needs perf, redis-server, redis-benchmark, wrk, taskset, python3, go; root (perf -p, tracepoints).
set -u
case "${1:-}" in -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
rounds=${1:-3}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "cpu_per_request.sh: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
out=${2:-$(mktemp -d)}; mkdir -p "$out" || { echo "cpu_per_request.sh: cannot create OUTDIR '$out'" >&2; exit 2; }
anchors=${ANCHORS:-}
if [ -z "$anchors" ]; then # shared/anchors beside the repository, or beside the main worktree of a linked one
  for d in "$(pwd)/.." "$(git rev-parse --git-common-dir 2>/dev/null)/../.."; do
    [ -f "$d/shared/anchors/net.sh" ] && { anchors=$(cd "$d/shared/anchors" && pwd); break; }
  done
fi
N=${N:-200000}; SECS=${SECS:-5}
for c in perf redis-server redis-benchmark wrk taskset python3; do
  command -v $c >/dev/null || { echo "cpu_per_request.sh: $c missing" >&2; exit 2; }
done
[ -f "${anchors:-.}/net.sh" ] || { echo "cpu_per_request.sh: no shared/anchors/net.sh beside the repository; set ANCHORS" >&2; exit 2; }
pid=
stop() { [ -n "$pid" ] && { kill $pid 2>/dev/null; wait $pid 2>/dev/null; }; pid=; }
bin=$(mktemp -d); trap 'stop; rm -rf "$bin"' EXIT
go build -o "$bin/ringev" ./cmd/ringev || exit 2
(cd "$anchors/netpeers" && GOFLAGS=-mod=mod go build -o "$bin/netpeers" .) || exit 2
hz=$(getconf CLK_TCK)
ev="context-switches,raw_syscalls:sys_enter"
for s in read write recvfrom sendto epoll_wait epoll_pwait epoll_ctl io_uring_enter futex nanosleep \
  getpid tgkill rt_sigreturn sched_yield accept4 madvise mmap; do ev="$ev,syscalls:sys_enter_$s"; done
port=18100; pid=
start() { # NAME CMD (with {port}); sets pid once the server accepts
  port=$((port+1)); while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port+1)); done
  local cmd=${2//\{port\}/$port}
  eval "exec taskset -c 0 $cmd" >"$dir/$1.server.log" 2>&1 & pid=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return 0; sleep 0.05; done
  echo "cpu_per_request.sh: $1 did not start" >&2; return 1
}
ticks() { sed 's/.*) //' /proc/$pid/stat | awk '{print $12, $13}'; } # utime stime, whole process
# measure NAME CLIENT...: the client runs three times (CPU, perf stat, perf record)
measure() {
  local name=$1; shift
  read -r u0 s0 < <(ticks)
  taskset -c 1 "$@" >"$dir/$name.client" 2>&1
  read -r u1 s1 < <(ticks)
  echo "user $((u1-u0)) sys $((s1-s0)) hz $hz" >"$dir/$name.cpu"
  # the second io_uring_enter event counts the waiting enters (min_complete > 0)
  perf stat -x, -e "$ev" -e syscalls:sys_enter_io_uring_enter --filter 'min_complete > 0' -p $pid \
    -o "$dir/$name.stat" -- taskset -c 1 "$@" >"$dir/$name.statclient" 2>&1
  perf record -q -g -e cpu-clock -F 4000 -p $pid -o "$dir/$name.perf" -- taskset -c 1 "$@" >/dev/null 2>&1
}
resp() {
  start "$1" "$2" || return
  taskset -c 1 redis-benchmark -p $port -q -n 20000 -c 50 -t set,get >/dev/null 2>&1 # warm-up; the key exists
  measure "$1" redis-benchmark -p $port -q -n $N -c 50 -P 1 -t get
  stop
}
http() {
  start "$1" "$2" || return
  taskset -c 1 wrk -t1 -c256 -d1s -s "$anchors/pipeline.lua" http://127.0.0.1:$port/ -- 1 >/dev/null 2>&1
  measure "$1" wrk -t1 -c256 -d${SECS}s --latency -s "$anchors/pipeline.lua" http://127.0.0.1:$port/ -- 1
  stop
}
floor() { [ -x "${ANCHORS_BIN:-/tmp/ringev-anchors}/pipe_floor" ] && "${ANCHORS_BIN:-/tmp/ringev-anchors}/pipe_floor" raw; }
{ date -u +%FT%TZ; uname -r; git rev-parse --short HEAD; echo "N $N"; floor; } >"$out/run.txt"
for r in $(seq "$rounds"); do
  dir="$out/round$r"; mkdir -p "$dir"
  resp redis "redis-server --port {port} --save '' --appendonly no --bind 127.0.0.1 --protected-mode no --loglevel warning"
  resp ringev-resp "$bin/ringev serve resp --addr 127.0.0.1:{port} --backend uring --api requests"
  http gnet "env GOMAXPROCS=1 $bin/netpeers gnet-http 127.0.0.1:{port}"
  http ringev-http "$bin/ringev serve http --addr 127.0.0.1:{port} --backend uring --api requests"
  IFS=';' read -r -a x <<<"${RESP_SERVERS:-}"; for s in "${x[@]}"; do [ -n "$s" ] && resp "${s%%=*}" "${s#*=}"; done
  IFS=';' read -r -a x <<<"${HTTP_SERVERS:-}"; for s in "${x[@]}"; do [ -n "$s" ] && http "${s%%=*}" "${s#*=}"; done
done
{ floor; date -u +%FT%TZ; } >>"$out/run.txt"
python3 "$(dirname "$0")/perf_groups.py" "$out"
echo "raw data in $out" >&2
