// hoop._hoop.Fusion: the tensor fusion runtime of the C API (hoop_fusion_*) for the layers that
// submit tensors by address (hoop.torch's Horovod-style API passes a tensor's data_ptr(), so
// gradients are reduced in their own memory). The caller keeps that memory alive, and does not
// touch it, until the handle completes (wait or test); handles are the C API's.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "python/src/comm.h"
#include "python/src/errors.h"

namespace hoop::py {
namespace {

namespace pyb = pybind11;

class Fusion {
 public:
  explicit Fusion(std::shared_ptr<Comm> comm) : comm_(std::move(comm)) {
    hoop_comm_t c = comm_->get();
    hoop_status_t s;
    {
      pyb::gil_scoped_release nogil;
      s = hoop_fusion_start(c, &fusion_);
    }
    Check(s);
  }
  ~Fusion() {
    if (!fusion_) return;
    pyb::gil_scoped_release nogil;
    hoop_fusion_stop(fusion_);
  }
  hoop_fusion_t get() const {
    if (!fusion_) Invalid("hoop: the fusion runtime was stopped");
    return fusion_;
  }
  void Stop() {
    if (!fusion_) return;
    hoop_status_t s;
    {
      pyb::gil_scoped_release nogil;
      s = hoop_fusion_stop(fusion_);
    }
    fusion_ = nullptr;
    Check(s);
  }

 private:
  std::shared_ptr<Comm> comm_;  // outlives the runtime
  hoop_fusion_t fusion_ = nullptr;
};

void* Addr(uintptr_t a) { return reinterpret_cast<void*>(a); }

// Runs a C call that blocks (a wait, a synchronize) without the GIL, and raises its error; the
// message is read on this thread before the GIL is taken back.
template <class Call>
void Blocking(Call call) {
  hoop_status_t s;
  std::string message;
  {
    pyb::gil_scoped_release nogil;
    s = call();
    if (s != HOOP_SUCCESS) message = hoop_last_error();
  }
  if (s != HOOP_SUCCESS) Raise(s, message);
}

}  // namespace

void RegisterFusion(pyb::module_& m) {
  pyb::class_<Fusion, std::shared_ptr<Fusion>>(m, "Fusion",
                                               "The tensor fusion runtime on a communicator (hoop_fusion_start); "
                                               "tensors by address, names negotiated across ranks.")
      .def(pyb::init<std::shared_ptr<Comm>>(), pyb::arg("comm"))
      .def(
          "allreduce",
          [](const Fusion& f, const std::string& name, uintptr_t send, uintptr_t recv, size_t count, int dtype, int op,
             int compression, double prescale, double postscale) {
            hoop_tensor_opts_t opts{static_cast<hoop_compression_t>(compression), prescale, postscale};
            hoop_handle_t h = 0;
            Check(hoop_fusion_allreduce(f.get(), name.c_str(), Addr(send), Addr(recv), count,
                                        static_cast<hoop_dtype_t>(dtype), static_cast<hoop_op_t>(op), &opts, nullptr,
                                        nullptr, &h));
            return h;
          },
          pyb::arg("name"), pyb::arg("send"), pyb::arg("recv"), pyb::arg("count"), pyb::arg("dtype"),
          pyb::arg("op") = static_cast<int>(HOOP_SUM),
          pyb::arg("compression") = static_cast<int>(HOOP_COMPRESSION_DEFAULT), pyb::arg("prescale") = 1.0,
          pyb::arg("postscale") = 1.0)
      .def(
          "broadcast",
          [](const Fusion& f, const std::string& name, uintptr_t send, uintptr_t recv, size_t count, int dtype,
             int root) {
            hoop_handle_t h = 0;
            Check(hoop_fusion_broadcast(f.get(), name.c_str(), Addr(send), Addr(recv), count,
                                        static_cast<hoop_dtype_t>(dtype), root, nullptr, nullptr, &h));
            return h;
          },
          pyb::arg("name"), pyb::arg("send"), pyb::arg("recv"), pyb::arg("count"), pyb::arg("dtype"), pyb::arg("root"))
      .def(
          "allgather",
          [](const Fusion& f, const std::string& name, uintptr_t send, uintptr_t recv, size_t count, int dtype) {
            hoop_handle_t h = 0;
            Check(hoop_fusion_allgather(f.get(), name.c_str(), Addr(send), Addr(recv), count,
                                        static_cast<hoop_dtype_t>(dtype), nullptr, nullptr, &h));
            return h;
          },
          pyb::arg("name"), pyb::arg("send"), pyb::arg("recv"), pyb::arg("count"), pyb::arg("dtype"))
      .def(
          "wait",
          [](const Fusion& f, hoop_handle_t h) {
            hoop_fusion_t fu = f.get();
            Blocking([&] { return hoop_fusion_wait(fu, h); });
          },
          "Blocks until the tensor completes; raises its error; frees the handle.")
      .def(
          "test",
          [](const Fusion& f, hoop_handle_t h) {
            int done = 0;
            Check(hoop_fusion_test(f.get(), h, &done));
            return done != 0;
          },
          "Whether the tensor completed (wait() then returns at once).")
      .def(
          "synchronize",
          [](const Fusion& f) {
            hoop_fusion_t fu = f.get();
            Blocking([&] { return hoop_fusion_synchronize(fu); });
          },
          "Waits for every tensor submitted before the call.")
      .def(
          "join",
          [](const Fusion& f) {
            hoop_fusion_t fu = f.get();
            int last = -1;
            hoop_handle_t h = 0;
            Check(hoop_fusion_join(fu, &last, nullptr, nullptr, &h));
            Blocking([&] { return hoop_fusion_wait(fu, h); });  // `last` is set before the handle completes
            return last;
          },
          "Horovod's join (hoop_fusion_join): stands in for this rank in the others' allreduces until "
          "every rank has joined; returns the rank that joined last.")
      .def_property_readonly(
          "joined",
          [](const Fusion& f) {
            int joined = 0;
            Check(hoop_fusion_joined(f.get(), &joined));
            return joined != 0;
          },
          "Whether some rank has joined and not every rank has yet (hoop_fusion_joined).")
      .def(
          "start_timeline",
          [](const Fusion& f, const std::string& path, bool mark_cycles) {
            Check(hoop_fusion_start_timeline(f.get(), path.c_str(), mark_cycles ? 1 : 0));
          },
          pyb::arg("path"), pyb::arg("mark_cycles") = false,
          "Rank 0 writes the timeline to path from now on (hoop_fusion_start_timeline).")
      .def(
          "stop_timeline", [](const Fusion& f) { Check(hoop_fusion_stop_timeline(f.get())); },
          "Ends the timeline, its file complete (hoop_fusion_stop_timeline).")
      .def("stop", &Fusion::Stop, "Stops the runtime on every rank (call it on every rank).");
}

}  // namespace hoop::py
