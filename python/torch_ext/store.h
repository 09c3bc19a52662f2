// PyTorch's store (c10d::Store: TCPStore, FileStore, HashStore, PrefixStore...) as the C API's
// hoop_store_t, so that a process group made by torch.distributed joins hoop over the store
// PyTorch already has, with no port or store of hoop's. StoreBridge must outlive the
// communicator made over it.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "hoop/hoop.h"

namespace hoop::torch_ext {

class StoreBridge {
 public:
  explicit StoreBridge(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  // The callbacks, with this object as their context.
  hoop_store_t Callbacks();
  c10d::Store& store() { return *store_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace hoop::torch_ext
