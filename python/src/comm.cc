#include "python/src/comm.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace hoop::py {

namespace pyb = pybind11;

// ---- Request ----

Request::Request(std::shared_ptr<Comm> comm, std::string what, std::vector<View> views, pyb::object result)
    : comm_(std::move(comm)), what_(std::move(what)), views_(std::move(views)), result_(std::move(result)) {}

Request::~Request() {
  if (!request_ || done_) return;
  // Dropped in flight: the buffers it holds must outlive the operation.
  hoop_status_t s;
  std::string message;
  {
    pyb::gil_scoped_release nogil;
    s = hoop_wait(request_);
    if (s != HOOP_SUCCESS) message = hoop_last_error();
  }
  request_ = nullptr;
  if (s != HOOP_SUCCESS) {
    std::string text = "hoop: a " + what_ + " request was dropped before it completed, and failed: " + message;
    if (PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1) != 0) PyErr_WriteUnraisable(nullptr);
  }
}

pyb::object Request::Wait() {
  if (!done_) {
    if (!request_) Invalid(what_ + ": the request was never started");
    hoop_status_t s;
    {
      pyb::gil_scoped_release nogil;
      s = hoop_wait(request_);  // frees it, done or failed
    }
    request_ = nullptr;
    done_ = true;
    if (s != HOOP_SUCCESS) {
      std::string message = hoop_last_error();
      views_.clear();
      result_ = pyb::none();
      Raise(s, message);
    }
    views_.clear();
  }
  if (is_recv_) return pyb::make_tuple(result_, pyb::make_tuple(info_.source, info_.tag, info_.count));
  return result_;
}

bool Request::Test() {
  if (done_ || !request_) return true;
  int flag = 0;
  Check(hoop_test(request_, &flag));
  return flag != 0;
}

// ---- Comm ----

Comm::~Comm() {
  if (!comm_) return;
  pyb::gil_scoped_release nogil;
  hoop_finalize(comm_);
}

hoop_comm_t Comm::get() const {
  if (!comm_) Raise(HOOP_ERR_INVALID_ARGUMENT, "hoop: the communicator was freed");
  return comm_;
}

void Comm::Free() {
  if (!comm_) return;
  hoop_status_t s;
  {
    pyb::gil_scoped_release nogil;
    s = hoop_finalize(comm_);
  }
  comm_ = nullptr;
  Check(s);
}

int Comm::Rank() const {
  int r = 0;
  Check(hoop_rank(get(), &r));
  return r;
}

int Comm::Size() const {
  int n = 0;
  Check(hoop_size(get(), &n));
  return n;
}

std::string Comm::Where(const char* call) const { return "rank " + std::to_string(Rank()) + ": " + call; }

namespace {

std::shared_ptr<Comm> Made(hoop_comm_t c, hoop_status_t s, pyb::object keep = pyb::none()) {
  Check(s);
  return c ? std::make_shared<Comm>(c, std::move(keep)) : nullptr;
}

// The flight recorder's JSON (hoop_comm_trace): sized, then filled; operations recorded between
// the two make it longer, so it is asked again until it fits.
std::string Trace(const Comm& c) {
  for (int attempt = 0;; ++attempt) {
    size_t needed = 0;
    hoop_comm_trace(c.get(), nullptr, 0, &needed);
    std::string buf(needed + 4096, '\0');
    const hoop_status_t s = hoop_comm_trace(c.get(), buf.data(), buf.size(), &needed);
    if (s == HOOP_SUCCESS || attempt == 8) {
      Check(s);
      buf.resize(needed > 0 ? needed - 1 : 0);
      return buf;
    }
  }
}

std::string Locality(const Comm& c) {
  size_t needed = 0;
  hoop_locality(c.get(), nullptr, 0, &needed);
  std::string buf(needed, '\0');
  Check(hoop_locality(c.get(), buf.data(), buf.size(), &needed));
  buf.resize(needed > 0 ? needed - 1 : 0);
  return buf;
}

}  // namespace

pyb::class_<Comm, std::shared_ptr<Comm>> RegisterComm(pyb::module_& m) {
  pyb::class_<Request>(m, "Request", "A nonblocking call in flight (hoop_i* in the C API).")
      .def("wait", &Request::Wait,
           "Blocks until the call completes; raises its error; returns its output (a receive: "
           "(output, (source, tag, count))).")
      .def("test", &Request::Test, "Whether the call has completed (wait() then returns at once).")
      .def_property_readonly("done", &Request::done, "Whether wait() has returned.");

  auto comm = pyb::class_<Comm, std::shared_ptr<Comm>>(m, "Comm", "A hoop communicator (hoop_comm_t).");
  comm.def_property_readonly("rank", &Comm::Rank)
      .def_property_readonly("size", &Comm::Size)
      .def_property_readonly("local_rank",
                             [](const Comm& c) {
                               int r = 0;
                               Check(hoop_local_rank(c.get(), &r));
                               return r;
                             })
      .def_property_readonly("local_size",
                             [](const Comm& c) {
                               int n = 0;
                               Check(hoop_local_size(c.get(), &n));
                               return n;
                             })
      .def_property_readonly("local_device",
                             [](const Comm& c) {
                               int d = 0;
                               Check(hoop_local_device(c.get(), &d));
                               return d;
                             })
      .def_property(
          "deterministic",
          [](const Comm& c) {
            int on = 0;
            Check(hoop_comm_deterministic(c.get(), &on));
            return on != 0;
          },
          [](const Comm& c, bool on) { Check(hoop_comm_set_deterministic(c.get(), on ? 1 : 0)); },
          "Deterministic mode (hoop_comm_set_deterministic): True, every reduction gives each element "
          "the bits of the left fold over the ranks in rank order, whatever the algorithm, chunking, "
          "fusion, transport or placement. Set the same on every rank; splits inherit it. "
          "HOOP_DETERMINISTIC=1 turns it on for every communicator.")
      .def_property_readonly("freed", &Comm::freed)
      .def("locality", &Locality, "This rank's place on its host as JSON (hoop_locality).")
      .def("trace", &Trace,
           "The flight recorder (hoop_comm_trace): this rank's last HOOP_TRACE_OPS operations as JSON, each "
           "with its kind, dtype, count, root or peer, algorithm, state (queued, started, done, failed) and times.")
      .def(
          "dump_trace",
          [](const Comm& c, std::optional<std::string> dir) {
            Check(hoop_comm_dump_trace(c.get(), dir ? dir->c_str() : nullptr));
          },
          pyb::arg("dir") = pyb::none(),
          "Writes the flight recorder's JSON to DIR/hoop-trace.<comm>.<rank>.json (hoop_comm_dump_trace; "
          "dir None: HOOP_TRACE_DIR).")
      .def("free", &Comm::Free, "Releases the communicator (hoop_comm_free); later calls on it raise.")
      .def(
          "split",
          [](const Comm& c, int color, int key) {
            hoop_comm_t out = nullptr;
            hoop_status_t s;
            hoop_comm_t self = c.get();
            {
              pyb::gil_scoped_release nogil;
              s = hoop_comm_split(self, color, key, &out);
            }
            return Made(out, s, c.keep());
          },
          pyb::arg("color"), pyb::arg("key") = 0,
          "MPI_Comm_split: a collective; ranks passing one color (>= 0) form one communicator, "
          "ranked by key; a negative color gives None.")
      .def(
          "dup",
          [](const Comm& c) {
            hoop_comm_t out = nullptr;
            hoop_status_t s;
            hoop_comm_t self = c.get();
            {
              pyb::gil_scoped_release nogil;
              s = hoop_comm_dup(self, &out);
            }
            return Made(out, s, c.keep());
          },
          "A communicator with the same ranks (a collective).")
      .def(
          "revoke",
          [](const Comm& c, const std::string& reason) {
            hoop_comm_t self = c.get();
            hoop_status_t s;
            {
              pyb::gil_scoped_release nogil;
              s = hoop_comm_revoke(self, reason.c_str());
            }
            Check(s);
          },
          pyb::arg("reason") = "",
          "Revokes the communicator from this rank alone (hoop_comm_revoke): every call on it, and on "
          "those sharing its connections, still running or made later on any rank raises RevokedError "
          "naming this rank and the reason.")
      .def(
          "shrink",
          [](const Comm& c, std::vector<int> excluded) {
            hoop_comm_t out = nullptr;
            hoop_status_t s;
            hoop_comm_t self = c.get();
            {
              pyb::gil_scoped_release nogil;
              s = hoop_comm_shrink_excluding(self, excluded.data(), static_cast<int>(excluded.size()), &out);
            }
            return Made(out, s, c.keep());
          },
          pyb::arg("excluded") = std::vector<int>(),
          "The survivors' communicator (hoop_comm_shrink; MPI ULFM's MPIX_Comm_shrink): every live rank "
          "calls it after a lost rank or a revocation; they agree on one membership, even if another "
          "rank dies meanwhile, and are renumbered in their order here. This one stays as it was. "
          "excluded: ranks left out as well, alive or not (they do not call it).")
      .def(
          "grow",
          [](const Comm& c, int count) {
            hoop_comm_t out = nullptr;
            hoop_status_t s;
            hoop_comm_t self = c.get();
            {
              pyb::gil_scoped_release nogil;
              s = hoop_comm_grow(self, count, &out);
            }
            return Made(out, s, c.keep());
          },
          pyb::arg("count"),
          "This communicator and `count` newcomers, each calling hoop.join() (hoop_comm_grow; NCCL's "
          "ncclCommGrow): every rank calls it; the ranks keep their numbers, the newcomers follow.")
      .def(
          "failed_ranks",
          [](const Comm& c) {
            hoop_comm_t self = c.get();
            int count = 0;
            Check(hoop_comm_failed_ranks(self, nullptr, 0, &count));
            std::vector<int> ranks(static_cast<size_t>(count) + 8);
            Check(hoop_comm_failed_ranks(self, ranks.data(), static_cast<int>(ranks.size()), &count));
            ranks.resize(std::min(ranks.size(), static_cast<size_t>(count)));
            return ranks;
          },
          "The ranks of this communicator this rank knows to have failed, ascending "
          "(hoop_comm_failed_ranks): peers its connections lost, processes on this host that exited, "
          "ranks hooprun saw exit.")
      .def(
          "newcomers",
          [](const Comm& c) {
            hoop_comm_t self = c.get();
            int count = 0;
            hoop_status_t s;
            {
              pyb::gil_scoped_release nogil;
              s = hoop_comm_newcomers(self, &count);
            }
            Check(s);
            return count;
          },
          "How many new processes wait at the job to be admitted (hoop_comm_newcomers): those that "
          "called hoop.join() (or hoop.init() with HOOP_JOIN=1, as elastic hooprun starts them) and no "
          "grow took yet. A collective: every rank gets rank 0's count, ready for Comm.grow(count).");

  m.def(
      "init_from_env",
      [] {
        hoop_comm_t c = nullptr;
        hoop_status_t s;
        {
          pyb::gil_scoped_release nogil;
          s = hoop_init_from_env(&c);
        }
        return Made(c, s);
      },
      "Joins the job the environment describes (hooprun, mpirun, Slurm, torchrun).");
  m.def(
      "init_join",
      [] {
        hoop_comm_t c = nullptr;
        hoop_status_t s;
        {
          pyb::gil_scoped_release nogil;
          s = hoop_init_join(&c);
        }
        return Made(c, s);
      },
      "A new process joins the running job the environment's HOOP_STORE names, admitted by the "
      "next Comm.grow of its ranks (hoop_init_join).");
  m.def(
      "init",
      [](int rank, int size, const std::string& store, std::optional<std::string> token) {
        hoop_comm_t c = nullptr;
        hoop_status_t s;
        {
          pyb::gil_scoped_release nogil;
          s = hoop_init(&c, rank, size, store.c_str(), token ? token->c_str() : nullptr);
        }
        return Made(c, s);
      },
      pyb::arg("rank"), pyb::arg("size"), pyb::arg("store"), pyb::arg("token") = pyb::none(),
      "Joins a job by explicit rank, size and store (tcp://HOST:PORT or file:///DIR).");
  m.def(
      "_adopt",
      [](int status, const std::string& message, uintptr_t handle, pyb::object keep) {
        if (status != HOOP_SUCCESS) Raise(static_cast<hoop_status_t>(status), message);
        return Made(reinterpret_cast<hoop_comm_t>(handle), HOOP_SUCCESS, std::move(keep));
      },
      pyb::arg("status"), pyb::arg("message"), pyb::arg("handle"), pyb::arg("keep"),
      "Internal: a Comm for a communicator made by hoop._c10d.init_world over PyTorch's store "
      "(its status, message, handle and the object keeping the store alive), or its error raised.");
  return comm;
}

}  // namespace hoop::py
