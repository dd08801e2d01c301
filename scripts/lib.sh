# shellcheck shell=bash
# What scripts/compare.sh and scripts/compare_busy.sh share; sourced by them (from the
# repository's root), not run.

# build_ringev: builds cmd/ringev into a temporary directory $bin (removed on exit), with $raw
# the file of the rounds' raw lines in it; sets $cpu (CPU, default 0; none: unpinned) and $pin,
# the command prefix that pins a process to it (taskset, when there is one).
build_ringev() {
  bin=$(mktemp -d)
  trap 'rm -rf "$bin"' EXIT
  go build -o "$bin/ringev" ./cmd/ringev
  raw="$bin/raw"
  cpu=${CPU:-0}
  pin=()
  if [ "$cpu" != none ] && command -v taskset >/dev/null; then pin=(taskset -c "$cpu"); fi
}

# runs_backend SCRIPT BACKEND MODE: whether ringev runs BACKEND in MODE on this kernel (io_uring
# may be switched off); when it does not, says so on stderr, once: "SCRIPT: leaving out ringev
# BACKEND: why".
runs_backend() {
  if "$bin/ringev" bench pipes --shape fd_speed1 --backend "$2" --mode "$3" --events 20 >/dev/null 2>"$bin/probe"; then
    return 0
  fi
  echo "$1: leaving out ringev $2: $(tail -1 "$bin/probe")" >&2
  return 1
}
