// --precision and --grad-wire (issue 54, item 2): the arithmetic of a rank's layers, and the
// type its gradients travel in.
//
//   fp32  every layer in f32 (GPU convolutions may use TF32 tensor cores: --tf32), the default.
//   bf16  mixed precision: the convolutions multiply in bf16 and accumulate in f32, from f32
//         master weights (the optimizer and checkpoints see f32 only); batch norm, pooling, the
//         linear layers and the loss stay f32, as PyTorch's autocast keeps its reductions. CPU
//         ranks run it on oneDNN's bf16 convolutions (--layers onednn) where the CPU has
//         AVX512-BF16 or AMX, and refuse it, naming the reason, where it does not (emulated bf16
//         is slower than f32). Activations between layers are stored f32 (hoop-train's tensors
//         are f32): the products are bf16, the memory traffic is not halved.
//   fp16  refused: oneDNN 2.6's CPU convolutions have no fp16, and GPU ranks do not have
//         --precision yet.
//
// --grad-wire f32|bf16: the gradient buckets' allreduce sends bf16 (hoop's wire compression:
// half the bytes, f32 sums at every hop) or f32; bf16 by default with --precision bf16.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "collectives/kernels/wire.h"
#include "common/status.h"
#include "trainer/model.h"
#include "trainer/options.h"

namespace hoop::train {

// The job's --precision against where its ranks compute (any CPU rank, any GPU rank): what
// cannot run, as InvalidArgument naming the option and the reason.
Status CheckPrecision(const Options& o, bool any_cpu, bool any_gpu);

// A model of `name` on this host's layers in --precision (--layers; bf16: oneDNN's bf16
// convolutions): what every CPU rank builds, and what holds a whole model on one.
StatusOr<std::unique_ptr<Model>> BuildHostModel(const Options& o, const std::string& name, int channels);

// The gradients' type on the wire: bf16 compression, or none (f32).
std::optional<Compression> GradientWire(const Options& o);

}  // namespace hoop::train
