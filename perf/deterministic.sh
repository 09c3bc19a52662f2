#!/usr/bin/env bash
# The deterministic mode's cost (README "Deterministic mode", docs/PERF.md), side by side with the
# default mode in one run: hoop-perf allreduce (f32 sum, out of place, the slowest rank's time) at
# a large size (busbw) and at 8 bytes (latency), over each transport and rank count, the two modes
# alternating rep by rep so that both see the same machine; the median of the reps of each, and
# the ratio deterministic / default (busbw: higher is better; latency: lower is better).
#
#   perf/deterministic.sh [--build DIR] [--ranks "2 4 8"] [--transports "tcp shm"] [--size 64M]
#                         [--reps 3] [--csv FILE]
set -euo pipefail

build=build ranks="2 3 4 8" transports="tcp shm" size=64M reps=3 csv=""
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --transports) transports=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --version) echo "perf/deterministic.sh (hoop) $("$build/bin/hoop-perf" --version 2>/dev/null | awk '{print $NF}')"; exit 0 ;;
    *) echo "perf/deterministic.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
[[ -x $bin/hoop-perf && -x $bin/hooprun ]] || { echo "perf/deterministic.sh: no hoop-perf/hooprun in $bin (--build DIR)" >&2; exit 2; }

# One hoop-perf run: prints the out-of-place column FIELD (8: time in us, 11: busbw GB/s) of its row.
measure() {  # transport ranks bytes det field
  local out
  out=$(HOOP_TRANSPORT=$1 HOOP_DETERMINISTIC=$4 timeout 300 "$bin/hooprun" -np "$2" --oversubscribe \
        "$bin/hoop-perf" allreduce -b "$3" -e "$3" -c 0 2>&1) || { echo "$out" >&2; return 1; }
  echo "$out" | awk -v f="$5" '$1 == "[0]" && $2 ~ /^[0-9]+$/ { print $(f + 1); exit }'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-5s %5s %-8s %12s %12s %8s\n' transport ranks what default determin. ratio
[[ -n $csv ]] && echo "transport,ranks,what,default,deterministic,ratio" > "$csv"
for t in $transports; do
  for n in $ranks; do
    for what in busbw latency; do
      if [[ $what == busbw ]]; then bytes=$size field=11; else bytes=8 field=8; fi
      plain="" det=""
      for ((k = 0; k < reps; ++k)); do
        plain+=" $(measure "$t" "$n" "$bytes" 0 "$field")"
        det+=" $(measure "$t" "$n" "$bytes" 1 "$field")"
      done
      a=$(echo "$plain" | median) b=$(echo "$det" | median)
      r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')
      unit=$([[ $what == busbw ]] && echo "GB/s" || echo "us")
      printf '%-9s %5s %-8s %7s %-4s %7s %-4s %8s\n' "$t" "$n" "$what" "$a" "$unit" "$b" "$unit" "$r"
      [[ -n $csv ]] && echo "$t,$n,$what,$a,$b,$r" >> "$csv"
    done
  done
done
