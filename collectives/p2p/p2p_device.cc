// Point-to-point calls on CUDA device memory, staged through host memory: a send copies the
// device buffer to a host copy before it is posted (so the caller may reuse its buffer once the
// call completes, as with host memory); a receive lands in a host copy and is copied to the
// device buffer once it succeeded, before the call completes. The copies run on CUDA's legacy
// default stream and are waited for. The baseline a direct path (CUDA IPC) will replace.
//
// On a caller's CUDA stream (EnterStreamP2p, at the call) nothing is waited for: the copies are
// queued on that stream around the call's hold (stream_order.h), into a pinned slot of the
// stream staging (stream_staging.h). A receive's slot is filled from the device buffer first, so
// the copy back, queued before the message's length is known, leaves the bytes past a shorter
// message as they were.
#include "collectives/core/comm_core.h"
#include "common/device.h"

namespace hoop {

StatusOr<std::shared_ptr<std::vector<char>>> CommCore::StageP2p(bool is_send, const Buffer& b) const {
  const std::string call = "rank " + std::to_string(opts_.rank) + ": " + (is_send ? "send" : "receive");
  auto devices = CudaDeviceCount();
  if (!devices.ok())
    return Status(devices.status().code(),
                  call + ": the buffer is CUDA device memory, but: " + devices.status().message());
  const size_t esize = DTypeSize(b.dtype);
  // What the host copy would hide: the checks of the buffer itself, worded as for host memory.
  if (esize == 0 || (b.count > 0 && b.data == nullptr) || b.count > (size_t{1} << 40))
    return CheckP2p(is_send, Buffer{b.data, b.count, b.dtype, MemKind::kHost}, 0, 0);
  auto host = std::make_shared<std::vector<char>>(b.count * esize);
  if (is_send) {
    Status s = CopyMem(host->data(), MemKind::kHost, b.data, MemKind::kCuda, host->size(), nullptr);
    if (s.ok()) s = CudaStreamSync(nullptr);
    if (!s.ok()) return s.WithContext(call + ": copying the device buffer out");
  }
  return host;
}

Status CommCore::UnstageP2p(const Buffer& b, const std::vector<char>& host, size_t bytes) const {
  Status s = CopyMem(b.data, MemKind::kCuda, host.data(), MemKind::kHost, std::min(bytes, host.size()), nullptr);
  if (s.ok()) s = CudaStreamSync(nullptr);
  return s.ok() ? s : s.WithContext("rank " + std::to_string(opts_.rank) + ": receive: copying into the device buffer");
}

StatusOr<StreamTicket> CommCore::EnterStreamP2p(Op& op) {
  void* stream = *op.stream;
  P2pCall& c = *op.p2p;
  if (c.kind != MemKind::kCuda) return stream_order_.Enter(stream);
  const size_t bytes = c.count * DTypeSize(c.dtype);
  // A side of at least a byte: an empty buffer still needs an address.
  HOOP_ASSIGN_OR_RETURN(StreamStaging::Slot * slot, stream_staging_.Take(c.is_send ? std::max<size_t>(bytes, 1) : 0,
                                                                         c.is_send ? 0 : std::max<size_t>(bytes, 1)));
  char* host = c.is_send ? slot->in : slot->out;
  Status copy = CopyMem(host, MemKind::kCudaPinned, c.data, MemKind::kCuda, bytes, stream);
  auto t = copy.ok() ? stream_order_.Enter(stream) : StatusOr<StreamTicket>(copy);
  if (t.ok() && !c.is_send) copy = CopyMem(c.data, MemKind::kCuda, host, MemKind::kCudaPinned, bytes, stream);
  stream_staging_.Give(slot, stream);
  if (!t.ok()) return t.status();
  // A copy back that could not be queued: the call still goes to the worker, which releases its
  // hold, and fails there.
  if (!copy.ok()) op.stage_error = copy.WithContext("queueing the copy of the message to the device");
  c.data = host;
  c.kind = MemKind::kCudaPinned;
  return t;
}

}  // namespace hoop
