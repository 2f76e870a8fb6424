#!/usr/bin/env bash
# check_format.sh - every C source and header of the tree is as .clang-format writes it.
# The style is pinned to Debian 12's clang-format (14): another major version formats some
# constructs differently, so it is refused rather than reporting a diff nobody can apply.
# Usage: check_format.sh SRC_DIR   (prints each file that differs, and how to fix it)
set -euo pipefail
src=${1:?usage: check_format.sh SRC_DIR}
cf=${CLANG_FORMAT:-clang-format}
if ! ver=$("$cf" --version 2>/dev/null); then
  echo "check_format: $cf not found (scripts/setup.sh test installs Debian's clang-format)" >&2
  exit 1
fi
case "$ver" in
  *"version 14."*) ;;
  *) echo "check_format: need clang-format 14 (Debian 12), got: $ver" >&2; exit 1 ;;
esac
cd "$src"
bad=0
while IFS= read -r -d '' f; do
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f" >&2
    bad=$((bad + 1))
  fi
done < <(find src include test -name '*.[ch]' -not -path '*/build*' -print0 | sort -z)
if [ "$bad" -gt 0 ]; then
  echo "check_format: $bad file(s) differ from .clang-format; run: clang-format -i FILE" >&2
  exit 1
fi
echo "check_format: every .c and .h under src, include and test is formatted"
