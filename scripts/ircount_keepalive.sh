#!/usr/bin/env bash
# User-space instructions per keep-alive request of an HTTP server, with or without TLS: the
# server on CPU 0 under callgrind (every thread summed), driven from CPU 1 by scripts/keepalive
# (256 connections opened and handshaken before counting, GET /plaintext at depth 1), counters
# zeroed and dumped around each window (W, default 10,30 s). Prints each window's Ir per request
# (no handshake inside a window) and the two windows' difference.
#
# usage: scripts/ircount_keepalive.sh http|https -- CMD-with-{port}    (from the repository's root)
# Under valgrind 3.19 io_uring_enter blocks every thread while it waits, so a TLS server on the
# uring backend never runs its handshakes there: give ringev --backend epoll.
set -uo pipefail
case "${1:-}" in http|https) kind=$1; shift;; *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2;; esac
[ "${1:-}" = -- ] && shift
W=${W:-10,30}
tlsflag=""; [ "$kind" = https ] && tlsflag=-tls
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/keepalive" ./scripts/keepalive || exit 2
export GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off # as ircount.sh: callgrind and Go's runtime
port=$((20000 + RANDOM % 20000)); while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done
cmd=(); for a in "$@"; do cmd+=("${a//\{port\}/$port}"); done
irsum() { grep -m1 -E '^(summary|totals):' "$1" | awk '{print $2}'; }
taskset -c 0 valgrind --tool=callgrind --separate-threads=no --callgrind-out-file="$tmp/out.%p" "${cmd[@]}" >/dev/null 2>"$tmp/cg.err" &
sp=$!
for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
read -r r1 r2 < <(GODEBUG= taskset -c 1 "$tmp/keepalive" -addr 127.0.0.1:$port $tlsflag -pid $sp -w "$W")
sleep 1; kill -TERM $sp; wait $sp 2>/dev/null
f=($(ls "$tmp"/out.* | grep -E '\.[0-9]+\.[0-9]+$' | sort -t. -k3 -n))
[ ${#f[@]} -ge 2 ] && [ -n "${r2:-}" ] || { echo "ircount_keepalive: no dumps or no requests (callgrind: $(tail -2 "$tmp/cg.err" | tr '\n' ' '))" >&2; exit 1; }
i1=$(irsum "${f[0]}"); i2=$(irsum "${f[1]}")
awk -v a="$i1" -v b="$i2" -v x="$r1" -v y="$r2" -v w="$W" 'BEGIN{
  printf "Ir/request %.0f and %.0f (windows %s s: %d and %d requests); difference ", a/x, b/y, w, x, y
  if (y > x) printf "%.0f\n", (b-a)/(y-x); else print "n/a (the windows made as many requests)" }'
