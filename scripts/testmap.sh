#!/usr/bin/env bash
# Checks that no behaviour of the root package's tests was lost when they were filed by unit:
# docs/testmap.md maps every test of docs/tests-before.md to the test that tests its behaviour
# now (a subtest after a slash). It fails, naming the row, if a test before has no row (or two),
# if a test a row names does not exist in the tree (or is in another file than the row says, or
# a subtest name does not appear in that file; a row whose how is "removed" names no test), or if a test of the tree is in no row and not
# listed as new. With -w it also writes docs/tests-after.md (scripts/testlist.sh, with the
# counts of scripts/teststats.sh).
#
#   scripts/testmap.sh [-w]
set -euo pipefail
cd "$(dirname "$0")/.."
before=docs/tests-before.md
map=docs/testmap.md

rows() { # FILE: the table rows of a Markdown file, without the header and separator
  grep -E '^\| [^ -]' "$1" | grep -vE '^\| (file|before: file) \|'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows "$before" | awk -F' \\| ' '{print $2}' | sort >"$tmp/before"
rows "$map" | awk -F' \\| ' '{print $2}' | sort >"$tmp/mapped"
go test -list '.*' . | grep -E '^(Test|Benchmark|Example|Fuzz)' | sort >"$tmp/now"

status=0
fail() { echo "testmap: $*" >&2; status=1; }

# Every test before has exactly one row, and every row is a test before.
while read -r n; do fail "$n (before) has no row in $map"; done < <(comm -23 "$tmp/before" <(sort -u "$tmp/mapped"))
while read -r n; do fail "$n has a row in $map but is not in $before"; done < <(comm -13 "$tmp/before" <(sort -u "$tmp/mapped"))
while read -r n; do fail "$n has more than one row in $map"; done < <(uniq -d "$tmp/mapped")

# Every test a row names exists, in the file the row names; a subtest's name is in that file.
named="$tmp/named"
: >"$named"
while IFS='|' read -r _ bfile btest afile atest how _; do
  btest=$(echo "$btest" | xargs) afile=$(echo "$afile" | xargs) atest=$(echo "$atest" | xargs)
  [ "$(echo "$how" | xargs)" = removed ] && continue # a behaviour the library no longer has
  top=${atest%%/*}
  sub=${atest#"$top"}
  sub=${sub#/}
  echo "$top" >>"$named"
  if ! grep -qx "$top" "$tmp/now"; then
    fail "$btest -> $atest: no test $top in the tree"
    continue
  fi
  if ! grep -qE "^func $top\(" "$afile" 2>/dev/null; then
    fail "$btest -> $atest: $top is not defined in $afile"
  fi
  if [ -n "$sub" ] && ! grep -qF "\"$sub\"" "$afile"; then
    fail "$btest -> $atest: no subtest \"$sub\" in $afile"
  fi
done < <(rows "$map")

# Every test of the tree is named by a row, or listed as new.
new=$(sed -n 's/^New tests[^:]*: //p' "$map" | tr -d ' .' | tr ',' '\n' | grep -v '^none$' || true)
while read -r n; do
  if ! grep -qx "$n" <(echo "$new"); then
    fail "$n (now) is named by no row of $map and not listed as new"
  fi
done < <(comm -23 "$tmp/now" <(sort -u "$named"))

nb=$(wc -l <"$tmp/before")
nn=$(wc -l <"$tmp/now")
if [ "$status" -eq 0 ]; then
  echo "testmap: all $nb tests before are mapped to the $nn tests now ($(rows "$map" | awk -F'|' '{gsub(/ /, "", $6); print $6}' | sort | uniq -c | awk '{printf "%s%d %s", sep, $1, $2; sep=", "}')); nothing lost"
fi

if [ "${1:-}" = -w ]; then
  {
    echo "# The root package's tests after the reorganisation"
    echo
    echo "Every top-level test, benchmark and example of the root package after the tests were filed"
    echo "by unit, with the behaviour each tests: the first sentence of its doc comment. Made by"
    echo "\`scripts/testlist.sh\`; docs/testmap.md maps the tests before (docs/tests-before.md) to these."
    echo
    echo '```'
    scripts/teststats.sh | grep -v 'skip helper:'
    echo '```'
    echo
    scripts/testlist.sh
  } >docs/tests-after.md
  echo "testmap: wrote docs/tests-after.md"
fi
exit $status
