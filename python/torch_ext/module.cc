// hoop._c10d: the torch.distributed backend "hoop" (ProcessGroupHoop, process_group.h) for
// Python. Built against the libtorch it is loaded with; hoop/torch registers it with
// torch.distributed.Backend.register_backend on import. init_world makes a plain hoop
// communicator over a PyTorch store: hoop.init() joins a torchrun job through torchrun's own.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "python/torch_ext/process_group.h"
#include "python/torch_ext/store.h"

namespace py = pybind11;
using hoop::torch_ext::GroupBase;
using hoop::torch_ext::ProcessGroupHoop;

PYBIND11_MODULE(_c10d, m) {
  m.doc() = "hoop's torch.distributed backend (use hoop.torch, which registers it)";
  py::module_::import("torch.distributed");  // the base classes this module's derive from
  py::class_<ProcessGroupHoop, GroupBase, c10::intrusive_ptr<ProcessGroupHoop>>(m, "ProcessGroupHoop")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& host,
                       double timeout_s) {
             return c10::make_intrusive<ProcessGroupHoop>(store, rank, size, host, timeout_s);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("host") = "", py::arg("timeout_s") = 0.0,
           py::call_guard<py::gil_scoped_release>(),
           "Joins the group's ranks through `store` (hoop_init_store); host: the address to advertise; "
           "timeout_s: how long its calls may wait (0: HOOP_TIMEOUT).")
      .def_property("deterministic", &ProcessGroupHoop::deterministic, &ProcessGroupHoop::SetDeterministic,
                    "hoop's deterministic mode on this group (hoop_comm_set_deterministic): every reduction "
                    "gives the bits of the left fold over the ranks in rank order.");
  m.def(
      "init_world",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& host) {
        // The bridge lives in a capsule that hoop's Comm keeps until it is finalized.
        auto* bridge = new hoop::torch_ext::StoreBridge(store);
        py::capsule keep(bridge, [](void* p) { delete static_cast<hoop::torch_ext::StoreBridge*>(p); });
        hoop_store_t cb = bridge->Callbacks();
        hoop_comm_t comm = nullptr;
        hoop_status_t s;
        {
          py::gil_scoped_release nogil;
          s = hoop_init_store(&comm, rank, size, &cb, host.empty() ? nullptr : host.c_str());
        }
        const std::string message = s == HOOP_SUCCESS ? "" : hoop_last_error();
        return py::make_tuple(static_cast<int>(s), message, reinterpret_cast<uintptr_t>(comm), keep);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("host") = "",
      "hoop_init_store over a PyTorch store: (status, message, communicator handle, keep-alive) for "
      "hoop._hoop._adopt, which hoop.init() calls under torchrun.");
  m.def("_stop_completers", &hoop::torch_ext::Completer::StopAll,
        "Finishes the futures every group's thread holds and ends those threads (hoop.torch registers it "
        "with atexit: no thread of hoop's may ask for the GIL once the interpreter finalizes).");
  m.attr("TORCH_VERSION_BUILT") = TORCH_VERSION;
  // Whether calls on CUDA tensors go on PyTorch's streams (stream_work.h): hoop.torch then
  // registers the backend for "cuda" too.
  m.attr("CUDA_STREAMS") = static_cast<bool>(HOOP_TORCH_STREAMS);
}
