#!/usr/bin/env bash
# Side-by-side on one host: hoop's allreduce over its shm back end against OpenMPI's
# MPI_Allreduce with its defaults (the vader shared-memory BTL), f32 sum, 2 ranks, out of place,
# same timing method (slowest rank's mean over ITERS after WARMUP). For each size the two run
# alternately REPEATS times; prints every run, the medians and their ratio (busbw for large
# sizes, time for small ones), and memcpy's rate measured in the same run.
#   usage: perf/compare_shm.sh [-np N] [-r REPEATS] [--sizes "4096 67108864 268435456"] [--build DIR]
set -euo pipefail
np=2 repeats=5 sizes="4096 67108864 268435456" build=build
while [ $# -gt 0 ]; do
  case $1 in
    -np) np=$2; shift 2 ;;
    -r) repeats=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare_shm.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in hooprun hoop-perf mpi-allreduce memcpy-limit; do
  [ -x "$bin/$b" ] || { echo "compare_shm.sh: $bin/$b is missing (build first; mpi-allreduce needs libopenmpi-dev)" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for bytes in $sizes; do
  # Enough iterations for a stable mean: many for small messages, a few for large ones.
  if [ "$bytes" -le 65536 ]; then iters=5000 warmup=500; else iters=10 warmup=3; fi
  ht=() hb=() mt=() mb=()
  for r in $(seq "$repeats"); do
    m=$(mpirun --oversubscribe -np "$np" "$bin/mpi-allreduce" "$bytes" "$iters" "$warmup")
    h=$(HOOP_TRANSPORT=shm "$bin/hooprun" -np "$np" "$bin/hoop-perf" allreduce -b "$bytes" -e "$bytes" \
        -n "$iters" -w "$warmup" | awk '$1 == "[0]" && $2 !~ /^#/')
    mt+=("$(echo "$m" | awk '{print $5}')") mb+=("$(echo "$m" | awk '{print $9}')")
    ht+=("$(echo "$h" | awk '{print $7}')") hb+=("$(echo "$h" | awk '{print $9}')")
    echo "size $bytes run $r: hoop shm ${ht[-1]} us ${hb[-1]} GB/s; OpenMPI vader ${mt[-1]} us ${mb[-1]} GB/s"
  done
  hmt=$(printf '%s\n' "${ht[@]}" | median) hmb=$(printf '%s\n' "${hb[@]}" | median)
  mmt=$(printf '%s\n' "${mt[@]}" | median) mmb=$(printf '%s\n' "${mb[@]}" | median)
  echo "size $bytes medians: hoop ${hmt} us, busbw ${hmb} GB/s; OpenMPI ${mmt} us, busbw ${mmb} GB/s;" \
       "busbw ratio $(awk -v a="$hmb" -v b="$mmb" 'BEGIN {printf "%.2f", a / b}')," \
       "time ratio hoop/OpenMPI $(awk -v a="$hmt" -v b="$mmt" 'BEGIN {printf "%.2f", a / b}')"
done
"$bin/memcpy-limit" 256 5 | tail -1
