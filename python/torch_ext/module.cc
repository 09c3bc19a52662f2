// hoop._c10d: the torch.distributed backend "hoop" (ProcessGroupHoop, process_group.h) for
// Python. Built against the libtorch it is loaded with; hoop/torch registers it with
// torch.distributed.Backend.register_backend on import.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "python/torch_ext/process_group.h"

namespace py = pybind11;
using hoop::torch_ext::GroupBase;
using hoop::torch_ext::ProcessGroupHoop;

PYBIND11_MODULE(_c10d, m) {
  m.doc() = "hoop's torch.distributed backend (use hoop.torch, which registers it)";
  py::module_::import("torch.distributed");  // the base classes this module's derive from
  py::class_<ProcessGroupHoop, GroupBase, c10::intrusive_ptr<ProcessGroupHoop>>(m, "ProcessGroupHoop")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& host) {
             return c10::make_intrusive<ProcessGroupHoop>(store, rank, size, host);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("host") = "",
           py::call_guard<py::gil_scoped_release>(),
           "Joins the group's ranks through `store` (hoop_init_store); host: the address to advertise.");
  m.attr("TORCH_VERSION_BUILT") = TORCH_VERSION;
}
