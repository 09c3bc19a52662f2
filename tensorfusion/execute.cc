#include "tensorfusion/execute.h"

#include <cstring>

#include "collectives/kernels/wire.h"
#include "tensorfusion/scale.h"

namespace hoop::fusion {

namespace {

using Clock = GroupTimes::Clock;

CallOptions OptionsFor(const TensorParams& p) {
  CallOptions o{Algo::kAuto, true};  // the runtime's thread waits at once: run it right here
  if (p.compression != kDefaultCompression) o.compression = static_cast<Compression>(p.compression);
  return o;
}

Status RunAlone(Communicator& c, const Member& m) {
  const TensorParams& p = *m.params;
  CallOptions o = OptionsFor(p);
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
    case CollKind::kBroadcast:
      return c.Broadcast(m.in, m.out, p.root, o).Wait();
    case CollKind::kAllgather:
      return c.Allgather(m.in, m.out, o).Wait();
    default:
      return Internal("tensor fusion: unexpected collective");
  }
}

}  // namespace

Status RunGroup(Communicator& c, const std::vector<Member>& members, std::vector<char>& fusion, GroupTimes* t) {
  t->start = t->packed = Clock::now();
  if (members.size() == 1) {
    Status s = RunAlone(c, members[0]);
    t->reduced = t->end = Clock::now();
    return s;
  }
  const TensorParams& p = *members[0].params;
  const size_t es = DTypeSize(p.dtype);
  const size_t n = static_cast<size_t>(c.size());
  const size_t me = static_cast<size_t>(c.rank());
  size_t total = 0;  // elements per rank
  for (const Member& m : members) total += m.params->count;
  const size_t blocks = p.kind == CollKind::kAllgather ? n : 1;
  if (fusion.size() < total * es * blocks) fusion.resize(total * es * blocks);
  char* f = fusion.data();
  Buffer whole{f, total * blocks, p.dtype, p.mem};
  CallOptions o = OptionsFor(p);

  // Pack.
  char* mine = f + (p.kind == CollKind::kAllgather ? me * total * es : 0);
  if (p.kind != CollKind::kBroadcast || c.rank() == p.root) {
    size_t off = 0;
    for (const Member& m : members) {
      ScaledCopy(p.dtype, mine + off * es, m.in.data, m.params->count, m.params->prescale);
      off += m.params->count;
    }
  }
  t->packed = Clock::now();

  Status s;
  switch (p.kind) {
    case CollKind::kAllreduce: s = c.Allreduce(whole, whole, p.op, o).Wait(); break;
    case CollKind::kBroadcast: s = c.Broadcast(whole, whole, p.root, o).Wait(); break;
    case CollKind::kAllgather: s = c.Allgather({mine, total, p.dtype, p.mem}, whole, o).Wait(); break;
    default: s = Internal("tensor fusion: unexpected collective");
  }
  t->reduced = Clock::now();
  if (!s.ok()) {
    t->end = t->reduced;
    return s;
  }

  // Unpack.
  size_t off = 0;
  for (const Member& m : members) {
    const size_t count = m.params->count;
    if (count == 0) continue;
    if (p.kind == CollKind::kAllgather) {
      for (size_t r = 0; r < n; ++r)
        std::memcpy(static_cast<char*>(m.out.data) + r * count * es, f + (r * total + off) * es, count * es);
    } else {
      ScaledCopy(p.dtype, m.out.data, f + off * es, count, m.params->postscale);
    }
    off += count;
  }
  t->end = Clock::now();
  return Status::Ok();
}

}  // namespace hoop::fusion
