#!/usr/bin/env bash
# Checks that the C++ files changed since BASE (default HEAD~1: the last
# commit) are formatted as .clang-format says, with clang-format 14
# (installed when missing, as scripts/fuzz.sh installs clang 14).
#
#   scripts/check_format.sh          # files the last commit changed, and uncommitted changes
#   scripts/check_format.sh main     # files changed since main (a branch before it lands)
#   scripts/check_format.sh --all    # every tracked C++ file
#
# Why HEAD~1 and not the merge base with origin/main: CI checks out a clean
# clone of the commit under test, with no remote-tracking branches, so
# `origin/main...` does not resolve there; HEAD~1 does in any clone with
# history. Where there is no HEAD~1 (a shallow clone, the first commit) every
# tracked C++ file is checked. The tree was formatted as a whole once, so a
# file no commit touches stays formatted.
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$CLANG_FORMAT" >/dev/null && [[ $CLANG_FORMAT == clang-format-14 ]]; then
  scripts/apt_install.sh check_format clang-format-14
fi

base=${1:-HEAD~1}
what="changed since $base"
if [[ $base == --all ]]; then
  what="tracked"
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h')
elif ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "check_format: no commit $base in this clone; checking every C++ file"
  what="tracked"
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h')
else
  # Added, copied, modified or renamed since base, committed or not.
  mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- '*.cpp' '*.h')
fi

bad=()
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --style=file --dry-run --Werror "$f" 2>/dev/null; then
    bad+=("$f")
    "$CLANG_FORMAT" --style=file "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - | head -n 30 || true
  fi
done
if ((${#bad[@]} > 0)); then
  echo "check_format: ${#bad[@]} of ${#files[@]} C++ files are not formatted; fix with:" >&2
  echo "  $CLANG_FORMAT -i ${bad[*]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} C++ files $what, all formatted"
