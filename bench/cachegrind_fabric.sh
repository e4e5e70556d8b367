# shellcheck shell=bash
# Sourced by bench/instructions_per_hop.sh and bench/misses_per_hop.sh: one run of
# bench/fabric_scale under cachegrind with the caches both simulate (a 32 KiB 8-way first
# level, a 32 MiB 16-way last level: fixed, not detected -- the VM reports a 508 MiB
# direct-mapped L3).
#   cachegrind_fabric SCRIPT BIN CASE STOP OUT ERR
# writes cachegrind's file to OUT and its report to ERR, prints fabric_scale's output;
# on a failure says so (naming SCRIPT) and exits 1.
cachegrind_fabric() {
  local script=$1 bin=$2 case=$3 stop=$4 out=$5 err=$6 printed
  if ! printed=$(valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64 \
    --cachegrind-out-file="$out" "$bin" "$case" "$stop" 2>"$err"); then
    echo "$script: fabric_scale $case $stop failed:" >&2
    grep -Ev '^(==|--)[0-9]+(==|--)' "$err" >&2
    exit 1
  fi
  printf '%s\n' "$printed"
}
