// Communicator::RunStaged and HostStaging (device_staging.h).
#include "collectives/device_staging.h"

#include <algorithm>
#include <cstdlib>

#include "collectives/communicator.h"
#include "common/device.h"

namespace hoop {

HostStaging::~HostStaging() {
  for (char* p : buf_) Free(p);
  for (char* p : retired_) Free(p);
}

MemKind HostStaging::kind() const { return pinned_ ? MemKind::kCudaPinned : MemKind::kHost; }

void HostStaging::Free(char* p) const {
  if (pinned_) CudaFree(p, MemKind::kCudaPinned);
  else std::free(p);
}

StatusOr<char*> HostStaging::Get(int which, size_t bytes) {
  const size_t w = static_cast<size_t>(which);
  if (bytes_[w] < bytes || buf_[w] == nullptr) {
    // At least doubled, so the retired buffers together stay smaller than the current one.
    const size_t want = std::max(bytes, 2 * bytes_[w]);
    void* p = nullptr;
    if (pinned_) {
      HOOP_ASSIGN_OR_RETURN(p, CudaAllocPinned(want));
    } else {
      p = std::aligned_alloc(64, (std::max<size_t>(want, 1) + 63) / 64 * 64);
      if (p == nullptr) return Internal("out of host memory staging " + std::to_string(want) + " bytes");
    }
    if (buf_[w] != nullptr) {
      if (pinned_) retired_.push_back(buf_[w]);
      else std::free(buf_[w]);
    }
    buf_[w] = static_cast<char*>(p);
    bytes_[w] = want;
  }
  return buf_[w];
}

bool Communicator::OnDevice(const Op& op) const {
  return (UsesIn(op) && op.in.kind == MemKind::kCuda) || (UsesOut(op) && op.out.kind == MemKind::kCuda);
}

Status Communicator::RunStaged(const Op& op, uint32_t seq) {
  const auto ctx = [&](const Status& s) {
    return s.WithContext("rank " + std::to_string(opts_.rank) + ": " + CollKindName(op.kind) + ": staging device memory");
  };
  Op host = op;
  host.ticket = {};  // the stream's input wait happens here, once
  const bool out_dev = UsesOut(op) && op.out.kind == MemKind::kCuda;
  const bool in_dev = UsesIn(op) && op.in.kind == MemKind::kCuda;
  const size_t in_bytes = op.in.count * DTypeSize(op.in.dtype);
  const size_t out_bytes = op.out.count * DTypeSize(op.out.dtype);
  const auto* out_lo = static_cast<const char*>(op.out.data);
  const auto* in_lo = static_cast<const char*>(op.in.data);
  // The input lies inside the output (in place): one staging copy of the output serves both.
  const bool inside = in_dev && out_dev && in_lo >= out_lo && in_lo + in_bytes <= out_lo + out_bytes;
  // The copies' stream: the legacy default one for a plain call (ordered after the caller's work
  // on every blocking stream); for a call on a stream, hoop's own, made to wait for the input.
  void* s = nullptr;
  HostStaging& staging_buffers = op.ticket.seq != 0 ? stream_staging_ : device_staging_;
  const MemKind host_kind = staging_buffers.kind();
  if (op.ticket.seq != 0) {
    const int device = QueryMemory(out_dev ? op.out.data : op.in.data).device;
    auto staging = stream_order_.Staging(device < 0 ? 0 : device);
    if (!staging.ok()) return ctx(staging.status());
    s = *staging;
    if (Status w = stream_order_.WaitInput(op.ticket, s); !w.ok()) return ctx(w);
  }
  if (out_dev) {
    auto p = staging_buffers.Get(1, out_bytes);
    if (!p.ok()) return ctx(p.status());
    host.out.data = *p;
    host.out.kind = host_kind;
    if (inside) {  // the output's current contents are (part of) the input
      Status c = CopyMem(*p, host_kind, op.out.data, MemKind::kCuda, out_bytes, s);
      if (!c.ok()) return ctx(c);
      host.in.data = *p + (in_lo - out_lo);
      host.in.kind = host_kind;
    }
  }
  if (in_dev && !inside) {
    auto p = staging_buffers.Get(0, in_bytes);
    if (!p.ok()) return ctx(p.status());
    Status c = CopyMem(*p, host_kind, op.in.data, MemKind::kCuda, in_bytes, s);
    if (!c.ok()) return ctx(c);
    host.in.data = *p;
    host.in.kind = host_kind;
  }
  if (Status c = CudaStreamSync(s); !c.ok()) return ctx(c);
  HOOP_RETURN_IF_ERROR(RunOp(host, seq));
  if (out_dev) {
    Status c = CopyMem(op.out.data, MemKind::kCuda, host.out.data, host_kind, out_bytes, s);
    if (c.ok()) c = CudaStreamSync(s);
    if (!c.ok()) return ctx(c);
  }
  return Status::Ok();
}

}  // namespace hoop
