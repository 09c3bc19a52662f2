#!/usr/bin/env bash
# The sanitizer runs (scripts/test.sh runs them after the normal suite; alone:
# scripts/sanitize.sh [asan] [tsan]). Both build with clang into their own trees.
#   asan: AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (build-asan, which
#         also carries the fuzzers' coverage, so scripts/fuzz.sh reuses it): every unit test,
#         beside a time-boxed selection of the multi-process tests over tcp and shm; then the C
#         API programs under hooprun, and cells of the failure matrix (a rank killed or
#         stopped; the survivors revoke, shrink and go on: no leak in them).
#   tsan: ThreadSanitizer (build-tsan): the unit tests of the tensor fusion runtime, splits,
#         calls on (fake) streams and device runs on a fake device, beside the fusion
#         multi-process tests, hooprun's threads included,
#         and the point-to-point C program (its calls' threads and the communicator's worker
#         share the transport). UCX's memory hooks are turned off.
# Both (the default, and what scripts/test.sh runs) go in two lanes side by side, each tree's
# pieces in both, so that both cores stay busy to the end.
# Any report fails the run, even in a rank whose test expects it to fail: every sanitizer writes
# its reports to files under <tree>/sanitizer-reports/, which must be empty at the end.
#   --build-only [asan] [tsan]: configure and build the trees and run nothing; scripts/test.sh
#         starts this at idle priority beside the multi-process matrix, so that the runs here
#         find their programs (mostly) built.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
esac
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi
runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(asan tsan)

# -O2 without full debug information: with a sanitizer, CMakeLists.txt adds line tables, all a
# report's stack needs (the ASan tree builds in 190 s instead of 287 with -g).
configure() {  # tree, sanitizers, extra cmake flags...
  local tree=$1 san=$2
  shift 2
  CC=clang CXX=clang++ cmake -S . -B "$tree" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
    -DHOOP_SANITIZE="$san" "$@" >/dev/null
}

# Runs "$@" with a time bound; the reports directory is checked by reports_clean.
bounded() {
  local secs=$1
  shift
  local start=$SECONDS
  echo "sanitize: $*"
  if ! timeout --kill-after=10 "$secs" "$@"; then
    echo "sanitize: FAILED (or ran past ${secs} s): $*" >&2
    return 1
  fi
  echo "sanitize: ($((SECONDS - start)) s)"
}

# The same, for a job that must end with exit code $1 (hooprun --enable-recovery gives the first
# failed rank's: 137 for a SIGKILLed one).
bounded_code() {
  local want=$1 secs=$2 rc=0
  shift 2
  echo "sanitize: $* (exit $want wanted)"
  timeout --kill-after=10 "$secs" "$@" || rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "sanitize: FAILED: exit $rc, not $want (or ran past ${secs} s): $*" >&2
    return 1
  fi
}

# Runs two functions side by side and waits for both: each sanitizer tree's unit tests are one
# process on about one core, its multi-process selection ranks that wait on each other (about
# one core more). Each one's output is shown whole after both end; either failing fails the pair.
side_by_side() {  # log directory, function, function
  local dir=$1 a=$2 b=$3 ra=0 rb=0
  "$a" >"$dir/$a.log" 2>&1 &
  local pa=$!
  "$b" >"$dir/$b.log" 2>&1 &
  local pb=$!
  wait "$pa" || ra=$?
  wait "$pb" || rb=$?
  cat "$dir/$a.log" "$dir/$b.log"
  [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ]
}

reports_clean() {
  local dir=$1
  if compgen -G "$dir/*" >/dev/null; then
    echo "sanitize: sanitizer reports in $dir:" >&2
    for f in "$dir"/*; do
      echo "---- $f" >&2
      head -60 "$f" >&2
    done
    return 1
  fi
  echo "sanitize: no sanitizer reports"
}

build_asan() {
  local tree=build-asan start=$SECONDS
  configure "$tree" address,undefined -DHOOP_BUILD_FUZZERS=ON
  cmake --build "$tree" -j2 --target hoop-unit-tests hoop-multiproc-tests hoop-test-rank hoop-probe-rank \
    hoop-fusion-rank hooprun hoop-c-api-test hoop-c-fusion-test hoop-c-nonblocking-test hoop-c-more-collectives-test \
    hoop-c-p2p-test hoop-c-split-test hoop-c-chaos-test
  echo "sanitize: built $tree ($((SECONDS - start)) s)"
}

# The runs, in pieces that each set their own sanitizer's environment (in a subshell), so that
# pieces of the two trees can share a lane.
asan_env() {
  local reports=$PWD/build-asan/sanitizer-reports
  export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0"
  export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1"
  export HOOPTEST_BACKENDS=tcp,shm
}
asan_units() ( asan_env && bounded 240 build-asan/bin/hoop-unit-tests )
# Not here: valgrind (it cannot run an ASan program) and the crash test (ASan reports the crash it
# provokes on purpose).
asan_multiproc() (
  asan_env
  bounded 600 build-asan/bin/hoop-multiproc-tests \
    "[hardening]~[valgrind]~[crash],[failure],[transport],[store],[fusion],[compression]"
)
# The C API programs under hooprun, the deterministic mode's folds and cells of the failure matrix.
asan_programs() (
  asan_env
  local tree=build-asan n p
  for n in 1 3; do
    for p in api nonblocking more-collectives fusion p2p split; do
      bounded 60 "$tree/bin/hooprun" -np $n "$tree/bin/hoop-c-$p-test"
    done
  done
  bounded 60 "$tree/bin/hooprun" -np 3 -x HOOP_UNEXPECTED_BYTES=4K "$tree/bin/hoop-c-p2p-test" credit
  # The deterministic mode's folds (held messages, the fold on the executor and on the caller's
  # thread), fused too, in and out of place, against the canonical bits.
  bounded 120 "$tree/bin/hooprun" -np 3 --oversubscribe -x HOOP_TRANSPORT=tcp -x HOOP_CHUNK_BYTES=4K \
    "$tree/bin/hoop-test-rank" deterministic
  bounded 120 "$tree/bin/hooprun" -np 4 --oversubscribe -x HOOP_TRANSPORT=shm "$tree/bin/hoop-test-rank" deterministic
  # The failure matrix (tests/launch/chaos_test.cc): a killed rank's survivors shrink and go on,
  # a grow broken by a death is made again; a stopped rank is left out and told so.
  local chaos=("$tree/bin/hooprun" --oversubscribe --enable-recovery -x HOOP_TIMEOUT=20)
  bounded_code 137 60 "${chaos[@]}" -np 4 -x HOOP_TRANSPORT=tcp "$tree/bin/hoop-c-chaos-test" kill middle allreduce
  bounded_code 137 60 "${chaos[@]}" -np 3 -x HOOP_TRANSPORT=shm "$tree/bin/hoop-c-chaos-test" kill first p2p
  bounded_code 137 60 "${chaos[@]}" -np 3 -x HOOP_TRANSPORT=tcp "$tree/bin/hoop-c-chaos-test" kill last fusion
  bounded_code 137 60 "${chaos[@]}" -np 3 -x HOOP_TRANSPORT=shm "$tree/bin/hoop-c-chaos-test" kill middle grow
  bounded_code 0 60 "$tree/bin/hooprun" -np 3 --oversubscribe -x HOOP_TIMEOUT=5 -x HOOP_SHRINK_WAIT=1 \
    "$tree/bin/hoop-c-chaos-test" stop last shrink
)
build_tsan() {
  local tree=build-tsan start=$SECONDS
  configure "$tree" thread
  cmake --build "$tree" -j2 --target hoop-unit-tests hoop-multiproc-tests hoop-fusion-rank hooprun hoop-c-p2p-test \
    hoop-c-split-test
  echo "sanitize: built $tree ($((SECONDS - start)) s)"
}

tsan_env() {
  export TSAN_OPTIONS="log_path=$PWD/build-tsan/sanitizer-reports/tsan:second_deadlock_stack=1"
  export UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
  export HOOPTEST_BACKENDS=tcp,shm
}
# [split]: a split, a dup and their parent driven from several threads over shared connections.
# [stream]: calls on (fake) streams, whose host functions, the worker and the callers meet.
# [device]: device runs on a fake device, its queue's work read across the ranks' threads.
# [trace]: the flight recorder written from four threads while another reads it.
tsan_units() ( tsan_env && bounded 240 build-tsan/bin/hoop-unit-tests "[fusion],[split],[stream],[device],[trace]" )
# The fusion multi-process tests; then point-to-point, where the caller's thread and the
# communicator's worker both drive the transport.
tsan_multiproc() (
  tsan_env
  bounded 600 build-tsan/bin/hoop-multiproc-tests "[fusion]"
  bounded 120 build-tsan/bin/hooprun -np 3 build-tsan/bin/hoop-c-p2p-test
  bounded 120 build-tsan/bin/hooprun -np 3 build-tsan/bin/hoop-c-split-test
)
fresh_reports() { rm -rf "$1/sanitizer-reports" && mkdir -p "$1/sanitizer-reports"; }
# Each tree's units take about one core and its multi-process tests about one more, so they go
# side by side; with both trees, in two lanes that keep both cores busy to the end (measured on
# a clean clone: 232 s against 297 s for the two pairs one after the other).
lane_a() { asan_multiproc && tsan_units && asan_programs; }
lane_b() { asan_units && tsan_multiproc; }
run_both() {
  build_asan
  build_tsan
  fresh_reports build-asan
  fresh_reports build-tsan
  side_by_side build-asan lane_a lane_b
  reports_clean build-asan/sanitizer-reports
  reports_clean build-tsan/sanitizer-reports
}
run_asan() {
  build_asan
  fresh_reports build-asan
  side_by_side build-asan asan_units asan_multiproc
  asan_programs
  reports_clean build-asan/sanitizer-reports
}
run_tsan() {
  build_tsan
  fresh_reports build-tsan
  side_by_side build-tsan tsan_units tsan_multiproc
  reports_clean build-tsan/sanitizer-reports
}

if [ "$build_only" -eq 0 ] && [ "${runs[*]}" = "asan tsan" ]; then
  run_both
  exit 0
fi
for r in "${runs[@]}"; do
  case "$r" in
    asan) if [ "$build_only" -eq 1 ]; then build_asan; else run_asan; fi ;;
    tsan) if [ "$build_only" -eq 1 ]; then build_tsan; else run_tsan; fi ;;
    *) echo "sanitize: unknown run '$r' (known: asan, tsan)" >&2; exit 2 ;;
  esac
done
