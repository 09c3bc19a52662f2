#!/usr/bin/env bash
# Builds hoop and runs the whole test suite, as CI does (.ci/run):
#   1. set-up (scripts/setup.sh), configure, build, ctest: every test; then scripts/isa-check.sh:
#      the kernel, collective and training-equivalence tests with the reduction kernels and
#      oneDNN held to narrower instruction sets, as other CPUs would choose them;
#   2. the sanitizer runs (scripts/sanitize.sh): ASan+LSan+UBSan over the unit tests and a
#      selection of multi-process tests, TSan over the tensor fusion tests;
#   3. the fuzzers (scripts/fuzz.sh), 45 s each from their seed corpora.
# Any failure, sanitizer report or fuzzer crash fails the run.
#   --quick     step 1 only          --sanitize  set-up and step 2 only
#   --fuzz      set-up and step 3 only
set -euo pipefail
cd "$(dirname "$0")/.."
steps="suite sanitize fuzz"
case "${1:-}" in
  "") ;;
  --quick) steps="suite" ;;
  --sanitize) steps="sanitize" ;;
  --fuzz) steps="fuzz" ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
  *) echo "test: unknown option '$1' (known: --quick, --sanitize, --fuzz)" >&2; exit 2 ;;
esac
scripts/setup.sh
timed() {  # name, command...
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test: $name passed in $((SECONDS - start)) s"
}
for step in $steps; do
  case $step in
    suite)
      timed build bash -c 'cmake -S . -B build && cmake --build build -j2'
      # Two at a time, as tests/CMakeLists.txt arranges (the multi-process matrix alone).
      timed ctest bash -c 'cd build && ctest --output-on-failure -j2'
      # The float-sensitive tests with the kernels other CPUs would choose (issue 48).
      timed isa-check scripts/isa-check.sh build ;;
    sanitize) timed sanitizers scripts/sanitize.sh asan tsan ;;
    fuzz) timed fuzzing scripts/fuzz.sh 45 ;;
  esac
done
echo "test: all passed in $SECONDS s"
