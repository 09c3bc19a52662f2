// The C API's nonblocking calls: hoop_i* post a collective and return a request at once;
// hoop_test, hoop_wait, hoop_wait_all and hoop_request_free complete and free requests
// (c_requests.h says what a request is). Requests run in the order they were posted, after every
// call posted before them on the same communicator, blocking ones included.
#include "collectives/api/c_requests.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "collectives/api/c_api_internal.h"

namespace hoop::capi {

hoop_request_t RequestTable::Add(Work work, int rank, const char* call, std::shared_ptr<RecvInfo> info,
                                 hoop_recv_info_t* user_info) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_++;
  live_.emplace(id, Request{std::move(work), rank, call, id, std::move(info), user_info});
  return reinterpret_cast<hoop_request_t>(static_cast<uintptr_t>(id));
}

std::optional<Request> RequestTable::Find(hoop_request_t r) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(r)));
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

void RequestTable::Remove(hoop_request_t r) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(r)));
}

size_t RequestTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

RequestTable& Requests() {
  static RequestTable* table = new RequestTable;  // never destroyed: requests may be freed during exit
  return *table;
}

}  // namespace hoop::capi

namespace {

using hoop::capi::Guard;
using hoop::capi::Report;
using hoop::capi::Requests;

hoop_status_t BadArg(const std::string& what) { return Report(hoop::InvalidArgument(what)); }

std::string Unknown(const char* fn, hoop_request_t r) {
  return std::string(fn) + ": request " + std::to_string(reinterpret_cast<uintptr_t>(r)) +
         " is not live: it was freed already (hoop_wait, hoop_wait_all and hoop_request_free free it) or never "
         "issued";
}

// A nonblocking C call: post without waiting and hand back a request.
template <class PostFn>
hoop_status_t Nonblocking(hoop_comm_t comm, const char* fn, hoop_request_t* request, PostFn&& post,
                          std::shared_ptr<hoop::RecvInfo> info = nullptr, hoop_recv_info_t* user_info = nullptr) {
  return Guard([&] {
    if (!request) {
      const std::string who = comm && !comm->finalized() ? "rank " + std::to_string(comm->rank) + ": " : "";
      return BadArg(who + fn + ": request pointer is NULL");
    }
    *request = nullptr;
    hoop::Work w;
    if (hoop_status_t bad = post(&w)) return bad;
    if (w.Refused()) return Report(w.Wait().WithContext(fn));  // checked before queueing: nothing ran
    *request = Requests().Add(std::move(w), comm->rank, fn, std::move(info), user_info);
    return HOOP_SUCCESS;
  });
}

// A completed hoop_irecv's result, to where its caller asked for it.
void Deliver(const hoop::capi::Request& r) {
  if (r.info && r.info->source >= 0) hoop::capi::CopyInfo(*r.info, r.user_info);
}

}  // namespace

extern "C" {

hoop_status_t hoop_iallreduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                              hoop_op_t op, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_iallreduce", request, [&](hoop::Work* w) {
    return hoop::capi::PostAllreduce(comm, "hoop_iallreduce", sendbuf, recvbuf, count, dtype, op, nullptr, false, w);
  });
}

hoop_status_t hoop_iallreduce_ex(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                                 hoop_op_t op, const hoop_allreduce_opts_t* opts, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_iallreduce_ex", request, [&](hoop::Work* w) {
    return hoop::capi::PostAllreduce(comm, "hoop_iallreduce_ex", sendbuf, recvbuf, count, dtype, op, opts, false, w);
  });
}

hoop_status_t hoop_ibroadcast(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                              int root, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ibroadcast", request, [&](hoop::Work* w) {
    return hoop::capi::PostBroadcast(comm, "hoop_ibroadcast", sendbuf, recvbuf, count, dtype, root, false, w);
  });
}

hoop_status_t hoop_iallgather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                              hoop_dtype_t dtype, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_iallgather", request, [&](hoop::Work* w) {
    return hoop::capi::PostAllgather(comm, "hoop_iallgather", sendbuf, recvbuf, sendcount, dtype, false, w);
  });
}

hoop_status_t hoop_ireduce_scatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                   hoop_dtype_t dtype, hoop_op_t op, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ireduce_scatter", request, [&](hoop::Work* w) {
    return hoop::capi::PostReduceScatter(comm, "hoop_ireduce_scatter", sendbuf, recvbuf, recvcount, dtype, op, false,
                                         w);
  });
}

hoop_status_t hoop_ibarrier(hoop_comm_t comm, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ibarrier", request,
                     [&](hoop::Work* w) { return hoop::capi::PostBarrier(comm, "hoop_ibarrier", false, w); });
}

hoop_status_t hoop_ireduce(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                           hoop_op_t op, int root, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ireduce", request, [&](hoop::Work* w) {
    return hoop::capi::PostReduce(comm, "hoop_ireduce", sendbuf, recvbuf, count, dtype, op, root, false, w);
  });
}

hoop_status_t hoop_igather(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount, hoop_dtype_t dtype,
                           int root, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_igather", request, [&](hoop::Work* w) {
    return hoop::capi::PostGather(comm, "hoop_igather", sendbuf, recvbuf, sendcount, dtype, root, false, w);
  });
}

hoop_status_t hoop_iscatter(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount, hoop_dtype_t dtype,
                            int root, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_iscatter", request, [&](hoop::Work* w) {
    return hoop::capi::PostScatter(comm, "hoop_iscatter", sendbuf, recvbuf, recvcount, dtype, root, false, w);
  });
}

hoop_status_t hoop_ialltoall(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                             hoop_dtype_t dtype, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ialltoall", request, [&](hoop::Work* w) {
    return hoop::capi::PostAlltoall(comm, "hoop_ialltoall", sendbuf, recvbuf, count_per_rank, dtype, false, w);
  });
}

hoop_status_t hoop_iallgatherv(hoop_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                               const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype,
                               hoop_request_t* request) {
  return Nonblocking(comm, "hoop_iallgatherv", request, [&](hoop::Work* w) {
    return hoop::capi::PostAllgatherv(comm, "hoop_iallgatherv", sendbuf, sendcount, recvbuf, recvcounts, displs, dtype,
                                      false, w);
  });
}

hoop_status_t hoop_ireduce_scatterv(hoop_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                    hoop_dtype_t dtype, hoop_op_t op, hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ireduce_scatterv", request, [&](hoop::Work* w) {
    return hoop::capi::PostReduceScatterv(comm, "hoop_ireduce_scatterv", sendbuf, recvbuf, recvcounts, dtype, op, false,
                                          w);
  });
}

hoop_status_t hoop_ialltoallv(hoop_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                              void* recvbuf, const size_t* recvcounts, const size_t* rdispls, hoop_dtype_t dtype,
                              hoop_request_t* request) {
  return Nonblocking(comm, "hoop_ialltoallv", request, [&](hoop::Work* w) {
    return hoop::capi::PostAlltoallv(comm, "hoop_ialltoallv", sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
                                     rdispls, dtype, false, w);
  });
}

hoop_status_t hoop_test(hoop_request_t request, int* done) {
  return Guard([&] {
    if (!done) return BadArg("hoop_test: done pointer is NULL");
    if (!request) return BadArg("hoop_test: request is NULL");
    auto r = Requests().Find(request);
    if (!r) return BadArg(Unknown("hoop_test", request));
    *done = r->work.Done() ? 1 : 0;
    if (*done) Deliver(*r);
    return HOOP_SUCCESS;
  });
}

namespace {
hoop_status_t WaitOne(hoop_request_t request, const char* fn, bool background) {
  return Guard([&] {
    if (!request) return BadArg(std::string(fn) + ": request is NULL");
    auto r = Requests().Find(request);
    if (!r) return BadArg(Unknown(fn, request));
    hoop::Status s = background ? r->work.WaitInBackground() : r->work.Wait();
    Deliver(*r);
    Requests().Remove(request);
    return Report(s);
  });
}
}  // namespace

hoop_status_t hoop_wait(hoop_request_t request) { return WaitOne(request, "hoop_wait", false); }

hoop_status_t hoop_wait_background(hoop_request_t request) { return WaitOne(request, "hoop_wait_background", true); }

hoop_status_t hoop_wait_all(hoop_request_t* requests, int n) {
  return Guard([&] {
    if (n < 0) return BadArg("hoop_wait_all: n is " + std::to_string(n) + ", negative");
    if (n > 0 && !requests) return BadArg("hoop_wait_all: requests is NULL with n " + std::to_string(n));
    // Every entry is checked before any is waited for: a bad array frees nothing.
    // Linear in n: a set finds repeats (100k requests are an ordinary halo exchange).
    std::vector<hoop::capi::Request> found;
    found.reserve(static_cast<size_t>(n));
    std::unordered_set<uint64_t> seen;
    seen.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      if (!requests[i]) continue;  // a NULL entry is complete already
      auto r = Requests().Find(requests[i]);
      if (!r) return BadArg(Unknown(("hoop_wait_all: requests[" + std::to_string(i) + "]").c_str(), requests[i]));
      if (!seen.insert(r->id).second)
        return BadArg("hoop_wait_all: request " + std::to_string(r->id) + " appears twice (requests[" +
                      std::to_string(i) + "])");
      found.push_back(std::move(*r));
    }
    hoop::Status first;
    for (auto& r : found) {
      hoop::Status s = r.work.Wait();
      Deliver(r);
      if (first.ok() && !s.ok()) first = s;
      Requests().Remove(reinterpret_cast<hoop_request_t>(static_cast<uintptr_t>(r.id)));
    }
    for (int i = 0; i < n; ++i) requests[i] = nullptr;
    return Report(first);
  });
}

hoop_status_t hoop_request_free(hoop_request_t request) {
  return Guard([&] {
    if (!request) return HOOP_SUCCESS;  // as free(NULL)
    auto r = Requests().Find(request);
    if (!r) return BadArg(Unknown("hoop_request_free", request));
    Requests().Remove(request);  // the operation itself goes on; its buffers stay in use until it ends
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_isend(hoop_comm_t comm, const void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                         hoop_request_t* request) {
  return Nonblocking(comm, "hoop_isend", request, [&](hoop::Work* w) {
    return hoop::capi::PostSend(comm, "hoop_isend", buf, count, dtype, peer, tag, false, w);
  });
}

hoop_status_t hoop_irecv(hoop_comm_t comm, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                         hoop_recv_info_t* info, hoop_request_t* request) {
  auto got = info ? std::make_shared<hoop::RecvInfo>() : nullptr;
  return Nonblocking(
      comm, "hoop_irecv", request,
      [&](hoop::Work* w) {
        return hoop::capi::PostRecv(comm, "hoop_irecv", buf, count, dtype, peer, tag, got, false, w);
      },
      got, info);
}

}  // extern "C"
