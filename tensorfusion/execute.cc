#include "tensorfusion/execute.h"

#include <cstring>

#include "collectives/kernels/wire.h"
#include "common/device.h"
#include "tensorfusion/scale.h"

namespace hoop::fusion {

CallOptions OptionsFor(const TensorParams& p, const std::atomic<int>* waiters) {
  CallOptions o{Algo::kAuto, true};  // the runtime's thread waits at once: run it right here
  o.waiters = waiters;
  if (p.compression != kDefaultCompression) o.compression = static_cast<Compression>(p.compression);
  return o;
}

// The flight recorder's name for a group's collective: its tensors' names, as many as fit.
std::string FusedName(const std::vector<Member>& members) {
  constexpr size_t kFits = 95;  // what the recorder keeps of a name
  std::string name = members.size() > 1 ? "fused " + std::to_string(members.size()) + ": " : "";
  for (size_t i = 0; i < members.size() && name.size() < kFits; ++i) name += (i ? ", " : "") + *members[i].name;
  return name;
}

Status CallFused(Communicator& c, const std::vector<Member>& members, const Buffer& mine, const Buffer& whole,
                 GroupTimes* t) {
  const TensorParams& p = *members[0].params;
  CallOptions o = OptionsFor(p, members[0].waiters);
  const std::string name = FusedName(members);
  o.trace_name = name;
  Status s;
  switch (p.kind) {
    case CollKind::kAllreduce: s = c.Allreduce(whole, whole, p.op, o).Wait(); break;
    case CollKind::kBroadcast: s = c.Broadcast(whole, whole, p.root, o).Wait(); break;
    case CollKind::kAllgather: s = c.Allgather(mine, whole, o).Wait(); break;
    default: s = Internal("tensor fusion: unexpected collective");
  }
  t->reduced = GroupTimes::Clock::now();
  if (!s.ok()) t->end = t->reduced;
  return s;
}

namespace {

using Clock = GroupTimes::Clock;

Status RunAlone(Communicator& c, const Member& m) {
  const TensorParams& p = *m.params;
  CallOptions o = OptionsFor(p, m.waiters);
  o.trace_name = *m.name;
  switch (p.kind) {
    case CollKind::kAllreduce: {
      Buffer in = m.in;
      if (p.prescale != 1) {
        ScaledCopy(p.dtype, m.out.data, m.in.data, p.count, p.prescale);
        in = m.out;
      }
      HOOP_RETURN_IF_ERROR(c.Allreduce(in, m.out, p.op, o).Wait());
      if (p.postscale != 1) ScaledCopy(p.dtype, m.out.data, m.out.data, p.count, p.postscale);
      return Status::Ok();
    }
    case CollKind::kBroadcast: return c.Broadcast(m.in, m.out, p.root, o).Wait();
    case CollKind::kAllgather: return c.Allgather(m.in, m.out, o).Wait();
    default: return Internal("tensor fusion: unexpected collective");
  }
}

bool OnDevice(const Member& m) { return m.in.kind == MemKind::kCuda || m.out.kind == MemKind::kCuda; }

// Device tensors go through the (host) fusion buffer: copied in, scaled there, copied out. The
// copies of a group are queued on CUDA's legacy default stream and waited for once.
Status Synced(bool any_device) { return any_device ? CudaStreamSync(nullptr) : Status::Ok(); }

// The device every tensor of the group lives on, or -1 where some tensor is host memory or the
// tensors are on different devices.
int OneDevice(const std::vector<Member>& members) {
  int device = -1;
  for (const Member& m : members) {
    if (m.in.kind != MemKind::kCuda || m.out.kind != MemKind::kCuda) return -1;
    const int d = m.out.device, din = m.in.device;
    if (d < 0 || din != d || (device >= 0 && d != device)) return -1;
    device = d;
  }
  return device;
}

}  // namespace

Status RunGroup(Communicator& c, const std::vector<Member>& members, std::vector<char>& fusion,
                DeviceFusionBuffer& device_fusion, GroupTimes* t) {
  t->start = t->packed = Clock::now();
  if (members.size() == 1 && !OnDevice(members[0])) {
    Status s = RunAlone(c, members[0]);
    t->reduced = t->end = Clock::now();
    return s;
  }
  if (const int device = OneDevice(members); device >= 0) return RunGroupOnDevice(c, members, device, device_fusion, t);
  const TensorParams& p = *members[0].params;
  const size_t es = DTypeSize(p.dtype);
  const size_t n = static_cast<size_t>(c.size());
  const size_t me = static_cast<size_t>(c.rank());
  size_t total = 0;  // elements per rank
  for (const Member& m : members) total += m.params->count;
  const size_t blocks = p.kind == CollKind::kAllgather ? n : 1;
  if (fusion.size() < total * es * blocks) fusion.resize(total * es * blocks);
  char* f = fusion.data();
  Buffer whole{f, total * blocks, p.dtype, MemKind::kHost};
  bool any_device = false;
  for (const Member& m : members) any_device |= OnDevice(m);

  // Pack.
  char* mine = f + (p.kind == CollKind::kAllgather ? me * total * es : 0);
  if (p.kind != CollKind::kBroadcast || c.rank() == p.root) {
    size_t off = 0;
    for (const Member& m : members) {
      const size_t bytes = m.params->count * es;
      if (m.in.kind == MemKind::kCuda)
        HOOP_RETURN_IF_ERROR(CopyMem(mine + off * es, MemKind::kHost, m.in.data, MemKind::kCuda, bytes, nullptr));
      else
        ScaledCopy(p.dtype, mine + off * es, m.in.data, m.params->count, m.params->prescale);
      off += m.params->count;
    }
    HOOP_RETURN_IF_ERROR(Synced(any_device));
    off = 0;
    for (const Member& m : members) {  // device tensors are scaled once in the buffer
      if (m.in.kind == MemKind::kCuda && m.params->prescale != 1)
        ScaledCopy(p.dtype, mine + off * es, mine + off * es, m.params->count, m.params->prescale);
      off += m.params->count;
    }
  }
  t->packed = Clock::now();

  HOOP_RETURN_IF_ERROR(CallFused(c, members, {mine, total, p.dtype, MemKind::kHost}, whole, t));

  // Unpack.
  size_t off = 0;
  for (const Member& m : members) {
    const size_t count = m.params->count;
    if (count == 0) continue;
    if (p.kind == CollKind::kAllgather) {
      for (size_t r = 0; r < n; ++r)
        HOOP_RETURN_IF_ERROR(CopyMem(static_cast<char*>(m.out.data) + r * count * es, m.out.kind,
                                     f + (r * total + off) * es, MemKind::kHost, count * es, nullptr));
    } else if (m.out.kind == MemKind::kCuda) {
      if (m.params->postscale != 1) ScaledCopy(p.dtype, f + off * es, f + off * es, count, m.params->postscale);
      HOOP_RETURN_IF_ERROR(CopyMem(m.out.data, MemKind::kCuda, f + off * es, MemKind::kHost, count * es, nullptr));
    } else {
      ScaledCopy(p.dtype, m.out.data, f + off * es, count, m.params->postscale);
    }
    off += count;
  }
  HOOP_RETURN_IF_ERROR(Synced(any_device));
  t->end = Clock::now();
  return Status::Ok();
}

}  // namespace hoop::fusion
