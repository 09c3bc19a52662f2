// Which device each rank of hoop-train computes on (--device, --devices), and the GPU it takes:
//  - cpu (the default): every rank on the CPU, with --layers' back end;
//  - cuda: every rank on a GPU, local rank r on GPU r modulo the GPUs this host has (ranks may
//    share one: they exchange gradients over CUDA IPC);
//  - auto: the local ranks below the number of GPUs on a GPU each, the others on the CPU (one
//    GPU: local rank 0 on it, the rest on the CPU): a hybrid job;
//  - --devices cuda,cpu,...: one entry per rank, in rank order (cuda entries take GPUs as cuda's).
// A hybrid job splits each global batch by the ranks' measured speed unless told otherwise
// (--balance speed is its default), so the CPU ranks do not hold the GPU ranks back.
#pragma once
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::train {

// Parses --devices' list: cpu or cuda entries, at least one.
StatusOr<std::vector<std::string>> ParseDevices(const std::string& list);

// The CUDA device this rank computes on, or -1 for the CPU; an error names the option and why
// (no CUDA device here, a --devices list of the wrong length).
StatusOr<int> RankDevice(const std::string& device, const std::vector<std::string>& devices, int rank, int ranks,
                         int local_rank);

// "cuda:0" or "cpu".
std::string DeviceName(int device);

}  // namespace hoop::train
