#!/usr/bin/env bash
# Installs the Debian packages hoop needs to build and test, skipping those already present.
# Run as root on Debian bookworm (CI and a fresh machine alike).
#   build:  g++ cmake make pkg-config
#   tests:  catch2 (v2), procps
#   back ends: libucx-dev libfabric-dev (the ucx and ofi transports)
#   peers:  libopenmpi-dev openmpi-bin libgloo-dev (mpirun start-up test; perf/compare's
#           MPI_Allreduce and Gloo harnesses)
#   tests and perf/linktest:  iproute2 util-linux (network namespaces, tc, unshare for host names)
#   perf/compare:  python3 (Debian's, /usr/bin/python3), gnuplot-nox (the PNG plot)
set -euo pipefail
packages=(g++ cmake make pkg-config catch2 procps libucx-dev libfabric-dev libopenmpi-dev openmpi-bin libgloo-dev
          iproute2 util-linux python3 gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: need root to install packages (run as root, or with sudo)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
