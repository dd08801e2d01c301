#!/usr/bin/env bash
# Lists the tests of one Go package (default: the root package) as a Markdown table, one row per
# top-level Test, Benchmark, Example or Fuzz function: its file, its name, and the behaviour it
# tests (the first sentence of its doc comment; without one, its name in words).
#
#   scripts/testlist.sh [DIR]
#
# The names come from `go test -list`, so the table is what go test runs; each is then found in
# DIR's *_test.go files. A name that go test lists but no file defines is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.}

names=$(go test -list '.*' "$dir" | grep -E '^(Test|Benchmark|Example|Fuzz)' | sort)

# doc FILE NAME: the first sentence of the comment right above `func NAME(`, without a leading
# "NAME:" or "NAME".
doc() {
  awk -v name="$2" '
    /^\/\// { c = c " " substr($0, 3); next }
    $0 ~ "^func " name "\\(" { print c; found = 1; exit }
    { c = "" }
    END { if (!found) exit 1 }
  ' "$1" | sed -E "s/^ +//; s/^$2(:| )? *//; s/ +/ /g" |
    awk '{
      s = $0
      # the first sentence: up to a period followed by a space and a capital, or the end
      if (match(s, /[.] [A-Z(]/)) s = substr(s, 1, RSTART)
      gsub(/\|/, "\\|", s)
      print s
    }'
}

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
status=0
for n in $names; do
  f=$(grep -lE "^func $n\(" "$dir"/*_test.go 2>/dev/null | head -1 || true)
  if [ -z "$f" ]; then
    echo "testlist: $n: listed by go test, defined in no $dir/*_test.go" >&2
    status=1
    continue
  fi
  d=$(doc "$f" "$n")
  # no doc comment: the name, in words
  [ -n "$d" ] || d="(no doc comment; its name:) $(echo "$n" | sed -E 's/^(Test|Benchmark|Example|Fuzz)//; s/([a-z0-9])([A-Z])/\1 \2/g; s/([A-Z])([A-Z][a-z])/\1 \2/g')"
  echo "| $(basename "$f") | $n | $d |" >>"$rows"
done
echo "| file | test | behaviour |"
echo "|---|---|---|"
sort -t'|' -k2,2 -k3,3 "$rows"
exit $status
