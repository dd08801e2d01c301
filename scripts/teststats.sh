#!/usr/bin/env bash
# Counts what the test reorganisation is judged by, for the root package and for the whole
# module: test files, top-level tests, helper functions (every other top-level function or
# method in a *_test.go file, and in internal/testutil), skip helpers (helpers whose body
# skips), and the longest test file.
#
#   scripts/teststats.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# count FILE...: "helpers N skips M" and, one a line, "skip: FILE FUNC" for each skip helper.
count() {
  awk '
    FNR == 1 { fn = "" }
    /^func / {
      name = $0
      sub(/^func (\([^)]*\) )?/, "", name)
      sub(/[\[(].*/, "", name)
      fn = name; body = ""; file = FILENAME
      if ($0 ~ /}$/) { if (fn !~ /^(Test|Benchmark|Example|Fuzz)/) h++; fn = "" }
      next
    }
    fn != "" && /^}/ {
      if (fn !~ /^(Test|Benchmark|Example|Fuzz)/) {
        h++
        if (body ~ /\.Skip/) { s++; skips = skips "  skip helper: " file " " fn "\n" }
      }
      fn = ""; next
    }
    fn != "" { body = body $0 }
    END { printf "helpers %d, skip helpers %d\n%s", h, s, skips }
  ' "$@"
}

root=$(ls ./*_test.go)
all=$(find . -name '*_test.go' -not -path './vendor/*' | sort)
echo "root package: $(echo "$root" | wc -l) test files, $(cat $root | wc -l) lines," \
  "$(grep -hcE '^func Test' $root | paste -sd+ | bc) tests"
wc -l $root | grep -v ' total$' | sort -n | tail -1 | awk '{print "  longest test file: " $2 " (" $1 " lines)"}'
echo "  $(count $root internal/testutil/*.go | head -1) (with internal/testutil)"
echo "whole module: $(echo "$all" | wc -l) test files, $(grep -hcE '^func Test' $all | paste -sd+ | bc) tests"
count $all internal/testutil/*.go
