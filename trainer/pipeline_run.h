// hoop-train --strategy pipeline (issue 24, item 5): the model's layers split over --stages S
// ranks (pipeline_plan.h: contiguous groups that balance the time rank 0 measures per layer),
// each step's batch in --micro-batches M through them (pipeline_stage.h) in a GPipe or 1F1B
// schedule, the gradients summed over the micro-batches, then one SGD step per stage.
//
// With N = S x D ranks there are D pipelines (rank r is stage r % S of pipeline r / S): each
// takes its share of every global batch (--batch x D, as D ranks of sync), and each stage's
// gradients are summed over the D replicas of that stage through a sub-communicator (Split by
// stage) before the step, so the update is the global batch's mean, as sync's. The pipeline's
// own sub-communicator carries the activations and gradients. A stage that dies fails both on
// every rank (they share the job's connections): the job ends with the error naming it.
// At each epoch's end batch-norm statistics are averaged over replicas, every pipeline
// evaluates its part of the test set through its stages, and rank 0 (stage 0 of pipeline 0)
// collects the other stages' layers for the checkpoint: the whole model, as sync saves it.
#pragma once
#include <atomic>

#include "collectives/api/communicator.h"
#include "trainer/mnist.h"
#include "trainer/options.h"
#include "trainer/trainer.h"

namespace hoop::train {

StatusOr<RunResult> TrainPipeline(const Options& opts, Communicator& comm, const Dataset& train, const Dataset& test,
                                  const std::atomic<int>* stop);

}  // namespace hoop::train
