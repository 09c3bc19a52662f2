// RunGroupOnDevice and DeviceFusionBuffer (execute.h): a fusion group whose tensors all live on
// one device, packed into a fusion buffer on that device and unpacked from it by one batched
// copy kernel each (kernels/device_copy.h), scale factors applied in the kernel. Everything is
// queued on CUDA's legacy default stream (after the caller's work on any blocking stream, as the
// plain calls' staging is), and waited for once at the end.
#include <algorithm>

#include "collectives/kernels/device_copy.h"
#include "common/device.h"
#include "tensorfusion/execute.h"

namespace hoop::fusion {

DeviceFusionBuffer::~DeviceFusionBuffer() {
  CudaFree(p_, MemKind::kCuda);
  for (char* p : retired_) CudaFree(p, MemKind::kCuda);
}

StatusOr<char*> DeviceFusionBuffer::Get(int device, size_t bytes) {
  if (p_ != nullptr && device_ == device && bytes_ >= bytes) return p_;
  const size_t want = device_ == device ? std::max(bytes, 2 * bytes_) : bytes;
  HOOP_ASSIGN_OR_RETURN(void* p, CudaAlloc(device, want));
  if (p_ != nullptr) retired_.push_back(p_);
  p_ = static_cast<char*>(p);
  bytes_ = want;
  device_ = device;
  return p_;
}

Status RunGroupOnDevice(Communicator& c, const std::vector<Member>& members, int device, DeviceFusionBuffer& buffer,
                        GroupTimes* t) {
  using Clock = GroupTimes::Clock;
  const TensorParams& p = *members[0].params;
  const size_t es = DTypeSize(p.dtype);
  const size_t n = static_cast<size_t>(c.size());
  const size_t me = static_cast<size_t>(c.rank());
  const bool gather = p.kind == CollKind::kAllgather;
  size_t total = 0;  // elements per rank
  for (const Member& m : members) total += m.params->count;
  const size_t blocks = gather ? n : 1;
  const auto ctx = [&](const Status& s) {
    return s.WithContext("rank " + std::to_string(c.rank()) + ": tensor fusion on CUDA device " +
                         std::to_string(device));
  };
  auto buf = buffer.Get(device, std::max<size_t>(total * es * blocks, 1));
  if (!buf.ok()) return ctx(buf.status());
  char* f = *buf;
  char* mine = f + (gather ? me * total * es : 0);

  std::vector<DeviceCopyItem> items;
  if (p.kind != CollKind::kBroadcast || c.rank() == p.root) {
    size_t off = 0;
    for (const Member& m : members) {
      items.push_back({mine + off * es, m.in.data, m.params->count, m.params->prescale});
      off += m.params->count;
    }
    if (Status s = DeviceBatchedScaledCopy(p.dtype, items.data(), items.size(), nullptr); !s.ok()) return ctx(s);
  }
  t->packed = Clock::now();

  const Buffer whole{f, total * blocks, p.dtype, MemKind::kCuda};
  HOOP_RETURN_IF_ERROR(CallFused(c, members, {mine, total, p.dtype, MemKind::kCuda}, whole, t));

  items.clear();
  size_t off = 0;
  for (const Member& m : members) {
    const size_t count = m.params->count;
    if (gather) {
      for (size_t r = 0; r < n; ++r)
        items.push_back({static_cast<char*>(m.out.data) + r * count * es, f + (r * total + off) * es, count, 1});
    } else {
      items.push_back({m.out.data, f + off * es, count, m.params->postscale});
    }
    off += count;
  }
  if (Status u = DeviceBatchedScaledCopy(p.dtype, items.data(), items.size(), nullptr); !u.ok()) return ctx(u);
  if (Status u = CudaStreamSync(nullptr); !u.ok()) return ctx(u);
  t->end = Clock::now();
  return Status::Ok();
}

}  // namespace hoop::fusion
