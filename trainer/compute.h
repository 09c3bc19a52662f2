// One rank's computation, shared by every strategy: an input check (the pad that brings the
// data set's images to the model's size), a step's gradient on a batch, and the evaluation of a
// range of the test set. The strategies differ in what they do with the gradient, not here.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"
#include "trainer/loss.h"
#include "trainer/mnist.h"
#include "trainer/model.h"
#include "trainer/parallel.h"

namespace hoop::train {

// The black border, in pixels a side, that brings the data set's images to the model's input
// size; InvalidArgument when they cannot be (larger, or an odd difference).
StatusOr<int> InputPad(const Model& model, const Dataset& data);

// Reused buffers of one rank's computation. A model on a device (Model::device) gets its batch
// copied to `on_device` and its logits copied back to `logits`; the loss and its gradient are
// computed on the host (N x 10 values a step) and the gradient copied up to `dlogits_on_device`.
struct Workspace {
  Tensor batch, dlogits;
  std::vector<uint8_t> labels;
  Tensor on_device, dlogits_on_device, logits;
};

// Seconds spent in a step's phases, added to.
struct StepTimes {
  double data = 0, forward = 0, backward = 0;
};

// The model's forward pass on the batch in ws.batch: on the host, or on the model's device with
// the batch copied up and the logits copied back (to ws.logits).
const Tensor& ForwardBatch(Model& model, Workspace& ws, Mode mode, ThreadPool& pool);

struct Distillation;  // teacher.h

// Forward and backward of the images perm[0..n) (n > 0): every parameter's gradient is that of
// the loss summed over the images times `scale`. on_layer (may be empty) runs as each layer's
// gradients are final. slow_ms > 0: a straggler's sleep before the forward pass, as if its
// device computed slower (--slow-rank). The phases' seconds are added to `times`. distill (may be
// null): the loss is knowledge distillation's against its teacher's soft targets of the same
// images (loss.h DistillLoss), the teacher's forward pass timed as part of the forward phase.
LossResult ComputeGradient(Model& model, const Dataset& train, const int64_t* perm, int n, float scale, int pad,
                           ThreadPool& pool, Workspace& ws, const std::function<void(Layer&)>& on_layer, double slow_ms,
                           StepTimes& times, const Distillation* distill = nullptr);

// The test images [begin, end), in chunks of EvalChunk(model): loss summed, correct and images
// counted. probs (may be null) gets each image's class probabilities at its index x classes.
struct EvalSums {
  double loss = 0, correct = 0, images = 0;
};
EvalSums Evaluate(Model& model, const Dataset& test, int64_t begin, int64_t end, int pad, ThreadPool& pool,
                  Workspace& ws, float* probs);

}  // namespace hoop::train
