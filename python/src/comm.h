// The binding's two classes over the C API: Comm (a hoop_comm_t: the collectives and
// point-to-point calls on buffers, blocking or not) and Request (a nonblocking call in flight).
//
// Every call releases the GIL while hoop works, so other Python threads run meanwhile. A
// Request holds the buffers it was given (and its Comm) until it completes; one dropped before
// it completed is waited for first (its buffers must outlive the operation), and a failure it
// then meets is reported as a RuntimeWarning, not lost.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "hoop/hoop.h"
#include "python/src/buffers.h"
#include "python/src/errors.h"

namespace hoop::py {

class Comm;

class Request {
 public:
  Request(std::shared_ptr<Comm> comm, std::string what, std::vector<View> views, pybind11::object result);
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  hoop_request_t* handle() { return &request_; }
  // A receive's: filled in when it completes; wait() then returns (result, (source, tag, count)).
  hoop_recv_info_t* recv_info() {
    is_recv_ = true;
    return &info_;
  }
  // Blocks until done; raises the operation's error; returns the result object (the output
  // buffer the call wrote, or None), and for a receive (source, tag, count) as well.
  pybind11::object Wait();
  bool Test();
  bool done() const { return done_; }

 private:
  std::shared_ptr<Comm> comm_;
  std::string what_;
  std::vector<View> views_;
  pybind11::object result_;
  hoop_request_t request_ = nullptr;
  hoop_recv_info_t info_{};
  bool done_ = false;
  bool is_recv_ = false;
};

class Comm : public std::enable_shared_from_this<Comm> {
 public:
  // keep: what the communicator needs alive until it is finalized (a store it was made over,
  // hoop._c10d.init_world's); its splits and dups hold it too.
  explicit Comm(hoop_comm_t c, pybind11::object keep = pybind11::none()) : comm_(c), keep_(std::move(keep)) {}
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  hoop_comm_t get() const;  // raises if freed
  void Free();
  bool freed() const { return comm_ == nullptr; }
  int Rank() const;
  int Size() const;
  std::string Where(const char* call) const;  // "rank 3: allreduce"
  const pybind11::object& keep() const { return keep_; }

 private:
  hoop_comm_t comm_;
  pybind11::object keep_;  // released after comm_ is finalized (members go after the destructor's body)
};

// The binding of a blocking call or a nonblocking one: `run(Request*)` (null: blocking) makes
// the C API call without the GIL, passing the Request's handle() slot; its failure raises. Returns `result` (blocking)
// or a Request that
// gives it from wait().
template <class Run>
pybind11::object Call(const std::shared_ptr<Comm>& comm, const char* what, bool nonblocking, std::vector<View> views,
                      pybind11::object result, Run run) {
  if (!nonblocking) {
    hoop_status_t s;
    {
      pybind11::gil_scoped_release nogil;
      s = run(nullptr);
    }
    Check(s);
    return result;
  }
  auto req = std::make_unique<Request>(comm, what, std::move(views), std::move(result));
  hoop_status_t s;
  {
    pybind11::gil_scoped_release nogil;
    s = run(req.get());
  }
  Check(s);
  return pybind11::cast(std::move(req));
}

// Adds Comm and Request, and the module functions that make communicators, to m; the
// collectives and point-to-point methods come from RegisterCollectives (collectives.cc).
pybind11::class_<Comm, std::shared_ptr<Comm>> RegisterComm(pybind11::module_& m);
void RegisterCollectives(pybind11::class_<Comm, std::shared_ptr<Comm>>& comm);
// The Fusion class (fusion.cc): hoop_fusion_* on a Comm.
void RegisterFusion(pybind11::module_& m);

}  // namespace hoop::py
