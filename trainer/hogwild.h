// Hogwild! (Recht et al., 2011; issue 24, item 3): the ranks on one host train one copy of the
// parameters held in shared memory, without locks. Each step a rank reads the shared copy into
// its model (racing with the others' writes, which the method accepts), computes the gradient
// of its own batch, takes its momentum-SGD step on that local copy, and adds the step's change
// to the shared copy with plain float adds: no atomics and no gradient exchange, so concurrent
// updates of one weight can be lost, which is the method's bet on sparse, small updates.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/layer.h"

namespace hoop::train {

class SharedParams {
 public:
  // `name`: a POSIX shared-memory name ("/hoop-hogwild-..."); the creator makes and sizes it for
  // the parameters, the others open it. Unlink() once all have it open (nothing is left behind
  // in /dev/shm even if the job dies later).
  static StatusOr<std::unique_ptr<SharedParams>> Open(const std::string& name, const std::vector<Param*>& params,
                                                      bool create);
  ~SharedParams();
  SharedParams(const SharedParams&) = delete;
  SharedParams& operator=(const SharedParams&) = delete;
  void Unlink();

  void Publish();    // the model's parameters into the shared copy (once, from one rank)
  void Read();       // the shared copy into the model, and remembered as the step's start
  void AddChange();  // the shared copy += the model's parameters - the step's start

 private:
  SharedParams() = default;
  std::string name_;
  std::vector<Param*> params_;
  float* shared_ = nullptr;
  size_t floats_ = 0;
  std::vector<float> start_;  // the parameters as Read() left them
};

}  // namespace hoop::train
