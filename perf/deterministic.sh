#!/usr/bin/env bash
# The deterministic mode's cost (README "Deterministic mode", docs/PERF.md), side by side with the
# default mode in one run: hoop-perf allreduce (f32 sum, out of place, the slowest rank's time) at
# a large size (busbw) and at 8 bytes (latency), over each transport and rank count, the two modes
# alternating rep by rep so that both see the same machine; the median of the reps of each, and
# the ratio deterministic / default (busbw: higher is better; latency: lower is better).
# With --algos, the deterministic algorithms side by side instead: per transport, rank count and
# size, the default mode's auto, deterministic auto and each named algorithm (HOOP_ALGO), time in us.
#
#   perf/deterministic.sh [--build DIR] [--ranks "2 4 8"] [--transports "tcp shm"] [--size 64M]
#                         [--reps 3] [--csv FILE]
#                         [--algos "fold_all fold_root"] [--op allreduce|reduce] [--sizes "8 16K"]
set -euo pipefail

build=build ranks="2 3 4 8" transports="tcp shm" size=64M reps=3 csv="" algos="" op=allreduce
sizes="8 16K"
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --transports) transports=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --algos) algos=$2; shift 2 ;;
    --op) op=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --version) echo "perf/deterministic.sh (hoop) $("$build/bin/hoop-perf" --version 2>/dev/null | awk '{print $NF}')"; exit 0 ;;
    *) echo "perf/deterministic.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
[[ $op == allreduce || $op == reduce ]] || { echo "perf/deterministic.sh: --op takes allreduce or reduce, not '$op'" >&2; exit 2; }
[[ -n $algos || $op == allreduce ]] || { echo "perf/deterministic.sh: --op reduce needs --algos" >&2; exit 2; }
bin=$build/bin
[[ -x $bin/hoop-perf && -x $bin/hooprun ]] || { echo "perf/deterministic.sh: no hoop-perf/hooprun in $bin (--build DIR)" >&2; exit 2; }

# One hoop-perf run: prints the out-of-place column FIELD (8: time in us, 11: busbw GB/s) of its row.
measure() {  # transport ranks bytes det field [algo]
  local out
  out=$(HOOP_TRANSPORT=$1 HOOP_DETERMINISTIC=$4 HOOP_ALGO=${6:-auto} timeout 300 "$bin/hooprun" -np "$2" \
        --oversubscribe "$bin/hoop-perf" "$op" -b "$3" -e "$3" -c 0 2>&1) || { echo "$out" >&2; return 1; }
  local row
  row=$(echo "$out" | awk -v f="$5" '$1 == "[0]" && $2 ~ /^[0-9]+$/ { print $(f + 1), $7; exit }')
  # A name that does not apply to the collective leaves it on auto: refuse to report that as the name.
  if [[ -n ${6:-} && ${row#* } != "$6" ]]; then
    echo "perf/deterministic.sh: HOOP_ALGO=$6 does not run $op (hoop-perf ran '${row#* }')" >&2
    return 1
  fi
  echo "${row%% *}"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# --algos: one row per transport, ranks and size; columns default auto, det. auto, each algorithm.
sweep() {
  local t n b a k cols vals
  read -r -a cols <<< "default det_auto $algos"
  printf '%-9s %5s %8s' transport ranks bytes; printf ' %10s' "${cols[@]}"; echo
  [[ -n $csv ]] && (IFS=,; echo "transport,ranks,bytes,${cols[*]}") > "$csv"
  for t in $transports; do
    for n in $ranks; do
      for b in $sizes; do
        declare -A runs=()
        for ((k = 0; k < reps; ++k)); do
          runs[default]+=" $(measure "$t" "$n" "$b" 0 8)" || return 1
          runs[det_auto]+=" $(measure "$t" "$n" "$b" 1 8)" || return 1
          for a in $algos; do runs[$a]+=" $(measure "$t" "$n" "$b" 1 8 "$a")" || return 1; done
        done
        vals=()
        for a in "${cols[@]}"; do vals+=("$(echo "${runs[$a]}" | median)"); done
        printf '%-9s %5s %8s' "$t" "$n" "$b"; printf ' %10s' "${vals[@]}"; echo
        [[ -n $csv ]] && (IFS=,; echo "$t,$n,$b,${vals[*]}") >> "$csv"
      done
    done
  done
}
[[ -n $algos ]] && { sweep || exit 1; exit 0; }

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
