#!/usr/bin/env bash
# Side-by-side: hoop's allreduce against OpenMPI's MPI_Allreduce (--mca btl tcp,self), f32 sum,
# out of place, same sizes, same timing method (slowest rank's mean over ITERS after WARMUP),
# run alternately REPEATS times so both see the same machine; prints every run, the medians,
# the ratio, and the raw loopback limit measured in the same run.
#   usage: perf/compare_mpi.sh [-np N] [-s BYTES] [-r REPEATS] [-n ITERS] [-w WARMUP] [--build DIR]
set -euo pipefail
np=2 bytes=$((64 << 20)) repeats=5 iters=10 warmup=3 build=build
while [ $# -gt 0 ]; do
  case $1 in
    -np) np=$2; shift 2 ;;
    -s) bytes=$2; shift 2 ;;
    -r) repeats=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -w) warmup=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare_mpi.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in hooprun hoop-perf mpi-allreduce loopback-limit; do
  [ -x "$bin/$b" ] || { echo "compare_mpi.sh: $bin/$b is missing (build first; mpi-allreduce needs libopenmpi-dev)" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
hoop=() mpi=()
for r in $(seq "$repeats"); do
  m=$(mpirun --oversubscribe -np "$np" --mca btl tcp,self "$bin/mpi-allreduce" "$bytes" "$iters" "$warmup" | awk '{print $9}')
  h=$("$bin/hooprun" -np "$np" "$bin/hoop-perf" allreduce -b "$bytes" -e "$bytes" -n "$iters" -w "$warmup" \
      | awk '$1 == "[0]" && $2 !~ /^#/ {print $9}')
  echo "run $r: hoop busbw $h GB/s, OpenMPI busbw $m GB/s"
  hoop+=("$h") mpi+=("$m")
done
hm=$(printf '%s\n' "${hoop[@]}" | median)
mm=$(printf '%s\n' "${mpi[@]}" | median)
limit=$("$bin/loopback-limit" 1024 3 | awk '/median/ {print $3}')
echo "allreduce f32 sum, $np ranks, $bytes bytes, TCP loopback, $repeats alternating runs:"
echo "  hoop    median busbw $hm GB/s"
echo "  OpenMPI median busbw $mm GB/s   (mpirun --mca btl tcp,self)"
echo "  ratio hoop / OpenMPI: $(awk -v a="$hm" -v b="$mm" 'BEGIN {printf "%.2f", a / b}')"
echo "  loopback limit (plain TCP, both directions at once): $limit GB/s per direction;" \
     "hoop busbw / limit: $(awk -v a="$hm" -v b="$limit" 'BEGIN {printf "%.2f", a / b}')"
