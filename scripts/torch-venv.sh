#!/usr/bin/env bash
# Makes the venv with pip's PyTorch 2.x that the tests run under beside Debian's 1.13 (issue 51):
# most of hoop's users run PyTorch from pip, and the backend must build and pass against both.
# Called by scripts/setup.sh; skips the work when the venv already imports that version.
#   torch 2.15.0, pinned: the newest on PyPI that imports on the CI machine (Debian bookworm's
#   Python 3.11, no GPU). The wheel is a CUDA build, so it is installed with --no-deps and only
#   what `import torch` and torch.distributed need beside it: the pure-Python dependencies, NumPy,
#   pybind11 (the version its headers match, for building hoop's backend against it), tqdm (the
#   hoop-parallelize corpus's progress bars, as python3-tqdm is for Debian's), scikit-build-core
#   with packaging and pathspec (pyproject.toml's build back end: ctest's pip-install), and four
#   CUDA libraries its libtorch_cuda.so links without a guard (cuSPARSELt, NVSHMEM, cuFile, NCCL).
#   The other CUDA wheels (cuBLAS, cuDNN, ...) are loaded only on a GPU and are left out: about
#   2 GB in all instead of 5.
# The venv is made from Debian's /usr/bin/python3 (3.11, the interpreter the package is built
# for first), in HOOP_TORCH_VENV or /opt/hoop/torch-venv.
set -euo pipefail
case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
  *) echo "torch-venv: unknown option '$1'" >&2; exit 2 ;;
esac
venv=${HOOP_TORCH_VENV:-/opt/hoop/torch-venv}
torch_version=2.15.0
deps=(filelock typing-extensions sympy mpmath networkx jinja2 markupsafe fsspec numpy setuptools pybind11 tqdm
      scikit-build-core==1.1.2 packaging==26.4 pathspec==1.1.1 nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-cufile nvidia-nccl-cu13)
imports="import torch.distributed, numpy, pybind11, tqdm, scikit_build_core"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps)
have=$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
if [ "$have" = "$torch_version" ]; then
  if "$venv/bin/python" -c "$imports" 2>/dev/null; then
    echo "torch-venv: $venv has PyTorch $have"
    exit 0
  fi
  echo "torch-venv: completing $venv's packages"
  "${pip[@]}" "${deps[@]}"
else
  echo "torch-venv: installing PyTorch $torch_version into $venv (about 2 GB)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "${pip[@]}" "torch==$torch_version" "${deps[@]}"
fi
"$venv/bin/python" -c 'import torch, torch.distributed as d; assert d.is_available(); print("torch-venv: PyTorch", torch.__version__)'
