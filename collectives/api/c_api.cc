// The C API (include/hoop/hoop.h) over Communicator. No exception and no C++ type crosses it;
// every failure becomes a status code plus a per-thread message. The collectives are here;
// c_init.cc starts and ends a job, c_comms.cc makes sub-communicators, c_requests.cc and
// c_streams.cc hold the nonblocking and stream forms.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "collectives/api/c_api_internal.h"
#include "common/device.h"
#include "common/extent.h"

namespace {
thread_local std::string t_last_error;
}  // namespace

namespace hoop::capi {

hoop_status_t Report(const hoop::Status& s) {
  if (s.ok()) return HOOP_SUCCESS;
  t_last_error = s.message();
  switch (s.code()) {
    case hoop::Code::kInvalidArgument: return HOOP_ERR_INVALID_ARGUMENT;
    case hoop::Code::kUnavailable: return HOOP_ERR_UNAVAILABLE;
    case hoop::Code::kDeadlineExceeded: return HOOP_ERR_TIMEOUT;
    case hoop::Code::kAborted: return HOOP_ERR_ABORTED;
    case hoop::Code::kRevoked: return HOOP_ERR_REVOKED;
    case hoop::Code::kFailedPrecondition: return HOOP_ERR_MISMATCH;
    case hoop::Code::kPermissionDenied: return HOOP_ERR_PERMISSION;
    case hoop::Code::kUnimplemented: return HOOP_ERR_UNIMPLEMENTED;
    default: return HOOP_ERR_INTERNAL;
  }
}

hoop_status_t CheckLive(hoop_comm_t comm, const char* fn) {
  if (!comm) return Report(hoop::InvalidArgument(std::string(fn) + ": comm is NULL"));
  if (comm->finalized())
    return Report(hoop::InvalidArgument("rank " + std::to_string(comm->rank) + ": " + fn +
                                        ": the communicator was finalized (hoop_finalize)"));
  return HOOP_SUCCESS;
}

}  // namespace hoop::capi

namespace {

using hoop::capi::CheckLive;
using hoop::capi::Guard;
using hoop::capi::RawEnum;
using hoop::capi::Report;

hoop_status_t BadArg(const std::string& what) { return Report(hoop::InvalidArgument(what)); }
// A collective may be called on comm: it exists, and no fusion runtime drives it.
hoop_status_t CheckComm(hoop_comm_t comm, const char* fn) {
  if (hoop_status_t bad = CheckLive(comm, fn)) return bad;
  if (comm->fusion_active.load())
    return BadArg(std::string(fn) +
                  ": a tensor fusion runtime drives this communicator; submit through it "
                  "(hoop_fusion_*), or stop it first");
  return HOOP_SUCCESS;
}

// The C enums are the C++ ones' values, cast straight across.
static_assert(HOOP_U8 == static_cast<int>(hoop::DType::kU8) && HOOP_F64 == static_cast<int>(hoop::DType::kF64) &&
              HOOP_I8 == static_cast<int>(hoop::DType::kI8) && HOOP_BOOL == static_cast<int>(hoop::DType::kBool) &&
              HOOP_F8E4M3 == static_cast<int>(hoop::DType::kF8E4M3) &&
              HOOP_F8E5M2 == static_cast<int>(hoop::DType::kF8E5M2) &&
              HOOP_I16 == static_cast<int>(hoop::DType::kI16) && HOOP_U16 == static_cast<int>(hoop::DType::kU16) &&
              HOOP_U32 == static_cast<int>(hoop::DType::kU32) && HOOP_U64 == static_cast<int>(hoop::DType::kU64) &&
              HOOP_U64 == static_cast<int>(hoop::kLastDType));
static_assert(HOOP_PROD == static_cast<int>(hoop::ReduceOp::kProd) &&
              HOOP_BAND == static_cast<int>(hoop::ReduceOp::kBand) &&
              HOOP_BXOR == static_cast<int>(hoop::ReduceOp::kBxor));
bool ValidDType(const hoop_dtype_t& d) { return RawEnum(d) >= 0 && RawEnum(d) <= static_cast<int>(hoop::kLastDType); }
bool ValidOp(const hoop_op_t& o) { return RawEnum(o) >= HOOP_SUM && RawEnum(o) <= HOOP_BXOR; }
std::string Rank(hoop_comm_t comm) { return "rank " + std::to_string((*comm)->rank()) + ": "; }
// An out-of-range dtype (and op, for the calls that reduce), refused naming rank and call.
hoop_status_t CheckDType(hoop_comm_t comm, const char* fn, hoop_dtype_t dtype) {
  if (ValidDType(dtype)) return HOOP_SUCCESS;
  return BadArg(Rank(comm) + fn + ": unknown dtype " + std::to_string(RawEnum(dtype)));
}
hoop_status_t CheckDTypeOp(hoop_comm_t comm, const char* fn, hoop_dtype_t dtype, hoop_op_t op) {
  if (ValidDType(dtype) && ValidOp(op)) return HOOP_SUCCESS;
  return BadArg(Rank(comm) + fn + ": unknown dtype " + std::to_string(RawEnum(dtype)) + " or op " +
                std::to_string(RawEnum(op)));
}

// count x the communicator's size, the element count of allgather's output and reduce-scatter's
// input; refused (naming rank, call and count) where it does not fit in size_t.
hoop_status_t TimesSize(hoop_comm_t comm, const char* fn, size_t count, size_t* out) {
  const int size = (*comm)->size();
  auto n = hoop::CheckedMul(count, static_cast<size_t>(size));
  if (!n)
    return BadArg("rank " + std::to_string((*comm)->rank()) + ": " + fn + ": count " + std::to_string(count) + " x " +
                  std::to_string(size) + " ranks is 2^64 elements or more");
  *out = *n;
  return HOOP_SUCCESS;
}

// The memory kind is found from the pointer (common/device.h): plain host memory wherever CUDA
// is not built in or has no device, at the cost of one cached check.
hoop::Buffer Buf(const void* p, size_t count, hoop_dtype_t d) {
  const hoop::MemInfo m = hoop::QueryMemory(p);
  return hoop::Buffer{const_cast<void*>(p), count, static_cast<hoop::DType>(d), m.kind,
                      m.kind == hoop::MemKind::kCuda ? m.device : -1};
}

// A v-collective's counts and displacements, copied from the caller's arrays (one entry per
// rank; displs NULL: back to back), and the extent they need of their buffer in *extent.
hoop_status_t ReadBlocks(hoop_comm_t comm, const char* fn, const char* what, const size_t* counts, const size_t* displs,
                         bool need_displs, hoop::Blocks* out, size_t* extent) {
  if (!counts) return BadArg(Rank(comm) + fn + ": " + what + "counts is NULL");
  if (need_displs && !displs) return BadArg(Rank(comm) + fn + ": " + what + "displs is NULL");
  const size_t n = static_cast<size_t>((*comm)->size());
  out->counts.assign(counts, counts + n);
  if (displs) {
    out->displs.assign(displs, displs + n);
  } else {
    out->displs.clear();
    size_t at = 0;
    for (size_t c : out->counts) {
      out->displs.push_back(at);
      if (c > SIZE_MAX - at) return BadArg(Rank(comm) + fn + ": " + what + "counts add up to 2^64 elements or more");
      at += c;
    }
  }
  *extent = 0;
  for (size_t r = 0; r < n; ++r) {
    if (out->displs[r] > SIZE_MAX - out->counts[r])
      return BadArg(Rank(comm) + fn + ": " + what + "block " + std::to_string(r) + " ends past 2^64 elements");
    if (out->counts[r]) *extent = std::max(*extent, out->displs[r] + out->counts[r]);
  }
  return HOOP_SUCCESS;
}

}  // namespace

namespace hoop::capi {  // the Post* helpers (c_api_internal.h)

hoop_status_t PostAllreduce(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                            hoop_dtype_t dtype, hoop_op_t op, const hoop_allreduce_opts_t* opts, Mode mode,
                            hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDTypeOp(comm, fn, dtype, op)) return bad;
  hoop::CallOptions o = mode.Options();
  if (opts) {
    const int c = RawEnum(opts->compression);
    if (c < HOOP_COMPRESSION_DEFAULT || c > HOOP_COMPRESSION_AUTO)
      return BadArg(Rank(comm) + fn + ": unknown compression " + std::to_string(c));
    if (opts->compression != HOOP_COMPRESSION_DEFAULT)
      o.compression = static_cast<hoop::Compression>(opts->compression);
    o.residual = opts->residual;
  }
  *work =
      (*comm)->Allreduce(Buf(sendbuf, count, dtype), Buf(recvbuf, count, dtype), static_cast<hoop::ReduceOp>(op), o);
  return HOOP_SUCCESS;
}

hoop_status_t PostBroadcast(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                            hoop_dtype_t dtype, int root, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  const bool is_root = (*comm)->rank() == root;
  *work = (*comm)->Broadcast(Buf(is_root ? sendbuf : nullptr, is_root ? count : 0, dtype), Buf(recvbuf, count, dtype),
                             root, mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostAllgather(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                            hoop_dtype_t dtype, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  size_t total = 0;
  if (hoop_status_t bad = TimesSize(comm, fn, sendcount, &total)) return bad;
  *work = (*comm)->Allgather(Buf(sendbuf, sendcount, dtype), Buf(recvbuf, total, dtype), mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostReduceScatter(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                                hoop_dtype_t dtype, hoop_op_t op, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDTypeOp(comm, fn, dtype, op)) return bad;
  size_t total = 0;
  if (hoop_status_t bad = TimesSize(comm, fn, recvcount, &total)) return bad;
  *work = (*comm)->ReduceScatter(Buf(sendbuf, total, dtype), Buf(recvbuf, recvcount, dtype),
                                 static_cast<hoop::ReduceOp>(op), mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostBarrier(hoop_comm_t comm, const char* fn, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  *work = (*comm)->Barrier(mode.Options());
  return HOOP_SUCCESS;
}

// Rooted calls: the root's other buffer holds size x count elements; others pass none (their
// pointer is ignored and may be NULL). A root out of range still reaches the communicator's
// check, which names it.
hoop_status_t PostReduce(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                         hoop_dtype_t dtype, hoop_op_t op, int root, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDTypeOp(comm, fn, dtype, op)) return bad;
  const bool is_root = (*comm)->rank() == root;
  *work = (*comm)->Reduce(Buf(sendbuf, count, dtype), Buf(is_root ? recvbuf : nullptr, is_root ? count : 0, dtype),
                          static_cast<hoop::ReduceOp>(op), root, mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostGather(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                         hoop_dtype_t dtype, int root, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  size_t total = 0;
  if (hoop_status_t bad = TimesSize(comm, fn, sendcount, &total)) return bad;
  const bool is_root = (*comm)->rank() == root;
  *work = (*comm)->Gather(Buf(sendbuf, sendcount, dtype), Buf(is_root ? recvbuf : nullptr, is_root ? total : 0, dtype),
                          root, mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostScatter(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                          hoop_dtype_t dtype, int root, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  size_t total = 0;
  if (hoop_status_t bad = TimesSize(comm, fn, recvcount, &total)) return bad;
  const bool is_root = (*comm)->rank() == root;
  *work = (*comm)->Scatter(Buf(is_root ? sendbuf : nullptr, is_root ? total : 0, dtype), Buf(recvbuf, recvcount, dtype),
                           root, mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostAlltoall(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                           hoop_dtype_t dtype, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  size_t total = 0;
  if (hoop_status_t bad = TimesSize(comm, fn, count_per_rank, &total)) return bad;
  *work = (*comm)->Alltoall(Buf(sendbuf, total, dtype), Buf(recvbuf, total, dtype), mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostAllgatherv(hoop_comm_t comm, const char* fn, const void* sendbuf, size_t sendcount, void* recvbuf,
                             const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype, Mode mode,
                             hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  hoop::Blocks b;
  size_t extent = 0;
  if (hoop_status_t bad = ReadBlocks(comm, fn, "recv", recvcounts, displs, true, &b, &extent)) return bad;
  *work =
      (*comm)->Allgatherv(Buf(sendbuf, sendcount, dtype), Buf(recvbuf, extent, dtype), std::move(b), mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostReduceScatterv(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf,
                                 const size_t* recvcounts, hoop_dtype_t dtype, hoop_op_t op, Mode mode,
                                 hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDTypeOp(comm, fn, dtype, op)) return bad;
  hoop::Blocks b;
  size_t total = 0;
  if (hoop_status_t bad = ReadBlocks(comm, fn, "recv", recvcounts, nullptr, false, &b, &total)) return bad;
  const size_t mine = b.counts[static_cast<size_t>((*comm)->rank())];
  *work = (*comm)->ReduceScatterv(Buf(sendbuf, total, dtype), Buf(recvbuf, mine, dtype), std::move(b.counts),
                                  static_cast<hoop::ReduceOp>(op), mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostAlltoallv(hoop_comm_t comm, const char* fn, const void* sendbuf, const size_t* sendcounts,
                            const size_t* sdispls, void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                            hoop_dtype_t dtype, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckComm(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  hoop::Blocks send, recv;
  size_t in_extent = 0, out_extent = 0;
  if (hoop_status_t bad = ReadBlocks(comm, fn, "send", sendcounts, sdispls, true, &send, &in_extent)) return bad;
  if (hoop_status_t bad = ReadBlocks(comm, fn, "recv", recvcounts, rdispls, true, &recv, &out_extent)) return bad;
  *work = (*comm)->Alltoallv(Buf(sendbuf, in_extent, dtype), std::move(send), Buf(recvbuf, out_extent, dtype),
                             std::move(recv), mode.Options());
  return HOOP_SUCCESS;
}

// Point-to-point needs no agreement on call order between ranks, so a fusion runtime driving
// the communicator does not stand in its way.
hoop_status_t PostSend(hoop_comm_t comm, const char* fn, const void* buf, size_t count, hoop_dtype_t dtype, int peer,
                       int tag, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckLive(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  *work = (*comm)->Send(Buf(buf, count, dtype), peer, tag, mode.Options());
  return HOOP_SUCCESS;
}

hoop_status_t PostRecv(hoop_comm_t comm, const char* fn, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                       std::shared_ptr<hoop::RecvInfo> info, Mode mode, hoop::Work* work) {
  if (hoop_status_t bad = CheckLive(comm, fn)) return bad;
  if (hoop_status_t bad = CheckDType(comm, fn, dtype)) return bad;
  *work = (*comm)->Recv(Buf(buf, count, dtype), peer, tag, std::move(info), mode.Options());
  return HOOP_SUCCESS;
}

void CopyInfo(const hoop::RecvInfo& from, hoop_recv_info_t* to) {
  if (to) *to = hoop_recv_info_t{from.source, from.tag, from.count};
}

}  // namespace hoop::capi

namespace {
using namespace hoop::capi;  // NOLINT: the Post* helpers above

// A blocking C call `fn`: post, then wait for the result on this thread. A call the
// communicator refused before queueing it is reported under the C function's name.
template <class PostFn>
hoop_status_t Blocking(const char* fn, PostFn&& post) {
  return Guard([&] {
    hoop::Work w;
    if (hoop_status_t bad = post(&w)) return bad;
    if (w.Refused()) return Report(w.Wait().WithContext(fn));
    return Report(w.Wait());
  });
}
}  // namespace

extern "C" {

hoop_status_t hoop_allreduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                             hoop_op_t op) {
  return hoop_allreduce_ex(comm, sendbuf, recvbuf, count, dtype, op, nullptr);
}

hoop_status_t hoop_allreduce_ex(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                                hoop_op_t op, const hoop_allreduce_opts_t* opts) {
  return Blocking("hoop_allreduce", [&](hoop::Work* w) {
    return PostAllreduce(comm, "hoop_allreduce", sendbuf, recvbuf, count, dtype, op, opts, true, w);
  });
}

double hoop_compression_error_factor(hoop_compression_t compression, int nranks) {
  if (RawEnum(compression) != HOOP_COMPRESSION_FP16 && RawEnum(compression) != HOOP_COMPRESSION_BF16) return 0;
  return hoop::CompressionErrorFactor(static_cast<hoop::Compression>(compression), nranks);
}

hoop_status_t hoop_broadcast(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                             int root) {
  return Blocking("hoop_broadcast", [&](hoop::Work* w) {
    return PostBroadcast(comm, "hoop_broadcast", sendbuf, recvbuf, count, dtype, root, true, w);
  });
}

hoop_status_t hoop_allgather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                             hoop_dtype_t dtype) {
  return Blocking("hoop_allgather", [&](hoop::Work* w) {
    return PostAllgather(comm, "hoop_allgather", sendbuf, recvbuf, sendcount, dtype, true, w);
  });
}

hoop_status_t hoop_reduce_scatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                  hoop_dtype_t dtype, hoop_op_t op) {
  return Blocking("hoop_reduce_scatter", [&](hoop::Work* w) {
    return PostReduceScatter(comm, "hoop_reduce_scatter", sendbuf, recvbuf, recvcount, dtype, op, true, w);
  });
}

hoop_status_t hoop_barrier(hoop_comm_t comm) {
  return Blocking("hoop_barrier", [&](hoop::Work* w) { return PostBarrier(comm, "hoop_barrier", true, w); });
}

hoop_status_t hoop_reduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                          hoop_op_t op, int root) {
  return Blocking("hoop_reduce", [&](hoop::Work* w) {
    return PostReduce(comm, "hoop_reduce", sendbuf, recvbuf, count, dtype, op, root, true, w);
  });
}

hoop_status_t hoop_gather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount, hoop_dtype_t dtype,
                          int root) {
  return Blocking("hoop_gather", [&](hoop::Work* w) {
    return PostGather(comm, "hoop_gather", sendbuf, recvbuf, sendcount, dtype, root, true, w);
  });
}

hoop_status_t hoop_scatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount, hoop_dtype_t dtype,
                           int root) {
  return Blocking("hoop_scatter", [&](hoop::Work* w) {
    return PostScatter(comm, "hoop_scatter", sendbuf, recvbuf, recvcount, dtype, root, true, w);
  });
}

hoop_status_t hoop_alltoall(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                            hoop_dtype_t dtype) {
  return Blocking("hoop_alltoall", [&](hoop::Work* w) {
    return PostAlltoall(comm, "hoop_alltoall", sendbuf, recvbuf, count_per_rank, dtype, true, w);
  });
}

hoop_status_t hoop_allgatherv(hoop_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                              const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype) {
  return Blocking("hoop_allgatherv", [&](hoop::Work* w) {
    return PostAllgatherv(comm, "hoop_allgatherv", sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, true, w);
  });
}

hoop_status_t hoop_reduce_scatterv(hoop_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                   hoop_dtype_t dtype, hoop_op_t op) {
  return Blocking("hoop_reduce_scatterv", [&](hoop::Work* w) {
    return PostReduceScatterv(comm, "hoop_reduce_scatterv", sendbuf, recvbuf, recvcounts, dtype, op, true, w);
  });
}

hoop_status_t hoop_alltoallv(hoop_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                             void* recvbuf, const size_t* recvcounts, const size_t* rdispls, hoop_dtype_t dtype) {
  return Blocking("hoop_alltoallv", [&](hoop::Work* w) {
    return PostAlltoallv(comm, "hoop_alltoallv", sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype,
                         true, w);
  });
}

const char* hoop_status_string(hoop_status_t s) {
  switch (RawEnum(s)) {
    case HOOP_SUCCESS: return "success";
    case HOOP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case HOOP_ERR_UNAVAILABLE: return "peer or store unavailable";
    case HOOP_ERR_TIMEOUT: return "timed out";
    case HOOP_ERR_ABORTED: return "aborted after an earlier failure";
    case HOOP_ERR_MISMATCH: return "ranks disagree about the operation";
    case HOOP_ERR_PERMISSION: return "permission denied (job token)";
    case HOOP_ERR_UNIMPLEMENTED: return "not implemented";
    case HOOP_ERR_INTERNAL: return "internal error";
    case HOOP_ERR_REVOKED: return "the communicator was revoked";
  }
  return "unknown status";
}

const char* hoop_last_error(void) { return t_last_error.c_str(); }

// The blocking point-to-point calls run on the caller's thread with no Work (SendNow/RecvNow).
hoop_status_t hoop_send(hoop_comm_t comm, const void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_send")) return bad;
    if (hoop_status_t bad = CheckDType(comm, "hoop_send", dtype)) return bad;
    bool refused = false;
    hoop::Status s = (*comm)->SendNow(Buf(buf, count, dtype), peer, tag, &refused);
    return Report(refused ? s.WithContext("hoop_send") : s);
  });
}

hoop_status_t hoop_recv(hoop_comm_t comm, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                        hoop_recv_info_t* info) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_recv")) return bad;
    if (hoop_status_t bad = CheckDType(comm, "hoop_recv", dtype)) return bad;
    bool refused = false;
    hoop::RecvInfo got;
    hoop::Status s = (*comm)->RecvNow(Buf(buf, count, dtype), peer, tag, &got, &refused);
    if (got.source >= 0) CopyInfo(got, info);
    return Report(refused ? s.WithContext("hoop_recv") : s);
  });
}

}  // extern "C"
