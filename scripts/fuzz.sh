#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) for a bounded time, two at a time, starting from its seed
# corpus in fuzz/corpus/NAME (read only: what the run finds goes to build-asan/fuzz/NAME). Any
# crash, sanitizer report or broken property fails the run and leaves the input that caused it
# in build-asan/fuzz/ (rerun it: build-asan/bin/fuzz-NAME FILE). scripts/test.sh runs this after
# the sanitizer runs, whose ASan tree it shares; alone: scripts/fuzz.sh [SECONDS] (default 45);
# scripts/fuzz.sh --build-only: configure and build the targets, run nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-45}
build_only=0
case "$secs" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
  --build-only) build_only=1 ;;
  *[!0-9]*|0) echo "fuzz: expected a number of seconds or --build-only, not '$secs'" >&2; exit 2 ;;
esac
tree=build-asan
targets=(tcp_frames op_desc store config)
CC=clang CXX=clang++ cmake -S . -B "$tree" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DHOOP_SANITIZE=address,undefined -DHOOP_BUILD_FUZZERS=ON >/dev/null
cmake --build "$tree" -j2 --target "${targets[@]/#/fuzz-}"
[ "$build_only" -eq 1 ] && exit 0

run() {
  local t=$1 out=$tree/fuzz/$1
  rm -rf "$out" && mkdir -p "$out/corpus"
  # -timeout: an input that takes a second is a hang; -rss_limit_mb: memory that grows without bound.
  if "$tree/bin/fuzz-$t" "$out/corpus" "fuzz/corpus/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$out/" -print_final_stats=1 >"$out/log" 2>&1; then
    echo "fuzz: $t: $(grep -E '^#[0-9]+.*DONE' "$out/log" | tail -1)"
  else
    echo "fuzz: $t FAILED; its log ($out/log) ends:" >&2
    tail -40 "$out/log" >&2
    return 1
  fi
}

status=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do
    run "$t" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
done
exit $status
