#include "trainer/compute.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "common/device.h"
#include "trainer/teacher.h"

namespace hoop::train {

namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

const Tensor& ForwardBatch(Model& model, Workspace& ws, Mode mode, ThreadPool& pool) {
  if (model.device < 0) return model.net.Forward(ws.batch, mode, pool);
  ws.on_device.Place(model.device);
  ws.on_device.Resize(ws.batch.shape);
  ws.on_device.Upload(ws.batch.ptr(), ws.batch.size());
  const Tensor& logits = model.net.Forward(ws.on_device, mode, pool);
  ws.logits.Resize(logits.shape);
  logits.Download(ws.logits.data);
  return ws.logits;
}

StatusOr<int> InputPad(const Model& model, const Dataset& data) {
  const Shape& want = model.input;
  if (data.rows > want.h || data.cols > want.w || (want.h - data.rows) % 2 != 0 ||
      want.h - data.rows != want.w - data.cols)
    return InvalidArgument("--model " + model.name + " takes " + std::to_string(want.h) + "x" + std::to_string(want.w) +
                           " images; " + data.name + "'s are " + std::to_string(data.rows) + "x" +
                           std::to_string(data.cols) + " (resnet18 and resnet34 take 32x32)");
  return (want.h - data.rows) / 2;
}

LossResult ComputeGradient(Model& model, const Dataset& train, const int64_t* perm, int n, float scale, int pad,
                           ThreadPool& pool, Workspace& ws, const std::function<void(Layer&)>& on_layer, double slow_ms,
                           StepTimes& times, const Distillation* distill) {
  auto t = Clock::now();
  Gather(train, perm, n, ws.batch, ws.labels, pad);
  times.data += Since(t);
  t = Clock::now();
  if (slow_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slow_ms));
  const float* soft = distill ? distill->teacher->Targets(train, perm, n, pool) : nullptr;
  const Tensor& logits = ForwardBatch(model, ws, Mode::kTrain, pool);
  LossResult r = distill
                     ? DistillLoss(logits, soft, ws.labels, distill->temperature, distill->alpha, scale, &ws.dlogits)
                     : SoftmaxCrossEntropy(logits, ws.labels, scale, &ws.dlogits);
  times.forward += Since(t);
  t = Clock::now();
  if (model.device < 0) {
    model.net.Backward(ws.batch, ws.dlogits, nullptr, pool, on_layer);
  } else {
    ws.dlogits_on_device.Place(model.device);
    ws.dlogits_on_device.Resize(ws.dlogits.shape);
    ws.dlogits_on_device.Upload(ws.dlogits.ptr(), ws.dlogits.size());
    model.net.Backward(ws.on_device, ws.dlogits_on_device, nullptr, pool, on_layer);
    // The device's backward pass timed as backward, not as the wait for the gradients after it.
    if (Status s = CudaStreamSync(nullptr); !s.ok())
      throw DeviceError("the backward pass on the device: " + s.message());
  }
  times.backward += Since(t);
  return r;
}

EvalSums Evaluate(Model& model, const Dataset& test, int64_t begin, int64_t end, int pad, ThreadPool& pool,
                  Workspace& ws, float* probs) {
  EvalSums sums;
  std::vector<int64_t> idx;
  const int chunk = EvalChunk(model.name);
  for (int64_t at = begin; at < end; at += chunk) {
    const int m = static_cast<int>(std::min<int64_t>(chunk, end - at));
    idx.resize(m);
    for (int i = 0; i < m; ++i) idx[i] = at + i;
    Gather(test, idx.data(), m, ws.batch, ws.labels, pad);
    const Tensor& logits = ForwardBatch(model, ws, Mode::kEval, pool);
    LossResult r = SoftmaxCrossEntropy(logits, ws.labels, 1.0f, nullptr);
    if (probs) Softmax(logits, probs + at * model.classes);
    sums.loss += r.loss_sum;
    sums.correct += static_cast<double>(r.correct);
    sums.images += m;
  }
  return sums;
}

}  // namespace hoop::train
