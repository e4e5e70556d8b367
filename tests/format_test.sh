#!/usr/bin/env bash
# The formatting check: every C++ file (*.h, *.cc, *.cpp) of src/, tests/, bench/ and fuzz/
# follows .clang-format, as clang-format --dry-run --Werror sees it; the files that do not
# are named (`make format` rewrites them). A C++ file in any other folder fails the check
# too, until its folder joins the list here and in the Makefile's FORMAT_DIRS.
set -euo pipefail
root="$1"
cd "$root"
dirs=(src tests bench fuzz)  # the same folders as FORMAT_DIRS in the Makefile

if ! command -v clang-format >/dev/null 2>&1; then
  echo "FAIL: clang-format is not installed; run scripts/install-deps.sh (or make deps)"
  exit 1
fi
if [ ! -f .clang-format ]; then echo "FAIL: no .clang-format at the top of the tree"; exit 1; fi
version=$(clang-format --version)
echo "using $version"
fail=0

mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cpp' \) | sort)
if [ ${#files[@]} -eq 0 ]; then echo "FAIL: no C++ files found under ${dirs[*]}"; exit 1; fi

# C++ outside the folders above (build trees and hidden folders aside) would go unchecked.
prune=()
for d in "${dirs[@]}"; do prune+=(-path "./$d" -prune -o); done
mapfile -t stray < <(find . "${prune[@]}" -name '.?*' -prune -o -path ./build -prune -o \
  -type d -exec test -e '{}/CMakeCache.txt' \; -prune -o \
  -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cpp' \) -print | sed 's|^\./||' | sort)
for f in "${stray[@]}"; do
  echo "FAIL: $f: C++ outside ${dirs[*]}; add its folder to tests/format_test.sh and FORMAT_DIRS in the Makefile"
  fail=1
done

if out=$(clang-format --style=file --dry-run --Werror "${files[@]}" 2>&1); then
  echo "ok: ${#files[@]} files follow .clang-format"
else
  mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
  if [ ${#bad[@]} -eq 0 ]; then
    echo "FAIL: clang-format did not run cleanly:"
    echo "$out"
  else
    for f in "${bad[@]}"; do echo "FAIL: $f is not formatted as .clang-format says"; done
    echo "${#bad[@]} of ${#files[@]} files to reformat: run make format (clang-format -i) and review the diff"
    case "$version" in
      *"version 14."*) ;;
      *) echo "note: the tree is formatted with clang-format 14 (Debian 12's); other versions may differ" ;;
    esac
  fi
  fail=1
fi
exit $fail
