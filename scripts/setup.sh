#!/usr/bin/env bash
# Installs the Debian packages hoop needs to build and test, skipping those already present.
# Run as root on Debian bookworm (CI and a fresh machine alike).
#   build:  g++ cmake make pkg-config nlohmann-json3-dev (hoop-perf's JSON, the tests' reading of it)
#           libcli11-dev (the tools' command lines, common/cli.h)
#   sanitizer and fuzzing runs (scripts/sanitize.sh, scripts/fuzz.sh):  clang, libclang-rt-14-dev
#           (ASan, TSan, UBSan and libFuzzer runtimes), ninja-build
#   tests:  catch2 (v2), procps, valgrind (a job where pidfd_open is refused), clang-format (the
#           sources' layout, tests/check_format.sh)
#   back ends: libucx-dev libfabric-dev (the ucx and ofi transports)
#   topology:  libhwloc-dev (hoop-info --topology, hooprun --bind-to)
#   peers:  libopenmpi-dev openmpi-bin libgloo-dev (mpirun start-up test; perf/compare's
#           MPI_Allreduce and Gloo harnesses)
#   tests and perf/linktest:  iproute2 util-linux (network namespaces, tc, unshare for host names)
#   hooprun over ssh (its tests):  openssh-server openssh-client (each test host runs its own sshd
#           inside its network namespace; the package is kept from starting one on this host)
#   perf/compare, perf/train-plot:  python3 (Debian's, /usr/bin/python3), gnuplot-nox (the PNG plots)
#   the Python package (python/, its tests):  python3-dev pybind11-dev python3-numpy; its
#           torch.distributed backend and the PyTorch comparisons (perf/torch_train.py,
#           perf/train-bench):  python3-torch libtorch-dev (Debian's PyTorch, CPU); the
#           hoop-parallelize corpus's progress bars:  python3-tqdm; the Horovod-style API's process
#           sets made from mpi4py communicators (their test, under mpirun):  python3-mpi4py
#   pip's PyTorch 2.x, which the Python tests also run under:  python3-venv, then
#           scripts/torch-venv.sh (a venv in /opt/hoop/torch-venv; --no-torch-venv skips it)
#   trainer (hoop-train and its tests):  libopenblas-dev (GEMM), libdnnl-dev (oneDNN, --layers
#           onednn), zlib1g-dev (gzip IDX files),
#           dataset-fashion-mnist (the data, under /usr/share/datasets/fashion-mnist)
# --torch is accepted for older instructions: PyTorch is in the default set now.
set -euo pipefail
packages=(g++ cmake make pkg-config nlohmann-json3-dev libcli11-dev clang libclang-rt-14-dev ninja-build catch2 procps valgrind
          clang-format libucx-dev libfabric-dev libhwloc-dev libopenmpi-dev openmpi-bin libgloo-dev
          iproute2 util-linux python3 gnuplot-nox libopenblas-dev zlib1g-dev dataset-fashion-mnist openssh-server
          openssh-client python3-dev pybind11-dev python3-numpy python3-torch libtorch-dev libdnnl-dev
          python3-tqdm python3-venv python3-mpi4py)
torch_venv=1
for arg in "$@"; do
  case "$arg" in
    --torch) ;;
    --no-torch-venv) torch_venv= ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "setup: unknown option '$arg' (known: --torch, --no-torch-venv)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
venv_step() {
  if [ -n "$torch_venv" ]; then "$(dirname "$0")/torch-venv.sh"; fi
}
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  venv_step
  exit 0
fi
echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: need root to install packages (run as root, or with sudo)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# openssh-server is for the tests, which run their own sshd inside network namespaces: its
# package must not start one on this host's addresses. A policy-rc.d that refuses every service
# start does that (kept if the machine has one already).
made_policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}"
[ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
venv_step
