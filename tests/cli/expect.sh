# Shared by the end-to-end scripts (source it): `expect NAME CODE PATTERN -- COMMAND...`
# checks that the command exits with CODE within 120 s and that its combined output
# matches the extended regular expression PATTERN; `finish` prints the tally and sets the
# exit status.
passed=0 failed=0
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  local out rc
  out=$(timeout 120 "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $code), output:"
    sed 's/^/    /' <<<"$out" | head -30
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
