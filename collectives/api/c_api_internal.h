// What the C API's handle holds, shared by the collectives' C API (c_api.cc) and the tensor
// fusion runtime's (tensorfusion/c_api.cc). Not a public header.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "collectives/api/bootstrap.h"
#include "common/config.h"
#include "common/status.h"
#include "hoop/hoop.h"

#if defined(__SANITIZE_ADDRESS__)
#define HOOP_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOOP_LEAK_CHECKED 1
#endif
#endif
#ifdef HOOP_LEAK_CHECKED
#include <sanitizer/lsan_interface.h>
#endif

// hoop_finalize (hoop_comm_free) releases everything a communicator holds but keeps this small
// struct (a few pointers' worth) as a tombstone (job == null), so a call on a finalized handle is
// an error, not a use after free. A split's or dup's handle shares the job (the store, and the
// connections of the communicator it came from) and holds its own communicator: the job's
// communicator and connections stay until the last communicator using them is freed.
struct hoop_comm {
  std::shared_ptr<hoop::Job> job;
  std::unique_ptr<hoop::Communicator> own;     // a split's or dup's; null: the job's own
  std::shared_ptr<const hoop::Config> config;  // what the job was joined with (fusion settings too)
  int rank = -1;                               // for messages, also once finalized
  // A tensor fusion runtime drives this communicator: direct collectives are refused meanwhile.
  std::atomic<bool> fusion_active{false};
  hoop::Communicator& get() const { return own ? *own : *job->comm; }
  hoop::Communicator* operator->() const { return &get(); }
  bool finalized() const { return job == nullptr; }
};

namespace hoop::capi {

// Records s as the calling thread's last error and maps it to a status code.
hoop_status_t Report(const hoop::Status& s);

// HOOP_SUCCESS if comm can be used by `fn`; else the error (NULL, or finalized), reported.
hoop_status_t CheckLive(hoop_comm_t comm, const char* fn);

// A tombstone is never freed, on purpose; a leak-checking build is told so, and stays strict
// about everything else.
// hoop_finalize and hoop_comm_free (`call`: which, for its errors).
hoop_status_t Finalize(hoop_comm_t comm, const char* call);

inline void KeepAsTombstone(const void* p) {
#ifdef HOOP_LEAK_CHECKED
  __lsan_ignore_object(p);
#else
  (void)p;
#endif
}

// The value of an enum argument as the caller passed it: a C caller may pass any int, and in C++
// an out-of-range value must not be read as the enum (undefined behaviour) before it is checked.
template <class E>
int RawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// How a C call runs: blocking (hoop_allreduce), nonblocking (hoop_iallreduce), or ordered on a
// CUDA stream (hoop_allreduce_stream; never blocking).
struct Mode {
  Mode(bool blocking) : blocking(blocking) {}  // NOLINT: true and false at the call sites
  static Mode OnStream(void* stream) {
    Mode m(false);
    m.stream = stream;
    return m;
  }
  hoop::CallOptions Options() const {
    hoop::CallOptions o{hoop::Algo::kAuto, blocking};
    o.stream = stream;
    return o;
  }
  bool blocking;
  std::optional<void*> stream;
};

// The collectives' C calls, blocking (hoop_allreduce), not (hoop_iallreduce) and on a stream
// (hoop_allreduce_stream), share these: each checks the C arguments and queues the call (on the
// calling thread when blocking and nothing is queued ahead). A bad call is reported (named `fn`)
// and returned; *work is then untouched.
hoop_status_t PostAllreduce(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                            hoop_dtype_t dtype, hoop_op_t op, const hoop_allreduce_opts_t* opts, Mode mode,
                            hoop::Work* work);
hoop_status_t PostBroadcast(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                            hoop_dtype_t dtype, int root, Mode mode, hoop::Work* work);
hoop_status_t PostAllgather(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                            hoop_dtype_t dtype, Mode mode, hoop::Work* work);
hoop_status_t PostReduceScatter(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                                hoop_dtype_t dtype, hoop_op_t op, Mode mode, hoop::Work* work);
hoop_status_t PostBarrier(hoop_comm_t comm, const char* fn, Mode mode, hoop::Work* work);
hoop_status_t PostAllgatherv(hoop_comm_t comm, const char* fn, const void* sendbuf, size_t sendcount, void* recvbuf,
                             const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype, Mode mode,
                             hoop::Work* work);
hoop_status_t PostReduceScatterv(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf,
                                 const size_t* recvcounts, hoop_dtype_t dtype, hoop_op_t op, Mode mode,
                                 hoop::Work* work);
hoop_status_t PostAlltoallv(hoop_comm_t comm, const char* fn, const void* sendbuf, const size_t* sendcounts,
                            const size_t* sdispls, void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                            hoop_dtype_t dtype, Mode mode, hoop::Work* work);
hoop_status_t PostReduce(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                         hoop_dtype_t dtype, hoop_op_t op, int root, Mode mode, hoop::Work* work);
hoop_status_t PostGather(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                         hoop_dtype_t dtype, int root, Mode mode, hoop::Work* work);
hoop_status_t PostScatter(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                          hoop_dtype_t dtype, int root, Mode mode, hoop::Work* work);
hoop_status_t PostAlltoall(hoop_comm_t comm, const char* fn, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                           hoop_dtype_t dtype, Mode mode, hoop::Work* work);
hoop_status_t PostSend(hoop_comm_t comm, const char* fn, const void* buf, size_t count, hoop_dtype_t dtype, int peer,
                       int tag, Mode mode, hoop::Work* work);
hoop_status_t PostRecv(hoop_comm_t comm, const char* fn, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                       std::shared_ptr<hoop::RecvInfo> info, Mode mode, hoop::Work* work);
// The C form of a receive's result.
void CopyInfo(const hoop::RecvInfo& from, hoop_recv_info_t* to);

// Runs f, turning any exception into HOOP_ERR_INTERNAL: none crosses the C API.
template <class F>
hoop_status_t Guard(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Report(hoop::Internal(std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return Report(hoop::Internal("unexpected exception"));
  }
}

}  // namespace hoop::capi
