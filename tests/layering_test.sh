#!/usr/bin/env bash
# The layering check (cmake/check_layering.cmake): the tree passes it, and a made-up tree
# with an upward include, a sideways include and a folder outside the layering fails it,
# each named by file and include; so do the same within src/scenario/.
set -euo pipefail
root="$1"
check="$root/cmake/check_layering.cmake"
fail=0
cmake -DSRC="$root/src" -P "$check" || { echo "FAIL: the tree itself breaks the layering"; fail=1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/core" "$tmp/src/fabric" "$tmp/src/offload" "$tmp/src/extra" "$tmp/src/scenario/report" \
  "$tmp/src/scenario/fabric" "$tmp/src/scenario/extra"
printf '#include "fabric/port.h"\n#include <vector>\n' >"$tmp/src/core/up.h"
printf '#include "core/units.h"\n#include "toml++/toml.h"\n' >"$tmp/src/fabric/fine.cc"
printf '#include "core/units.h"\n  #include "fabric/port.h"\n' >"$tmp/src/offload/side.cc"
printf '#include "scenario/report/files.h"\n#include "scenario/fabric/outputs.h"\n' >"$tmp/src/scenario/report/up.cc"
printf '#include "scenario/report/files.h"\n#include "scenario/parameters.h"\n#include "fabric/port.h"\n' \
  >"$tmp/src/scenario/fabric/fine.cc"
printf '#include "scenario/report/files.h"\n' >"$tmp/src/scenario/extra/new.cc"
if out=$(cmake -DSRC="$tmp/src" -P "$check" 2>&1); then
  echo "FAIL: a tree with an upward include passed"; fail=1
fi
expect() {
  if grep -qF -- "$1" <<<"$out"; then echo "ok: $1"; else echo "FAIL: missing: $1"; fail=1; fi
}
expect 'src/core/up.h: #include "fabric/port.h": core may include only core'
expect 'src/offload/side.cc: #include "fabric/port.h": offload may include only offload, core'
expect 'src/extra/: a folder without a place in the layering'
expect 'src/scenario/report/up.cc: #include "scenario/fabric/outputs.h": scenario/report may include only scenario/report'
expect 'src/scenario/extra/new.cc: src/scenario/extra/: a folder without a place in the layering'
if grep -qF 'fine.cc' <<<"$out"; then echo "FAIL: an allowed include was reported"; fail=1; fi
exit $fail
