// One stage of a pipeline on one rank (issue 24, item 5): its layers, and one training step's
// micro-batches through them in the order of a schedule (pipeline_plan.h).
//   forward i:  the stage's input (stage 0 gathers the images; the others receive the previous
//               stage's output), its layers, and the output to the next stage; the last stage
//               takes the loss instead, scaled for the whole step.
//   backward i: the gradient of the output (the last stage's own, or the next stage's),
//               back through the layers, and the input's gradient to the previous stage. The
//               parameters' gradients are summed over the micro-batches.
// A stage keeps each micro-batch's input, not its activations: a backward whose micro-batch was
// not the last forward runs that forward again first (GPipe's re-materialisation), with the
// batch-norm statistics put back as they were. Tensors cross stages plain (layout.h) with tags
// 2i (activation) and 2i + 1 (gradient); sends do not block, receives do.
#pragma once
#include <functional>
#include <vector>

#include "collectives/api/communicator.h"
#include "trainer/chain.h"
#include "trainer/loss.h"
#include "trainer/pipeline_plan.h"

namespace hoop::train {

class PipelineStage {
 public:
  // `layers`: the stage's (they outlive it); `pipe`: the pipeline's communicator, rank = stage.
  // in: one item's input shape (n unused).
  PipelineStage(Chain& layers, Shape in, Communicator& pipe, ThreadPool& pool);
  int stage() const { return pipe_.rank(); }
  bool first() const { return pipe_.rank() == 0; }
  bool last() const { return pipe_.rank() == pipe_.size() - 1; }
  Chain& layers() { return chain_; }

  // Stage 0: fills micro-batch i's images; the last stage: its labels (both on a 1-stage pipe).
  using Fill = std::function<void(int micro, Tensor* images, std::vector<uint8_t>* labels)>;
  struct Times {
    double forward = 0, backward = 0, wait = 0;  // wait: for the stages beside it
  };
  // One step: every op of `ops` over micro-batches of `sizes` images; leaves the parameters'
  // gradients summed over them. The last stage adds the loss (scaled by `scale` for the
  // gradient) and the correct count to `loss`.
  Status Train(const std::vector<PipeOp>& ops, const std::vector<int>& sizes, const Fill& fill, float scale,
               LossResult* loss, Times* times);
  // Forward only, in eval mode, of `n` images (stage 0 fills them, the last stage the labels).
  Status Evaluate(int n, const Fill& fill, LossResult* loss);

 private:
  Status Receive(Tensor& t, Shape shape, int from, int tag, const char* what);
  void Send(const Tensor& t, std::vector<float>& keep, int to, int tag);
  Status Settle();  // waits for the sends in flight

  Chain& chain_;
  Shape in_;
  Communicator& pipe_;
  ThreadPool& pool_;
  Shape out_;          // one item's output shape
  int out_block_ = 0;  // the layout the layers' output comes in
  std::vector<Param*> params_;
  std::vector<Tensor> sum_;             // gradients summed over micro-batches
  std::vector<Tensor> inputs_, douts_;  // per micro-batch
  std::vector<std::vector<uint8_t>> labels_;
  std::vector<std::vector<float>> sent_fwd_, sent_bwd_;
  std::vector<Work> sending_;
  Tensor plain_, din_, grad_in_;
  std::vector<std::vector<float>> saved_buffers_;
};

}  // namespace hoop::train
