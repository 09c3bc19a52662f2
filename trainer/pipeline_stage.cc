#include "trainer/pipeline_stage.h"

#include <chrono>
#include <string>

#include "trainer/layout.h"

namespace hoop::train {

namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
Buffer Floats(float* p, size_t n) { return Buffer{p, n, DType::kF32, MemKind::kHost}; }
}  // namespace

PipelineStage::PipelineStage(Chain& layers, Shape in, Communicator& pipe, ThreadPool& pool)
    : chain_(layers), in_(in), pipe_(pipe), pool_(pool) {
  Shape one = in;
  one.n = 1;
  out_ = chain_.OutShape(one);
  params_ = chain_.Params();
  sum_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) sum_[i].Resize(params_[i]->grad.shape);
}

Status PipelineStage::Receive(Tensor& t, Shape shape, int from, int tag, const char* what) {
  t.Resize(shape);
  Status st = pipe_.RecvNow(Floats(t.ptr(), t.size()), from, tag);
  if (!st.ok())
    return st.WithContext("pipeline stage " + std::to_string(stage()) + ": receiving " + what + " from stage " +
                          std::to_string(from));
  return st;
}

void PipelineStage::Send(const Tensor& t, std::vector<float>& keep, int to, int tag) {
  if (t.block != 0) {  // across stages tensors go plain
    Relayout(t, 0, plain_);
    keep = plain_.data;
  } else {
    keep = t.data;
  }
  sending_.push_back(pipe_.Send(Floats(keep.data(), keep.size()), to, tag));
}

Status PipelineStage::Settle() {
  Status first;
  for (Work& w : sending_) {
    Status st = w.Wait();
    if (first.ok() && !st.ok()) first = st.WithContext("pipeline stage " + std::to_string(stage()) + ": sending");
  }
  sending_.clear();
  return first;
}

Status PipelineStage::Train(const std::vector<PipeOp>& ops, const std::vector<int>& sizes, const Fill& fill,
                            float scale, LossResult* loss, Times* times) {
  const int micros = static_cast<int>(sizes.size());
  inputs_.resize(micros);
  douts_.resize(micros);
  labels_.resize(micros);
  sent_fwd_.resize(micros);
  sent_bwd_.resize(micros);
  for (Tensor& s : sum_) s.Zero();
  auto buffers = chain_.Buffers();
  int held = -1;  // the micro-batch whose activations the layers hold
  for (const PipeOp& op : ops) {
    const int i = op.micro;
    Shape in = in_, out = out_;
    in.n = out.n = sizes[i];
    if (op.forward) {
      auto t = Clock::now();
      if (first()) {
        fill(i, &inputs_[i], last() ? &labels_[i] : nullptr);
      } else {
        HOOP_RETURN_IF_ERROR(Receive(inputs_[i], in, stage() - 1, 2 * i, "an activation"));
        if (last()) fill(i, nullptr, &labels_[i]);
      }
      times->wait += first() ? 0 : Since(t);
      t = Clock::now();
      const Tensor& y = chain_.Forward(inputs_[i], Mode::kTrain, pool_);
      out_block_ = y.block;
      held = i;
      if (last()) {
        LossResult r = SoftmaxCrossEntropy(y, labels_[i], scale, &douts_[i]);
        loss->loss_sum += r.loss_sum;
        loss->correct += r.correct;
      } else {
        Send(y, sent_fwd_[i], stage() + 1, 2 * i);
      }
      times->forward += Since(t);
      continue;
    }
    auto t = Clock::now();
    if (!last()) {
      HOOP_RETURN_IF_ERROR(Receive(grad_in_, out, stage() + 1, 2 * i + 1, "a gradient"));
      times->wait += Since(t);
      t = Clock::now();
      if (out_block_ != 0)
        Relayout(grad_in_, out_block_, douts_[i]);
      else
        std::swap(douts_[i], grad_in_);
    }
    if (held != i) {  // re-materialise micro-batch i's activations; its statistics were counted once
      saved_buffers_.resize(buffers.size());
      for (size_t b = 0; b < buffers.size(); ++b) saved_buffers_[b] = buffers[b].second->data;
      chain_.Forward(inputs_[i], Mode::kTrain, pool_);
      for (size_t b = 0; b < buffers.size(); ++b) buffers[b].second->data = saved_buffers_[b];
      held = i;
    }
    chain_.Backward(inputs_[i], douts_[i], first() ? nullptr : &din_, pool_);
    for (size_t k = 0; k < params_.size(); ++k) {
      float* s = sum_[k].ptr();
      const float* g = params_[k]->grad.ptr();
      for (size_t j = 0, n = sum_[k].size(); j < n; ++j) s[j] += g[j];
    }
    if (!first()) Send(din_, sent_bwd_[i], stage() - 1, 2 * i + 1);
    times->backward += Since(t);
  }
  for (size_t k = 0; k < params_.size(); ++k)
    std::copy(sum_[k].data.begin(), sum_[k].data.end(), params_[k]->grad.ptr());
  return Settle();
}

Status PipelineStage::Evaluate(int n, const Fill& fill, LossResult* loss) {
  Shape in = in_;
  in.n = n;
  inputs_.resize(1);
  labels_.resize(1);
  sent_fwd_.resize(1);
  if (first())
    fill(0, &inputs_[0], last() ? &labels_[0] : nullptr);
  else
    HOOP_RETURN_IF_ERROR(Receive(inputs_[0], in, stage() - 1, 0, "an activation"));
  if (last() && !first()) fill(0, nullptr, &labels_[0]);
  const Tensor& y = chain_.Forward(inputs_[0], Mode::kEval, pool_);
  if (last()) {
    LossResult r = SoftmaxCrossEntropy(y, labels_[0], 1.0f, nullptr);
    loss->loss_sum += r.loss_sum;
    loss->correct += r.correct;
  } else {
    Send(y, sent_fwd_[0], stage() + 1, 0);
  }
  return Settle();
}

}  // namespace hoop::train
