#!/usr/bin/env bash
# The GPU check (issue 20): on a machine with an NVIDIA GPU, from a clean clone, builds hoop with
# CUDA, runs the GPU tests (tests/gpu, the launch tests tagged [gpu], the C API test's default
# device and locality) and the GPU benchmarks
# (kernel-bench --device cuda; hoop-perf --device cuda on 2 and 4 ranks sharing the GPU, and
# device against host buffers over tcp), and writes every figure to a summary file. Where
# OpenBLAS is at hand (the system's, or unpacked from the carried .debs) it also builds the
# trainer and runs its GPU checks (issue 23: the cuDNN/cuBLAS layers' tests, hoop-train on the
# GPU against PyTorch on it, 2 ranks sharing it, a hybrid GPU+CPU job) and hoop-bench-device, the
# CPU-against-GPU study. Where the machine's python3 imports PyTorch 2 and pybind11 it also builds
# the torch.distributed backend for it and runs its tests on CUDA tensors (issue 51: every call on
# PyTorch's current stream, DDP on the GPU against one process and gloo).
#   scripts/gpu-check.sh [--out DIR] [--debs DIR] [--mib N] [--no-trainer] [--keep-going] [--tests-only] [--torch-only]
#                        [--tcp-only [--tcp-x VAR=value]... [--tcp-pairs N]]
#                        [--trainer-only] [--no-bench-device] [--bench-device-only] [--step-limit S]
#     --out DIR   where the logs and summary.txt go (default build-gpu/check)
#     --keep-going  after a failed step go on with the next (for a lease too short to run twice);
#                 the summary lists every failure and the exit status is still 1
#     --tests-only  build and run hoop-gpu-tests alone (a short lease's re-check after a fix)
#     --torch-only  build the torch backend and run its CUDA tensor tests alone
#     --tcp-only  build hoop-perf and hooprun alone and run the device-against-host comparison
#                 over tcp (with the staging's phases)
#     --tcp-x VAR=value  with --tcp-only, one more comparison with that setting on both sides
#                 (repeatable: one comparison each)
#     --tcp-pairs N  host and device runs in turn per comparison (default 5; about 12 s a pair)
#     --trainer-only  build the trainer and run its GPU checks alone (the rest, in a second call)
#     --no-bench-device  leave out hoop-bench-device (several minutes: a lease's last call)
#     --bench-device-only  build and run hoop-bench-device alone
#     --step-limit S  seconds a test or benchmark may take before it is killed and counted failed
#                 (default 600; the build's steps have 30 minutes)
#     --debs DIR  .deb files to unpack into build-gpu/prefix for headers this machine lacks
#                 (default .debs, when it exists)
#     --mib N     array size of the kernel benchmark (default 256)
#     --no-trainer  leave out the trainer and hoop-bench-device
#   scripts/gpu-check.sh --fetch-debs DIR
#     run where Debian's apt works: downloads the .deb files the check needs (the header-only
#     catch2, nlohmann-json3-dev and libcli11-dev; hwloc, for the ranks' binding near their GPU; for the
#     trainer OpenBLAS, its Fortran runtime, zlib and oneDNN, headers and libraries, and
#     Fashion-MNIST, 31 MB), to carry to a GPU machine that has no network.
#
# The GPU machine needs CUDA (nvcc), CMake, ninja and a C++20 compiler, nothing from Debian's -dev
# packages: the build leaves out UCX, libfabric, OpenMPI and Gloo, and finds Catch2,
# nlohmann-json, CLI11, hwloc, OpenBLAS, zlib and oneDNN in the unpacked .debs when the machine has no copy of
# its own (their libraries then load from there: LD_LIBRARY_PATH). cuDNN is CUDA's, or the one
# of the nvidia-cudnn Python wheel where PyTorch brought it.
# Fails (exit 1) when a step fails or when a GPU test skipped although a device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-gpu/check
debs=.debs
mib=256
trainer=1
keep_going=0
tests_only=0
torch_only=0
tcp_only=0
tcp_x=()
tcp_pairs=5
trainer_only=0
bench_device=1
bench_device_only=0
step_limit=600
failed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --mib) mib=$2; shift 2 ;;
    --no-trainer) trainer=0; shift ;;
    --keep-going) keep_going=1; shift ;;
    --tests-only) tests_only=1; trainer=0; shift ;;
    --torch-only) torch_only=1; trainer=0; shift ;;
    --tcp-only) tcp_only=1; trainer=0; shift ;;
    --tcp-x) tcp_x+=("$2"); shift 2 ;;
    --tcp-pairs) tcp_pairs=$2; shift 2 ;;
    --trainer-only) trainer_only=1; shift ;;
    --no-bench-device) bench_device=0; shift ;;
    --bench-device-only) bench_device_only=1; shift ;;
    --step-limit) step_limit=$2; shift 2 ;;
    --fetch-debs)
      mkdir -p "$2"
      (cd "$2" && apt-get download catch2 nlohmann-json3-dev libcli11-dev libopenblas-dev libopenblas-pthread-dev libopenblas0 \
        libopenblas0-pthread libgfortran5 zlib1g zlib1g-dev libdnnl-dev libdnnl2 libhwloc15 libhwloc-dev dataset-fashion-mnist)
      ls -l "$2"
      exit 0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "gpu-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

note "# hoop GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if command -v nvidia-smi > /dev/null; then
  note "# $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
fi

# Headers this machine lacks, from .deb files unpacked into a prefix of our own (never into /).
prefix=$PWD/build-gpu/prefix
if [ -d "$debs" ] && ls "$debs"/*.deb > /dev/null 2>&1; then
  mkdir -p "$prefix"
  for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$prefix"; done
  # Links that name the system's files (zlib1g-dev's libz.so -> /lib/...) point into the prefix.
  find "$prefix" -type l -lname '/*' | while read -r link; do
    target=$(readlink "$link")
    if [ -e "$prefix$target" ]; then ln -sfn "$prefix$target" "$link"; fi
  done
fi
lib=$prefix/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The trainer (and hoop-bench-device) where OpenBLAS's header is somewhere.
cblas=
for h in "$prefix"/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h \
         /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h /usr/include/openblas/cblas.h; do
  [ -f "$h" ] && cblas=$h && break
done
if [ "$trainer" = 1 ] && [ -z "$cblas" ]; then
  note "# no OpenBLAS here (carry the .debs of --fetch-debs): no trainer, no hoop-bench-device"
  trainer=0
fi
# cuDNN: CUDA's own, else the Python wheel's (its library has only its versioned name).
cudnn=()
if [ "$trainer" = 1 ] && [ ! -f /usr/local/cuda/include/cudnn.h ] && [ ! -f /usr/include/cudnn.h ]; then
  wheel=$(python3 -c 'import nvidia.cudnn, os; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null || true)
  so=$(ls "$wheel"/lib/libcudnn.so* 2>/dev/null | head -1 || true)
  if [ -n "$so" ] && [ -f "$wheel/include/cudnn.h" ]; then
    cudnn=(-DHOOP_CUDNN_INCLUDE="$wheel/include" -DHOOP_CUDNN_LIBRARY="$so")
    export LD_LIBRARY_PATH=$wheel/lib:$LD_LIBRARY_PATH
    note "# cuDNN from the Python wheel: $so"
  fi
fi
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# The torch backend for the python3 that has PyTorch 2 and pybind11 (the GPU machine's own).
torch_python=()
if python3 -c 'import torch, pybind11, sys; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2> /dev/null; then
  torch_python=(-DHOOP_PYTHON="$(command -v python3)")
else
  note "# python3 here lacks PyTorch 2 or pybind11: no torch backend tests on CUDA tensors"
fi
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
# Runs a command with its output in a log for at most `limit` seconds. One still running then
# first has every thread's stack written to <log>.stacks (cuda-gdb, or gdb, where there is one:
# a hang says where it is), then it and its children are killed; exit status 124, as timeout's.
run_limited() {  # limit log command...
  local limit=$1 log=$2 waited=0
  shift 2
  "$@" > "$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2> /dev/null && [ "$waited" -lt $((limit * 5)) ]; do
    sleep 0.2
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2> /dev/null; then
    local kids dbg
    kids=$(ps -o pid= --ppid "$pid" | tr -d ' ' || true)
    dbg=$(command -v cuda-gdb || command -v gdb || true)
    if [ -n "$dbg" ]; then
      for p in $pid $kids; do
        echo "=== pid $p: $(tr '\0' ' ' < /proc/$p/cmdline 2> /dev/null)" >> "$log.stacks"
        timeout 60 "$dbg" -batch -p "$p" -ex "thread apply all bt" >> "$log.stacks" 2>&1 || true
      done
    fi
    kill -KILL $pid $kids 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    return 124
  fi
  wait "$pid"
}

step() {  # name, command...: runs it, at most $step_limit seconds (builds 30 minutes), with its output in $out/<name>.log
  local name=$1 start=$SECONDS rc=0 limit=$step_limit
  shift
  case "$name" in configure|build*) limit=1800 ;; esac
  run_limited "$limit" "$out/$name.log" "$@" || rc=$?
  if [ "$rc" = 0 ]; then
    note "ok   $name ($((SECONDS - start)) s)"
    return 0
  fi
  local why="exit status $rc"
  [ "$rc" = 124 ] && why="killed after $limit s; stacks in $out/$name.log.stacks"
  note "FAIL $name ($((SECONDS - start)) s, $why): see $out/$name.log"
  tail -30 "$out/$name.log"
  failed+=("$name")
  [ "$keep_going" = 1 ] || exit 1
}
configure=(cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc"
  -DHOOP_WITH_CUDA=ON -DHOOP_WITH_UCX=OFF -DHOOP_WITH_OFI=OFF
  -DHOOP_BUILD_TRAINER=$([ "$trainer" = 1 ] && echo ON || echo OFF) "${cudnn[@]}"
  -DCMAKE_PREFIX_PATH="$prefix/usr;$prefix/usr/share" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DCMAKE_DISABLE_FIND_PACKAGE_Gloo=ON)
# With the torch backend first; where this machine's PyTorch does not configure (its CMake
# package), the rest of the check still runs without it.
if [ ${#torch_python[@]} -gt 0 ] && ! run_limited 1800 "$out/configure-torch.log" "${configure[@]}" "${torch_python[@]}"; then
  note "FAIL configure-torch: the build with the torch backend did not configure (see $out/configure-torch.log); going on without it"
  failed+=(configure-torch)
  torch_python=()
  rm -rf build-gpu/CMakeCache.txt build-gpu/CMakeFiles
fi
step configure "${configure[@]}" "${torch_python[@]}"
# hoop-gpu-tests one test case at a time, each within the step limit: a case that hangs is
# killed (its stacks written) and the cases after it still run. A case is named by its name up to
# its first comma, then '*' (Catch2 splits a filter at commas and takes '*' only at an end).
gpu_tests() {
  local i=0 name filter
  build-gpu/bin/hoop-gpu-tests --list-test-names-only > "$out/gpu-tests.list" 2>&1 || true
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    i=$((i + 1))
    filter=$name
    case "$name" in *,*) filter="${name%%,*}*" ;; esac
    step "gpu-test-$i" build-gpu/bin/hoop-gpu-tests --durations yes "$filter"
    note "       $name"
    if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 && grep -q "^SKIPPED" "$out/gpu-test-$i.log" \
       && [[ "$name" != cuda:* ]]; then
      note "FAIL gpu-test-$i: a device is here, yet it skipped: $(grep -m1 "^SKIPPED" "$out/gpu-test-$i.log")"
      failed+=("gpu-test-$i-skipped")
      [ "$keep_going" = 1 ] || exit 1
    fi
  done < "$out/gpu-tests.list"
  [ "$i" -gt 0 ] || { note "FAIL gpu-tests: no test case listed (see $out/gpu-tests.list)"; failed+=(gpu-tests); }
}

# The trainer on the GPU (issue 23): the cuDNN/cuBLAS layers' tests; lenet learning on the GPU;
# resnet18 on the GPU against PyTorch on the same GPU (same model, batch and images); 2 ranks
# sharing the GPU (gradients over CUDA IPC) with their wait for the gradients as a share of the
# step; a hybrid job (local rank 0 on the GPU, two on the CPU, split by speed) against the GPU
# alone. Short runs (a slice of Fashion-MNIST): throughput, not accuracy.
fmnist=/usr/share/datasets/fashion-mnist
[ -d "$prefix/usr/share/datasets/fashion-mnist" ] && fmnist=$prefix/usr/share/datasets/fashion-mnist
comm_share() {  # metrics.json: the last epoch's wait for the gradients over its training time
  python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["epochs"][-1]; print("%.3f" % (e["comm_wait_s"] / e["train_s"]))' "$1" 2> /dev/null || echo "?"
}
rate() {  # log, pattern: images/s of the last epoch line ("" where there is none)
  { grep -E "$2" "$1" 2> /dev/null || true; } | tail -1 | { grep -oE "[0-9.]+ images/s" || true; } | head -1 | cut -d' ' -f1
}
trainer_gpu() {
  step gpu-trainer-tests build-gpu/bin/hoop-gpu-trainer-tests --durations yes
  if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 && grep -q "^SKIPPED" "$out/gpu-trainer-tests.log"; then
    note "FAIL gpu-trainer-tests: a device is here, yet it skipped: $(grep -m1 "^SKIPPED" "$out/gpu-trainer-tests.log")"
    failed+=(gpu-trainer-tests-skipped)
  fi
  local t=(build-gpu/bin/hoop-train --data "$fmnist" --progress 0)
  step train-lenet-gpu "${t[@]}" --device cuda --model lenet --epochs 2 --train-limit 20000 --test-limit 2000
  grep -E "^hoop-train|^epoch" "$out/train-lenet-gpu.log" | tee -a "$summary" || true
  # hoop-train --deterministic on the GPU (issue 53: cuDNN's deterministic algorithms, the folds'
  # sums): the same checkpoint bytes over shm (CUDA IPC) and over tcp with the tree named and no fusion.
  local det=("${t[@]}" --device cuda --deterministic --model lenet --epochs 1 --train-limit 4000 --test-limit 500)
  step train-det-gpu-shm build-gpu/bin/hooprun -np 2 -x HOOP_TRANSPORT=shm "${det[@]}" --checkpoint "$out/det-shm.ckpt"
  step train-det-gpu-tcp build-gpu/bin/hooprun -np 2 -x HOOP_TRANSPORT=tcp -x HOOP_ALGO=tree -x HOOP_FUSION_THRESHOLD=0 \
    "${det[@]}" --checkpoint "$out/det-tcp.ckpt"
  if [ -s "$out/det-shm.ckpt" ] && cmp -s "$out/det-shm.ckpt" "$out/det-tcp.ckpt"; then
    note "hoop-train --deterministic on the GPU: the same checkpoint bytes over shm and over tcp/tree/unfused"
  else
    note "FAIL hoop-train --deterministic on the GPU: the checkpoints differ (or are missing)"
    failed+=(train-det-gpu)
  fi
  local r18=(--model resnet18 --epochs 1 --batch 64 --train-limit 12800 --test-limit 1000)
  step train-resnet18-gpu "${t[@]}" --device cuda "${r18[@]}"
  step torch-resnet18-gpu python3 perf/torch_train.py --device cuda --data "$fmnist" "${r18[@]}"
  local h p
  h=$(rate "$out/train-resnet18-gpu.log" "epoch [0-9]+/")
  p=$(rate "$out/torch-resnet18-gpu.log" "^torch")
  note "resnet18 on one GPU, batch 64, 12800 images: hoop-train $h images/s, PyTorch $p images/s" \
       "($(awk -v h="$h" -v p="$p" 'BEGIN { if (p > 0) printf "%.2fx", h / p; else print "?" }'))"
  step train-resnet18-gpu-2ranks build-gpu/bin/hooprun -np 2 "${t[@]}" --device cuda "${r18[@]}" --metrics "$out/r18-2.json"
  note "resnet18, 2 ranks sharing the GPU: $(rate "$out/train-resnet18-gpu-2ranks.log" "epoch [0-9]+/") images/s," \
       "waiting for gradients $(comm_share "$out/r18-2.json") of the training time (issue 23: under 0.10)"
  # Issue 54: the PyTorch twin as the issue measured it (cudnn.benchmark, the second epoch: steady
  # state) at batch 64 and 256, fp32 and bf16 autocast + channels_last, beside hoop-train fp32
  # (hoop-train --precision bf16 does not run on GPU ranks yet), and hoop-train with its convolution
  # algorithms chosen by measurement (--cudnn-benchmark on, off by default until this measures it).
  local b
  for b in 64 256; do
    local rb=(--model resnet18 --epochs 2 --batch "$b" --train-limit 25600 --test-limit 1000)
    step "train-resnet18-b$b" "${t[@]}" --device cuda "${rb[@]}"
    step "train-resnet18-b$b-bench" "${t[@]}" --device cuda --cudnn-benchmark on "${rb[@]}"
    step "torch-resnet18-b$b" python3 perf/torch_train.py --device cuda --benchmark --data "$fmnist" "${rb[@]}"
    step "torch-resnet18-b$b-bf16" python3 perf/torch_train.py --device cuda --benchmark --precision bf16 \
      --channels-last --data "$fmnist" "${rb[@]}"
    h=$(rate "$out/train-resnet18-b$b.log" "epoch 2/")
    p=$(rate "$out/torch-resnet18-b$b.log" "epoch 2/")
    note "resnet18, batch $b, steady state: hoop-train fp32 $h images/s, PyTorch fp32 (cudnn.benchmark) $p" \
         "($(awk -v h="$h" -v p="$p" 'BEGIN { if (p > 0) printf "%.2fx", h / p; else print "?" }')), PyTorch bf16" \
         "autocast + channels_last $(rate "$out/torch-resnet18-b$b-bf16.log" "epoch 2/") images/s; hoop-train" \
         "--cudnn-benchmark on $(rate "$out/train-resnet18-b$b-bench.log" "epoch 2/") images/s"
  done
  # Issue 54, item 5: the report in one command: ResNet-34 on the CPU, one GPU, 2 ranks on it and
  # GPU + CPU, accuracy against time, phases and energy (a short slice: the command, not the figures).
  step train-report python3 perf/train-report --build build-gpu --model resnet34 --epochs 1 --train-limit 2560 \
    --test-limit 500 --data "$fmnist" --out "$out/train-report"
  cat "$out/train-report/report.md" >> "$summary" 2> /dev/null || true
  local lenet=(--model lenet --epochs 2 --train-limit 20000 --test-limit 2000)
  step train-lenet-gpu-alone "${t[@]}" --device cuda "${lenet[@]}" --metrics "$out/lenet-gpu.json"
  step train-lenet-hybrid build-gpu/bin/hooprun -np 3 "${t[@]}" --devices cuda,cpu,cpu "${lenet[@]}" --metrics "$out/lenet-hybrid.json"
  grep -E "epoch [0-9]+/|shares" "$out/train-lenet-hybrid.log" | tee -a "$summary" || true
  note "lenet, epoch 2: GPU alone $(rate "$out/train-lenet-gpu-alone.log" "epoch 2/") images/s; GPU + 2 CPU ranks" \
       "(split by speed) $(rate "$out/train-lenet-hybrid.log" "epoch 2/") images/s"
}

# The CPU-against-GPU study (issue 23): cuBLAS against OpenBLAS, cuDNN against the trainer's
# convolution; the tool fails where the two devices' results disagree.
bench_device() {
  # At least 400 s: the CPU side of the 5000 to 10000 products alone took 150 s on 16 cores.
  step_limit=$((step_limit > 400 ? step_limit : 400)) step bench-device build-gpu/bin/hoop-bench-device --csv "$out/bench-device.csv"
  note "# hoop-bench-device (all cores; defaults: the issue's sizes, 10 repeats)"
  cat "$out/bench-device.log" >> "$summary"
  cat "$out/bench-device.log"
}

perf() {  # name, hooprun arguments...
  local name=$1
  shift
  step "$name" build-gpu/bin/hooprun "$@"
  note "# hooprun $*"
  grep -vE "^\[[0-9]+\] #  Rank|^$" "$out/$name.log" | tee -a "$summary" > /dev/null || true
}
# Device against host buffers over tcp, 64 MiB, interleaved: host, device, host, device, ...
# (issue 20 asks device >= 0.9 of host), then the ratio of the medians, out of place and in place,
# and beside it the median of the pairs' own ratios. Loopback tcp on a virtual machine spreads
# 10-40 % between repetitions (docs/PERF.md: 0.75-1.11 in place over 17 pairs): 20 timed
# iterations each, $tcp_pairs pairs (--tcp-pairs). Each pair also has a host run whose calls go
# round 8 sets of buffers (hoop-perf --rotate 8, 1 GiB a rank): host memory not still cached from
# the call before, as the device run's staging is not (docs/PERF.md: an H200 host's L3 held 300 MiB).
# Then one more device run at HOOP_LOG_LEVEL=debug: where a staged call's time goes (queueing
# copies in, waiting for them, queueing copies back, the run, the last copies).
tcp_compare() {  # tag ("" or a name), hooprun arguments (-x VAR=value) for both sides
  local tag=$1 r
  shift
  for r in $(seq "$tcp_pairs"); do
    perf "perf-tcp$tag-host-$r" -np 2 -x HOOP_TRANSPORT=tcp "$@" build-gpu/bin/hoop-perf allreduce -b 64M -e 64M -n 20 -c 1
    perf "perf-tcp$tag-device-$r" -np 2 -x HOOP_TRANSPORT=tcp "$@" build-gpu/bin/hoop-perf allreduce --device cuda -b 64M -e 64M -n 20 -c 1
    perf "perf-tcp$tag-hostcold-$r" -np 2 -x HOOP_TRANSPORT=tcp "$@" build-gpu/bin/hoop-perf allreduce -b 64M -e 64M -n 20 -c 1 --rotate 8
  done
  step "perf-tcp$tag-device-phases" build-gpu/bin/hooprun -np 2 -x HOOP_TRANSPORT=tcp -x HOOP_LOG_LEVEL=debug "$@" \
    build-gpu/bin/hoop-perf allreduce --device cuda -b 64M -e 64M -n 5 -w 1 -R 1 -c 1
  note "# 64 MiB device allreduce over tcp${*:+ ($*)}, staged piece by piece: the last calls' phases (rank 0, rank 1)"
  { grep "staged piece by piece" "$out/perf-tcp$tag-device-phases.log" || true; } | tail -4 | tee -a "$summary" > /dev/null
  local side col h d pr
  for side in "12 out of place" "17 in place"; do
    col=${side%% *}
    h=$(busbw_of "$tag-host" "$col" | median)
    d=$(busbw_of "$tag-device" "$col" | median)
    pr=$(paste <(busbw_of "$tag-device" "$col") <(busbw_of "$tag-host" "$col") | awk '$1 != "-" && $2 != "-" && $2 > 0 { print $1 / $2 }' | median)
    if [ -n "$h" ] && [ -n "$d" ]; then
      note "device/host busbw over tcp${*:+ ($*)}, 64 MiB, ${side#* }: $d / $h = $(awk -v d="$d" -v h="$h" 'BEGIN { printf "%.3f", d / h }') (medians of $tcp_pairs interleaved runs; the pairs' ratios' median: ${pr:-?})"
    fi
    h=$(busbw_of "$tag-hostcold" "$col" | median)
    if [ -n "$h" ] && [ -n "$d" ]; then
      note "device/host busbw over tcp${*:+ ($*)}, 64 MiB, ${side#* }, host buffers rotated (--rotate 8): $d / $h = $(awk -v d="$d" -v h="$h" 'BEGIN { printf "%.3f", d / h }')"
    fi
  done
}
busbw_of() {  # which (host|device, after the tag), column (12: out of place busbw, 17: in place): a line per run, in run order ("-": none)
  local r v
  for r in $(seq "$tcp_pairs"); do
    v=$(awk -v c="$2" '$1 == "[0]" && $2 == 67108864 { print $c; exit }' "$out/perf-tcp$1-$r.log" 2> /dev/null || true)
    echo "${v:--}"
  done
}
median() { grep -v '^-$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f\n", v[int((NR + 1) / 2)] }'; }

if [ "$tcp_only" = 1 ]; then
  step build cmake --build build-gpu -j"$(nproc)" --target hoop-perf hooprun
  tcp_compare ""
  for x in "${tcp_x[@]}"; do tcp_compare "-$(echo "$x" | tr -c 'A-Za-z0-9\n' _)" -x "$x"; done
  [ ${#failed[@]} -eq 0 ] || { note "gpu-check: FAILED: ${failed[*]}"; exit 1; }
  note "gpu-check --tcp-only: passed"
  exit 0
fi
if [ "$bench_device_only" = 1 ]; then
  [ "$trainer" = 1 ] || { note "gpu-check --bench-device-only: no trainer here (see above)"; exit 1; }
  step build-trainer cmake --build build-gpu -j"$(nproc)" --target hoop-bench-device
  bench_device
  [ ${#failed[@]} -eq 0 ] || { note "gpu-check: FAILED: ${failed[*]}"; exit 1; }
  note "gpu-check --bench-device-only: passed"
  exit 0
fi
if [ "$trainer_only" = 1 ]; then
  [ "$trainer" = 1 ] || { note "gpu-check --trainer-only: no trainer here (see above)"; exit 1; }
  step build-trainer cmake --build build-gpu -j"$(nproc)" --target hoop-train hoop-gpu-trainer-tests hooprun
  trainer_gpu
  [ ${#failed[@]} -eq 0 ] || { note "gpu-check: FAILED: ${failed[*]}"; exit 1; }
  note "gpu-check --trainer-only: passed"
  exit 0
fi
# The torch backend on CUDA tensors (issue 51), where it was configured: every call through
# PyTorch's functions on 2 and 3 ranks sharing the GPU, then DDP on the GPU against one process and
# gloo. The test skips without a device: a skip here, where one is, counts as a failure.
torch_cuda() {
  if [ ${#torch_python[@]} -eq 0 ] || ! cmake --build build-gpu --target help 2> /dev/null | grep -q hoop_c10d; then
    note "# no torch backend configured (see above and $out/configure.log): its CUDA tests left out"
    return 0
  fi
  step build-torch cmake --build build-gpu -j"$(nproc)" --target hoop_python hoop_c10d hooprun
  step torch-cuda env HOOPTEST_BUILD_DIR="$PWD/build-gpu" sh -c 'cd tests/python && exec python3 -m unittest -v \
    test_torch_backend.Backend.test_cuda_tensors_match_the_reference_and_ddp_gloo'
  if grep -q "skipped" "$out/torch-cuda.log"; then
    note "FAIL torch-cuda: a device is here, yet it skipped: $(grep -m1 skipped "$out/torch-cuda.log")"
    failed+=(torch-cuda-skipped)
  fi
}
if [ "$torch_only" = 1 ]; then
  torch_cuda
  [ ${#failed[@]} -eq 0 ] || { note "gpu-check: FAILED: ${failed[*]}"; exit 1; }
  note "gpu-check --torch-only: passed"
  exit 0
fi
if [ "$tests_only" = 1 ]; then
  step build cmake --build build-gpu -j"$(nproc)" --target hoop-gpu-tests
  gpu_tests
  [ ${#failed[@]} -eq 0 ] || { note "gpu-check: FAILED: ${failed[*]}"; exit 1; }
  note "gpu-check --tests-only: passed"
  exit 0
fi
step build cmake --build build-gpu -j"$(nproc)" --target hoop-gpu-tests hoop-test-rank hoop-launch-tests hoop-info kernel-bench hoop-perf hooprun hoop-c-api-test
if [ "$trainer" = 1 ]; then
  step build-trainer cmake --build build-gpu -j"$(nproc)" --target hoop-train hoop-bench-device hoop-gpu-trainer-tests
fi

step hoop-info build-gpu/bin/hoop-info
sed -n '/^cuda:/,/^hoop back ends/p' "$out/hoop-info.log" | sed '$d' | tee -a "$summary"
# The host's topology with its GPUs' locality (issue 21), from hwloc.
step topology build-gpu/bin/hoop-info --topology
cat "$out/topology.log" >> "$summary"

gpu_tests

step launch-gpu-tests build-gpu/bin/hoop-launch-tests "[gpu]"
grep -E "^(All tests passed|test cases)" "$out/launch-gpu-tests.log" | tee -a "$summary" || true
torch_cuda

# Each local rank's default GPU and locality (issue 21): with a device the C API test requires
# hoop_local_device to name one and hoop_locality's "gpu" to describe it.
step c-api-locality build-gpu/bin/hooprun -np 2 --report-bindings build-gpu/bin/hoop-c-api-test
grep -E "c-api locality|bound|c-api ok" "$out/c-api-locality.log" | tee -a "$summary" || true

step kernel-bench build-gpu/bin/kernel-bench --device cuda --mib "$mib" --repeats 9 --all-ops
note "# kernel-bench --device cuda --mib $mib --repeats 9 --all-ops"
cat "$out/kernel-bench.log" >> "$summary"
cat "$out/kernel-bench.log"

# Device allreduces, 2 and 4 ranks on one GPU (shm between them), up to 256 MiB; then device
# against host buffers over tcp at 64 MiB, 2 ranks, in one run each after the other.
perf perf-device-2 -np 2 build-gpu/bin/hoop-perf allreduce --device cuda -b 1M -e 256M -f 4 -c 1
perf perf-device-4 -np 4 build-gpu/bin/hoop-perf allreduce --device cuda -b 1M -e 256M -f 4 -c 1
# Small device allreduces three ways, side by side (issue 51's item 5): by CUDA IPC, staged
# through pinned host memory (HOOP_CUDA_IPC=0), and IPC from 1 MiB up with smaller calls staged
# (HOOP_CUDA_IPC_MIN_BYTES=1M); where staging stops winning is the threshold to record.
small_device() {  # ranks
  local np=$1 r="build-gpu/bin/hoop-perf allreduce --device cuda -b 4K -e 4M -f 4 -c 1"
  perf "perf-device-$np-small-ipc" -np "$np" $r
  perf "perf-device-$np-small-staged" -np "$np" -x HOOP_CUDA_IPC=0 $r
  perf "perf-device-$np-small-min1M" -np "$np" -x HOOP_CUDA_IPC_MIN_BYTES=1M $r
  note "# device allreduce on $np ranks sharing the GPU, out-of-place time (us): by IPC, staged, IPC from 1M"
  for size in 4096 16384 65536 262144 1048576 4194304; do
    local row="  $size B:"
    for way in ipc staged min1M; do
      row+=" $(awk -v s="$size" '$1 == "[0]" && $2 == s { print $9; exit }' "$out/perf-device-$np-small-$way.log" 2> /dev/null)"
    done
    note "$row"
  done
}
small_device 2
small_device 4
# 256 MiB on one GPU with chunks either side of the default 16 MiB (each chunk costs a hand-over
# between the ranks' processes on the GPU: fewer, larger ones pay it less often, but pipeline
# less); then each busbw as a fraction of kernel-bench's device-to-device copy. (Staged through
# host memory, HOOP_CUDA_IPC=0, and the old 128 KiB chunks: docs/PERF.md, 1.6 GB/s.)
for np in 2 4; do
  for c in 4M 64M; do
    perf "perf-device-$np-chunk$c" -np "$np" -x HOOP_CHUNK_BYTES=$c build-gpu/bin/hoop-perf allreduce --device cuda -b 256M -e 256M -c 1
  done
done
copy_gbs=$(awk '$1 == "f32" && $2 == "sum" { print $4; exit }' "$out/kernel-bench.log" 2> /dev/null)
for np in 2 4; do
  for v in "" -chunk4M -chunk64M; do
    b=$(awk '$1 == "[0]" && $2 == 268435456 { print $12; exit }' "$out/perf-device-$np$v.log" 2> /dev/null)
    if [ -n "$b" ] && [ -n "$copy_gbs" ]; then
      note "device allreduce $np ranks on one GPU, 256 MiB f32${v:- (CUDA IPC, default 16M chunks)}: busbw $b GB/s = $(awk -v b="$b" -v c="$copy_gbs" 'BEGIN { printf "%.3f", b / c }') of the device copy's $copy_gbs GB/s"
    fi
  done
done
tcp_compare ""
if [ "$trainer" = 1 ]; then
  trainer_gpu
  if [ "$bench_device" = 1 ]; then bench_device; fi
fi
if [ ${#failed[@]} -gt 0 ]; then
  note "gpu-check: FAILED: ${failed[*]}; figures in $summary"
  exit 1
fi
note "gpu-check: all passed; figures in $summary"
