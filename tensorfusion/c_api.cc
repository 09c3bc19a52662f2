// The tensor fusion runtime's C API (include/hoop/hoop.h, hoop_fusion_*). Handles are numbers
// that map to Runtime handles until hoop_fusion_wait frees them; no C++ type or exception
// crosses the boundary. hoop_fusion_stop releases the runtime and its handles but keeps the
// hoop_fusion struct as a tombstone (rt == null), so a call after the stop is an error, not a
// use after free.
#include <mutex>
#include <unordered_map>

#include "collectives/api/c_api_internal.h"
#include "common/device.h"
#include "common/extent.h"
#include "tensorfusion/runtime.h"

struct hoop_fusion {
  hoop_comm_t comm = nullptr;
  std::unique_ptr<hoop::fusion::Runtime> rt;
  std::mutex mu;
  std::unordered_map<hoop_handle_t, hoop::fusion::Handle> handles;
  hoop_handle_t next = 1;
};

namespace {

using hoop::capi::CheckLive;
using hoop::capi::Guard;
using hoop::capi::RawEnum;
using hoop::capi::Report;
namespace fu = hoop::fusion;

hoop_status_t BadArg(const std::string& what) { return Report(hoop::InvalidArgument(what)); }

// The memory kind is found from the pointer (common/device.h): plain host memory wherever CUDA
// is not built in or has no device, at the cost of one cached check.
hoop::Buffer Buf(const void* p, size_t count, hoop_dtype_t d) {
  const hoop::MemInfo m = hoop::QueryMemory(p);
  return hoop::Buffer{const_cast<void*>(p), count, static_cast<hoop::DType>(d), m.kind,
                      m.kind == hoop::MemKind::kCuda ? m.device : -1};
}

// f can take calls: not NULL, not stopped.
hoop_status_t CheckRunning(hoop_fusion_t f, const char* fn) {
  if (!f) return BadArg(std::string(fn) + ": fusion is NULL");
  if (!f->rt)
    return BadArg("rank " + std::to_string(f->comm->rank) + ": " + fn +
                  ": the tensor fusion runtime was stopped (hoop_fusion_stop)");
  return HOOP_SUCCESS;
}

hoop_status_t CheckCall(hoop_fusion_t f, const char* fn, const char* name, const hoop_dtype_t& dtype,
                        hoop_callback_t cb, hoop_handle_t* handle) {
  if (hoop_status_t bad = CheckRunning(f, fn)) return bad;
  if (!name) return BadArg(std::string(fn) + ": name is NULL");
  if (RawEnum(dtype) < 0 || RawEnum(dtype) > static_cast<int>(hoop::kLastDType))
    return BadArg("rank " + std::to_string(f->comm->rank) + ": " + fn + ": tensor '" + name + "': unknown dtype " +
                  std::to_string(RawEnum(dtype)));
  if (!cb && !handle) return BadArg(std::string(fn) + ": give a handle pointer, a callback, or both");
  return HOOP_SUCCESS;
}

fu::Callback Wrap(hoop_callback_t cb, void* user) {
  if (!cb) return {};
  return [cb, user](const hoop::Status& s) {
    hoop_status_t code = s.ok() ? HOOP_SUCCESS : Report(s);
    cb(code, s.ok() ? "" : s.message().c_str(), user);
  };
}

// A call refused at once is reported here, with no handle and no callback; otherwise the
// callback is attached and the handle handed out.
hoop_status_t Keep(hoop_fusion_t f, fu::Handle h, hoop_callback_t cb, void* user, hoop_handle_t* handle) {
  if (h.Test()) {
    hoop::Status s = h.Wait();
    if (s.code() == hoop::Code::kInvalidArgument || s.code() == hoop::Code::kUnimplemented) return Report(s);
  }
  h.OnComplete(Wrap(cb, user));
  if (handle) {
    std::lock_guard<std::mutex> lock(f->mu);
    *handle = f->next++;
    f->handles.emplace(*handle, std::move(h));
  }
  return HOOP_SUCCESS;
}

fu::Handle Take(hoop_fusion_t f, hoop_handle_t handle, bool erase) {
  std::lock_guard<std::mutex> lock(f->mu);
  auto it = f->handles.find(handle);
  if (it == f->handles.end()) return {};
  fu::Handle h = it->second;
  if (erase) f->handles.erase(it);
  return h;
}

}  // namespace

extern "C" {

hoop_status_t hoop_fusion_start(hoop_comm_t comm, hoop_fusion_t* fusion) {
  return Guard([&] {
    // On any failure *fusion is left as it was: it may hold the runtime already running.
    if (hoop_status_t bad = CheckLive(comm, "hoop_fusion_start")) return bad;
    if (!fusion) return BadArg("hoop_fusion_start: fusion pointer is NULL");
    bool expected = false;
    if (!comm->fusion_active.compare_exchange_strong(expected, true))
      return BadArg("rank " + std::to_string(comm->rank) +
                    ": hoop_fusion_start: a tensor fusion runtime already drives this communicator");
    auto rt = fu::Runtime::Start(comm->get(), fu::FusionOptions::FromConfig(*comm->config));
    if (!rt.ok()) {
      comm->fusion_active = false;
      return Report(rt.status().WithContext("hoop_fusion_start"));
    }
    auto* f = new hoop_fusion;
    f->comm = comm;
    f->rt = std::move(rt).value();
    *fusion = f;
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_fusion_allreduce(hoop_fusion_t f, const char* name, const void* sendbuf, void* recvbuf, size_t count,
                                    hoop_dtype_t dtype, hoop_op_t op, const hoop_tensor_opts_t* opts,
                                    hoop_callback_t cb, void* user, hoop_handle_t* handle) {
  return Guard([&] {
    if (hoop_status_t bad = CheckCall(f, "hoop_fusion_allreduce", name, dtype, cb, handle)) return bad;
    if (RawEnum(op) < HOOP_SUM || RawEnum(op) > HOOP_BXOR)
      return BadArg("rank " + std::to_string(f->comm->rank) + ": hoop_fusion_allreduce: tensor '" + name +
                    "': unknown op " + std::to_string(RawEnum(op)));
    fu::TensorOptions o;
    if (opts) {
      const int c = RawEnum(opts->compression);
      if (c < HOOP_COMPRESSION_DEFAULT || c > HOOP_COMPRESSION_AUTO)
        return BadArg("rank " + std::to_string(f->comm->rank) + ": hoop_fusion_allreduce: tensor '" + name +
                      "': unknown compression " + std::to_string(c));
      if (opts->compression != HOOP_COMPRESSION_DEFAULT)
        o.compression = static_cast<hoop::Compression>(opts->compression);
      if (opts->prescale != 0) o.prescale = opts->prescale;
      if (opts->postscale != 0) o.postscale = opts->postscale;
    }
    return Keep(f,
                f->rt->Allreduce(name, Buf(sendbuf, count, dtype), Buf(recvbuf, count, dtype),
                                 static_cast<hoop::ReduceOp>(op), std::move(o)),
                cb, user, handle);
  });
}

hoop_status_t hoop_fusion_broadcast(hoop_fusion_t f, const char* name, const void* sendbuf, void* recvbuf, size_t count,
                                    hoop_dtype_t dtype, int root, hoop_callback_t cb, void* user,
                                    hoop_handle_t* handle) {
  return Guard([&] {
    if (hoop_status_t bad = CheckCall(f, "hoop_fusion_broadcast", name, dtype, cb, handle)) return bad;
    bool is_root = (*f->comm)->rank() == root;
    return Keep(f,
                f->rt->Broadcast(name, Buf(is_root ? sendbuf : nullptr, is_root ? count : 0, dtype),
                                 Buf(recvbuf, count, dtype), root),
                cb, user, handle);
  });
}

hoop_status_t hoop_fusion_allgather(hoop_fusion_t f, const char* name, const void* sendbuf, void* recvbuf,
                                    size_t sendcount, hoop_dtype_t dtype, hoop_callback_t cb, void* user,
                                    hoop_handle_t* handle) {
  return Guard([&] {
    if (hoop_status_t bad = CheckCall(f, "hoop_fusion_allgather", name, dtype, cb, handle)) return bad;
    const int size = (*f->comm)->size();
    auto total = hoop::CheckedMul(sendcount, static_cast<size_t>(size));
    if (!total)
      return BadArg("rank " + std::to_string((*f->comm)->rank()) + ": hoop_fusion_allgather: tensor '" + name +
                    "': count " + std::to_string(sendcount) + " x " + std::to_string(size) +
                    " ranks is 2^64 elements or more");
    return Keep(f, f->rt->Allgather(name, Buf(sendbuf, sendcount, dtype), Buf(recvbuf, *total, dtype)), cb, user,
                handle);
  });
}

hoop_status_t hoop_fusion_join(hoop_fusion_t f, int* last_rank, hoop_callback_t cb, void* user, hoop_handle_t* handle) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_join")) return bad;
    if (!last_rank) return BadArg("rank " + std::to_string(f->comm->rank) + ": hoop_fusion_join: last_rank is NULL");
    if (!cb && !handle) return BadArg("hoop_fusion_join: give a handle pointer, a callback, or both");
    return Keep(f, f->rt->Join(last_rank), cb, user, handle);
  });
}

hoop_status_t hoop_fusion_joined(hoop_fusion_t f, int* joined) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_joined")) return bad;
    if (!joined) return BadArg("hoop_fusion_joined: joined is NULL");
    *joined = f->rt->SomeJoined() ? 1 : 0;
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_fusion_start_timeline(hoop_fusion_t f, const char* path, int mark_cycles) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_start_timeline")) return bad;
    if (!path) return BadArg("hoop_fusion_start_timeline: path is NULL");
    return Report(f->rt->StartTimeline(path, mark_cycles != 0));
  });
}

hoop_status_t hoop_fusion_stop_timeline(hoop_fusion_t f) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_stop_timeline")) return bad;
    f->rt->StopTimeline();
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_fusion_wait(hoop_fusion_t f, hoop_handle_t handle) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_wait")) return bad;
    fu::Handle h = Take(f, handle, true);
    if (!h.valid()) return BadArg("hoop_fusion_wait: unknown handle " + std::to_string(handle));
    return Report(h.Wait());
  });
}

hoop_status_t hoop_fusion_test(hoop_fusion_t f, hoop_handle_t handle, int* done) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_test")) return bad;
    if (!done) return BadArg("hoop_fusion_test: done is NULL");
    fu::Handle h = Take(f, handle, false);
    if (!h.valid()) return BadArg("hoop_fusion_test: unknown handle " + std::to_string(handle));
    *done = h.Test() ? 1 : 0;
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_fusion_synchronize(hoop_fusion_t f) {
  return Guard([&] {
    if (hoop_status_t bad = CheckRunning(f, "hoop_fusion_synchronize")) return bad;
    return Report(f->rt->Synchronize());
  });
}

hoop_status_t hoop_fusion_stop(hoop_fusion_t f) {
  return Guard([&] {
    if (!f) return BadArg("hoop_fusion_stop: fusion is NULL");
    if (!f->rt)
      return BadArg("rank " + std::to_string(f->comm->rank) +
                    ": hoop_fusion_stop: the tensor fusion runtime was stopped already");
    hoop::Status s = f->rt->Shutdown();
    f->rt.reset();
    {
      std::lock_guard<std::mutex> lock(f->mu);
      f->handles = {};  // releases the table's memory too
    }
    f->comm->fusion_active = false;  // the struct stays, a tombstone (top of this file)
    hoop::capi::KeepAsTombstone(f);
    return Report(s);
  });
}

}  // extern "C"
