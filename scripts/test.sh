#!/usr/bin/env bash
# Builds hoop and runs the whole test suite, as CI does (.ci/run):
#   1. set-up (scripts/setup.sh), configure, build, ctest: every test; then scripts/isa-check.sh:
#      the kernel, collective and training-equivalence tests with the reduction kernels and
#      oneDNN held to narrower instruction sets, as other CPUs would choose them;
#   2. the sanitizer runs (scripts/sanitize.sh): ASan+LSan+UBSan over the unit tests and a
#      selection of multi-process tests, TSan over the tensor fusion tests;
#   3. the fuzzers (scripts/fuzz.sh), 30 s each from their seed corpora.
# Any failure, sanitizer report or fuzzer crash fails the run. The sanitizer and fuzzer trees
# start building ahead while the multi-process matrix runs alone in step 1 (on about 1.2 of 2
# cores), at idle priority (SCHED_IDLE, nice 19: only the CPU it leaves), and are paused after it
# (not beside the other suites: there the pip PyTorch suite took 709 s instead of 447; its ranks
# outnumber the cores and give theirs away, at sched_yield for one, and idle priority does not
# get it back at once); they go on beside the ISA passes (one process at a time: about one core
# idle; the passes took 86 s beside two idle-priority loops, 84 s alone) and finish in step 2,
# alone. Log in build/ahead.log; what failed to build there is built again in step 2, in the open.
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
# The test matrices shared out by the quarter-day (tests/python/support.py, the corpus, the failure
# and deterministic matrices) count from the run's start, so that suites that split one matrix
# between them take complementary windows even when the run crosses a quarter-day.
export HOOPTEST_QUARTER_DAY=${HOOPTEST_QUARTER_DAY:-$(($(date +%s) / 21600))}
timed() {  # name, command...
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test: $name passed in $((SECONDS - start)) s"
}

# The build ahead: its own process group (so that it can be paused and ended as one), the same
# session (so that its idle priority counts against the tests').
ahead=
start_ahead() {
  [[ " $steps " == *" sanitize "* ]] || return 0
  local idle=()
  chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0)
  set -m
  nice -n 19 "${idle[@]}" bash -c 'scripts/sanitize.sh --build-only asan tsan && scripts/fuzz.sh --build-only' \
    >build/ahead.log 2>&1 &
  ahead=$!
  set +m
  echo "test: building the sanitizer trees ahead (pid $ahead, idle priority; build/ahead.log)"
}
signal_ahead() { [ -n "$ahead" ] && kill "-$1" -- "-$ahead" 2>/dev/null || true; }
trap 'signal_ahead TERM; signal_ahead CONT' EXIT
wait_ahead() {
  [ -n "$ahead" ] || return 0
  signal_ahead CONT
  local start=$SECONDS rc=0
  wait "$ahead" || rc=$?
  ahead=
  echo "test: the build ahead ended (exit $rc; finished in $((SECONDS - start)) s alone): $(grep -h '^sanitize: built' build/ahead.log | tr '\n' ' ')"
}
# ctest's own order (tests/CMakeLists.txt: the multi-process matrix alone first, the unit tests
# alone last), in three calls so that the build ahead runs beside the first alone.
suite_tests() {
  start_ahead
  (cd build && ctest --output-on-failure -R '^multiproc$')
  signal_ahead STOP
  (cd build && ctest --output-on-failure -j2 -E '^(multiproc|unit)$')
  (cd build && ctest --output-on-failure -R '^unit$')
}

for step in $steps; do
  case $step in
    suite)
      timed build bash -c 'cmake -S . -B build && cmake --build build -j2'
      # Two at a time, as tests/CMakeLists.txt arranges (the multi-process matrix alone).
      timed ctest suite_tests
      signal_ahead CONT  # the build ahead takes the core the ISA passes leave
      # The float-sensitive tests with the kernels other CPUs would choose (issue 48).
      timed isa-check scripts/isa-check.sh build ;;
    sanitize)
      wait_ahead
      timed sanitizers scripts/sanitize.sh asan tsan ;;
    fuzz) timed fuzzing scripts/fuzz.sh 30 ;;
  esac
done
echo "test: all passed in $SECONDS s"
