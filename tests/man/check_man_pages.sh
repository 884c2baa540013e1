#!/bin/sh
# SPDX-License-Identifier: MIT
# The man pages, checked (ctest -R '^man\.'):
# - PROGRAM_PAGE has an entry (an option name in bold on the line after a .TP) for every long
#   option that PROGRAM --help lists, so an option the page lacks fails here: a page built before
#   the option was added, an entry cmake/ManPage.cmake failed to read, a page edited by hand;
# - every command line of its EXAMPLES section is valid (PROGRAM ... --dry-run exits 0);
# - every page renders with groff without a warning (-ww: every warning groff has).
# Without groff the rendering cannot be checked: after the other checks pass, the test exits 77,
# which CTest reports as skipped (SKIP_RETURN_CODE), with the reason in its output.
# Usage: check_man_pages.sh [--help-file FILE] PROGRAM PROGRAM_PAGE [PAGE...]
#   --help-file: read the help from FILE instead of running PROGRAM --help (the controls use it).
set -u
help_file=
if [ "${1:-}" = --help-file ]; then
  help_file=$2
  shift 2
fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--help-file FILE] PROGRAM PROGRAM_PAGE [PAGE...]" >&2
  exit 2
fi
program=$1
program_page=$2
shift
failed=0
fail() {
  echo "$*"
  failed=1
}

for page in "$@"; do
  [ -s "$page" ] || { echo "$page: no such page (is the build done?)"; exit 1; }
done

# The long options: the names that start each entry of the help ("  -d,--ib-dev,--profile TEXT").
if [ -n "$help_file" ]; then
  help=$(cat "$help_file") || exit 1
else
  help=$("$program" --help) || { echo "$program --help failed"; exit 1; }
fi
options=$(printf '%s\n' "$help" | sed -n 's/^  \(-[^ ]*\).*/\1/p' | tr ',' '\n' | grep -e '^--')
[ -n "$options" ] || { echo "the help lists no long option: is it CLI11's?"; exit 1; }
tags=$(awk 'previous == ".TP" { print } { previous = $0 }' "$program_page")
page_name=$(basename "$program_page")
count=0
total=0
for option in $options; do
  total=$((total + 1))
  entry=$(printf '\\fB%s\\fR' "$(printf '%s' "$option" | sed 's/-/\\-/g')")
  if printf '%s\n' "$tags" | grep -qF -e "$entry"; then
    count=$((count + 1))
  else
    fail "$page_name has no entry for $option (an option of the help)"
  fi
done
echo "$page_name: an entry for $count of the help's $total long options"

# The examples: each line of EXAMPLES that starts with the program's name (or a perftest-named link,
# ndksim_write_bw, which is `ndksim-perf write_bw`), run with --dry-run.
examples=$(awk '/^\.SH / { on = ($0 == ".SH EXAMPLES") } on' "$program_page" | grep -e '^ndksim' |
           sed 's/\\-/-/g')
count=0
set -f  # the command lines are words, not patterns
while IFS= read -r example; do
  [ -n "$example" ] || continue
  name=${example%% *}
  arguments=${example#"$name"}
  case $name in
    ndksim_*) arguments="${name#ndksim_}$arguments" ;;
  esac
  # shellcheck disable=SC2086  # the arguments are words
  if out=$("$program" $arguments --dry-run 2>&1); then
    count=$((count + 1))
  else
    fail "$page_name: the example \"$example\" is not a valid command line: $out"
  fi
done <<LINES
$examples
LINES
set +f
echo "$page_name: $count examples, each valid (--dry-run)"

# The rendering.
if ! command -v groff >/dev/null 2>&1; then
  [ $failed -eq 0 ] || exit 1
  echo "groff is not installed (Debian: groff-base): the pages' rendering is not checked; skipped"
  exit 77
fi
for page in "$@"; do
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  if [ -n "$warnings" ]; then
    fail "$(basename "$page"): groff warns: $warnings"
  else
    echo "$(basename "$page"): renders without a warning"
  fi
done
exit $failed
