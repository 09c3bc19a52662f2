#!/usr/bin/env bash
# The suite's float-sensitive tests as other CPUs would run them, on this one (issue 48): hoop's
# host reduction kernels and oneDNN each choose code per instruction set, so a tolerance or an
# assumption that holds on the CI machine's CPU may not on another (a Xeon with AVX-512 against
# an EPYC with AVX2). Each pass forces a narrower choice:
#   generic  HOOP_KERNEL_ISA=generic  ONEDNN_MAX_CPU_ISA=SSE41
#   avx2     HOOP_KERNEL_ISA=avx2     ONEDNN_MAX_CPU_ISA=AVX2  (where the CPU has AVX2)
# and runs the kernel, wire, executor and in-process collective unit tests and the training runs
# compared against each other. (OpenBLAS's choice is left alone: OPENBLAS_CORETYPE is the machine's to set.)
#   usage: scripts/isa-check.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
esac
build=${1:-build}
[ -x "$build/bin/hoop-unit-tests" ] || { echo "isa-check: no $build/bin/hoop-unit-tests (build first)" >&2; exit 2; }
# A run's last lines when it passes; when it fails, every failure it reported (Catch's blocks
# between the rules), so the log says which check failed and why.
run() {
  local log rc=0
  log=$(mktemp)
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    tail -3 "$log"
  else
    grep -v '^hoop\[rank' "$log" | tail -150
    echo "isa-check: $(basename "$1") failed (exit code $rc) with HOOP_KERNEL_ISA=$HOOP_KERNEL_ISA" >&2
  fi
  rm -f "$log"
  return "$rc"
}
passes=("generic SSE41")
grep -qw avx2 /proc/cpuinfo && passes+=("avx2 AVX2")
for pass in "${passes[@]}"; do
  read -r isa dnnl <<<"$pass"
  export HOOP_KERNEL_ISA=$isa ONEDNN_MAX_CPU_ISA=$dnnl
  got=$("$build/bin/hoop-info" | sed -n 's/^reduction kernels: //p')
  [ "$got" = "$isa" ] || { echo "isa-check: HOOP_KERNEL_ISA=$isa, but hoop-info says '$got'" >&2; exit 1; }
  echo "isa-check: $isa (oneDNN at most $dnnl)"
  # Not the schedule simulator's tests (symbolic elements, no kernel runs) nor the worker's CPU
  # check ([spin]: the suite's own run has it, alone).
  run "$build/bin/hoop-unit-tests" "[kernels],[wire],[executor],[inproc]~[spin]"
  if [ -x "$build/bin/hoop-train-tests" ]; then
    # One argument: Catch ORs the comma-separated specs of it.
    run "$build/bin/hoop-train-tests" \
      "*4 ranks with the same global batch reach the same parameters,*trains to the hand-written layers*,*2 x 2 reaches sync*"
  fi
done
echo "isa-check: passed"
