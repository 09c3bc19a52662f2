// ProcessGroupHoop: torch.distributed's backend "hoop" (hoop.torch registers it). Each process
// group is one hoop communicator, joined through the group's own c10d::Store (hoop_init_store):
// the default group through init_process_group's store, each new_group through the prefixed
// store PyTorch makes for it (PyTorch creates a group's backend on its members only, so a group
// is a communicator of its members, not a split of the world, which every rank would have to
// join). Every call on CPU tensors is one of hoop's nonblocking calls; its Work completes when
// waited on, or on one of the group's Completer threads once its Future is taken (DDP). A call on CUDA
// tensors (PyTorch 2) is one of hoop's *_stream calls on PyTorch's current stream instead
// (stream_work.h).
//
// Tensors: CPU or CUDA, one per call (one device per process), any layout (non-contiguous ones go
// through a contiguous copy), dtypes uint8, int8, int16, bool, int32, int64, float16, bfloat16,
// float32, float64, and uint16, uint32, uint64, float8_e4m3fn and float8_e5m2 where torch has them
// (the library's dtype table, hoop_dtype_info, matched by c10's names; the fp8s take sum, avg, min,
// max and prod), complex ones as their real and imaginary parts (SUM, AVG, PREMUL_SUM). Ops: SUM,
// AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, and PREMUL_SUM (tensors.h; on bool, SUM is an or and
// PRODUCT an and). all_gather and reduce_scatter take lists of uneven sizes (uneven.cc);
// monitored_barrier names the ranks that did not arrive (monitored_barrier.cc).
// Anything else is refused with an error naming the rank, the call and the cause.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "hoop/hoop.h"
#include "python/torch_ext/store.h"
#include "python/torch_ext/stream_work.h"
#include "python/torch_ext/tensors.h"
#include "python/torch_ext/work.h"

namespace hoop::torch_ext {

// Backend::shrink, which torch.distributed.shrink_group calls, came with PyTorch 2.10.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 10)
#define HOOP_TORCH_HAS_SHRINK 1
#else
#define HOOP_TORCH_HAS_SHRINK 0
#endif

// Backend::split, which torch.distributed.split_group calls (taken from 2.10 on here).
#define HOOP_TORCH_HAS_SPLIT HOOP_TORCH_HAS_SHRINK

// PyTorch 2 made process groups hold backends; 1.13's register_backend wants the group itself.
#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

// What a call's `issue` is given: a request to fill (a nonblocking call on host tensors), or the
// CUDA stream to queue on (on_stream: CUDA tensors, stream_work.h; stream may be NULL, the legacy
// default stream).
struct Slot {
  hoop_request_t* request;
  hoop_recv_info_t* info;
  bool on_stream;
  void* stream;
};
// hoop_iNAME(ARGS..., request) or hoop_NAME_stream(ARGS..., stream), as the slot asks.
#define HOOP_ISSUE(slot, name, ...) \
  ((slot).on_stream ? hoop_##name##_stream(__VA_ARGS__, (slot).stream) : hoop_i##name(__VA_ARGS__, (slot).request))

// A send or a receive: on CUDA tensors each peer and direction has a stream of its own.
struct PeerCall {
  int peer;
  bool recv;
};

class ProcessGroupHoop : public GroupBase {
 public:
  // host: the address this rank advertises (empty: HOOP_HOST, else 127.0.0.1); timeout_s: how
  // long its calls may wait (PyTorch's timeout=; 0: HOOP_TIMEOUT's).
  ProcessGroupHoop(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& host,
                   double timeout_s = 0);
  // A group that a shrink made (shrink below): over `comm`, which it frees, sharing its parent's
  // store.
  ProcessGroupHoop(hoop_comm_t comm, std::shared_ptr<StoreBridge> store, int rank, int size);
  ~ProcessGroupHoop() override;

  const std::string getBackendName() const override { return "hoop"; }
  // hoop's deterministic mode on this group's communicator (hoop_comm_set_deterministic).
  void SetDeterministic(bool on);
  bool deterministic() const;

  using Tensors = std::vector<at::Tensor>;
  using Work = c10::intrusive_ptr<c10d::Work>;
  Work broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts = {}) override;
  Work allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts = {}) override;
  Work allreduce_coalesced(Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts = {}) override;
  Work reduce(Tensors& tensors, const c10d::ReduceOptions& opts = {}) override;
  Work allgather(std::vector<Tensors>& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts = {}) override;
  Work _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts = {}) override;
  Work gather(std::vector<Tensors>& outputs, Tensors& inputs, const c10d::GatherOptions& opts = {}) override;
  Work scatter(Tensors& outputs, std::vector<Tensors>& inputs, const c10d::ScatterOptions& opts = {}) override;
  Work reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                      const c10d::ReduceScatterOptions& opts = {}) override;
  Work _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                            const c10d::ReduceScatterOptions& opts = {}) override;
  Work alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                     std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts = {}) override;
  Work alltoall(Tensors& outputs, Tensors& inputs, const c10d::AllToAllOptions& opts = {}) override;
  Work barrier(const c10d::BarrierOptions& opts = {}) override;
  // monitored_barrier (monitored_barrier.cc): names the ranks that did not arrive in time, then
  // revokes the group with that message.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks = false) override;
  Work send(Tensors& tensors, int dst, int tag) override;
  Work recv(Tensors& tensors, int src, int tag) override;
  Work recvAnysource(Tensors& tensors, int tag) override;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // Several all_gather_into_tensor / reduce_scatter_tensor calls as one (coalesced.cc): what
  // DTensor's redistributions and FSDP2's state dict call through functional collectives.
  Work allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                       const c10d::AllgatherOptions& opts = {}) override;
  Work reduce_scatter_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                       const c10d::ReduceScatterOptions& opts = {}) override;
#endif
#if HOOP_TORCH_HAS_SPLIT
  // torch.distributed.split_group: every rank of this group calls it with the ranks of its own
  // part (or of the first part, where it is in none); one hoop_comm_split of this communicator,
  // colored by the part's first rank and keyed by the position in it (PyTorch's rank order). The
  // parts talk over this group's connections, in tag spaces of their own (hoop.h).
  bool supportsSplitting() const override { return true; }
  // What PyTorch copies for a split's child (the group's name, its ranks): hoop reads none of it.
  c10::intrusive_ptr<Options> getBackendOptions() override { return options_; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
#endif
#if HOOP_TORCH_HAS_SHRINK
  // torch.distributed.shrink_group (PyTorch 2.10 on): the ranks not excluded make a new group
  // (hoop_comm_shrink_excluding), with connections of its own; SHRINK_ABORT revokes this one
  // first, so that calls still running on it end.
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranks_to_exclude, int shrink_flags = 0,
                                           const c10::intrusive_ptr<Options>& opts_override = nullptr) override;
#endif

 private:
  // A Work for `call` whose C call `issue(request)` is made here; a refused call throws.
  template <class Issue>
  Work Start(const char* call, c10d::OpType type, Tensors outputs, Tensors keep, std::function<void()> after,
             Issue issue, std::optional<PeerCall> p2p = std::nullopt);
  std::string Where(const char* call) const;
  // The list forms with tensors whose sizes differ by rank (uneven.cc).
  Work AllgatherUneven(Tensors& outs, const at::Tensor& in, const std::string& where);
  Work ReduceScatterUneven(Tensors& outputs, Tensors& ins, const Reduction& red, const std::string& where);
  // The flight recorder's label for this group's communicator: PyTorch's name for the group
  // ("0", "1", ...: the process_group of its own flight recorder) and its description, once
  // PyTorch has given them (after the constructor: so at the first call).
  void LabelTrace();
  bool labeled_ = false;
  uint64_t monitored_seq_ = 0;  // monitored barriers so far: their tags
#if HOOP_TORCH_STREAMS
  SideStreams side_streams_;
#endif
#if HOOP_TORCH_HAS_SPLIT
  c10::intrusive_ptr<Options> options_ = c10::make_intrusive<Options>("hoop");
  c10::intrusive_ptr<c10d::Store> last_split_store_;  // the last split's, and what it gave
  c10::weak_intrusive_ptr<c10d::Backend> last_split_{c10::intrusive_ptr<c10d::Backend>()};  // not kept alive
#endif

  std::shared_ptr<StoreBridge> store_;  // outlives comm_, and the groups shrunk from it
  hoop_comm_t comm_ = nullptr;
  std::shared_ptr<Completer> completer_;  // shared with the Works that hand it their futures
};

template <class Issue>
ProcessGroupHoop::Work ProcessGroupHoop::Start(const char* call, c10d::OpType type, Tensors outputs, Tensors keep,
                                               std::function<void()> after, Issue issue, std::optional<PeerCall> p2p) {
  if (!labeled_) LabelTrace();
  hoop_comm_set_trace_name(comm_, call);  // PyTorch's op name, on the first C call `issue` makes
#if HOOP_TORCH_STREAMS
  if (const auto device = DeviceOfCall(outputs, keep, getRank(), call)) {
    const c10::Stream side = p2p ? side_streams_.Get(*device, p2p->peer, p2p->recv)
                                 : side_streams_.Get(*device, SideStreams::kCollectives, false);
    return StartOnStream(
        getRank(), type, call, std::move(outputs), std::move(keep), after, *device,
        [&](void* stream) {
          return issue(Slot{nullptr, nullptr, true, stream});
        },
        side);
  }
#endif
  auto w = c10::make_intrusive<HoopWork>(getRank(), type, call, std::move(outputs), std::move(keep), std::move(after));
  if (issue(Slot{w->slot(), p2p && p2p->recv ? w->recv_info() : nullptr, false, nullptr}) != HOOP_SUCCESS)
    throw std::runtime_error(std::string("hoop: ") + hoop_last_error());
  std::weak_ptr<Completer> c = completer_;
  w->on_future = [c](c10::intrusive_ptr<HoopWork> x) {
    auto live = c.lock();
    if (!live || !live->Add(x)) x->Complete();  // the group or its thread is gone: here, now
  };
  return w;
}

// The group's name and description as this PyTorch keeps them: getGroupUid and getGroupDesc
// (2.x), getGroupName in earlier 2.x, none in 1.13.
template <class B>
std::pair<std::string, std::string> GroupNames(const B& b) {
  std::string name, desc;
  if constexpr (requires { b.getGroupUid(); })
    name = b.getGroupUid();
  else if constexpr (requires { b.getGroupName(); })
    name = b.getGroupName();
  if constexpr (requires { b.getGroupDesc(); }) desc = b.getGroupDesc();
  return {name, desc};
}

}  // namespace hoop::torch_ext
