// The PyTorch and pybind11 headers every file of the torch.distributed backend (python/torch_ext)
// includes, directly or through its own headers, precompiled once for hoop._c10d
// (python/CMakeLists.txt): parsing them is most of that target's build, once per file otherwise.
// Changes build time, never meaning.
#pragma once
#include <torch/csrc/utils/pybind.h>
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>

#include "cmake/pch/std.h"
