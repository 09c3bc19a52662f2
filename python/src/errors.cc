#include "python/src/errors.h"

#include <Python.h>

#include <array>

namespace hoop::py {
namespace {

namespace pyb = pybind11;

struct ErrorClass {
  hoop_status_t status;
  const char* name;
  PyObject* builtin;  // the built-in base besides HoopError, or null
  const char* doc;
};

// Filled by RegisterErrors: the interpreter keeps the classes alive through the module.
PyObject* base_class = nullptr;
std::array<PyObject*, 10> classes{};

}  // namespace

void RegisterErrors(pyb::module_& m) {
  base_class = PyErr_NewExceptionWithDoc("hoop.HoopError",
                                         "A hoop call failed; .code is hoop's status name, the message names the "
                                         "rank, the call and the cause.",
                                         PyExc_RuntimeError, nullptr);
  if (!base_class) throw pyb::error_already_set();
  m.add_object("HoopError", pyb::handle(base_class));
  const ErrorClass all[] = {
      {HOOP_ERR_INVALID_ARGUMENT, "InvalidArgumentError", PyExc_ValueError, "A bad call: refused, nothing sent."},
      {HOOP_ERR_UNAVAILABLE, "UnavailableError", PyExc_ConnectionError, "A peer or the store went away."},
      {HOOP_ERR_TIMEOUT, "TimeoutError", PyExc_TimeoutError, "HOOP_TIMEOUT passed."},
      {HOOP_ERR_ABORTED, "AbortedError", nullptr, "The communicator failed earlier; free it."},
      {HOOP_ERR_MISMATCH, "MismatchError", nullptr, "Ranks called different collectives, counts or dtypes."},
      {HOOP_ERR_PERMISSION, "PermissionError", PyExc_PermissionError, "Wrong job token."},
      {HOOP_ERR_UNIMPLEMENTED, "UnimplementedError", PyExc_NotImplementedError, "Not supported."},
      {HOOP_ERR_INTERNAL, "InternalError", nullptr, "A bug in hoop: please report it."},
      {HOOP_ERR_REVOKED, "RevokedError", nullptr,
       "A rank revoked the communicator (Comm.revoke): every call on it fails; the message names who and why."},
  };
  for (const ErrorClass& e : all) {
    PyObject* bases = e.builtin ? PyTuple_Pack(2, base_class, e.builtin) : PyTuple_Pack(1, base_class);
    if (!bases) throw pyb::error_already_set();
    std::string qualified = std::string("hoop.") + e.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), e.doc, bases, nullptr);
    Py_DECREF(bases);
    if (!cls) throw pyb::error_already_set();
    pyb::handle(cls).attr("code") = hoop_status_string(e.status);
    classes[static_cast<size_t>(e.status)] = cls;
    m.add_object(e.name, pyb::handle(cls));
  }
}

void Raise(hoop_status_t status, const std::string& message) {
  const auto i = static_cast<size_t>(status);
  PyObject* cls = i < classes.size() && classes[i] ? classes[i] : base_class;
  PyErr_SetString(cls, message.empty() ? hoop_status_string(status) : message.c_str());
  throw pyb::error_already_set();
}

void Check(hoop_status_t status) {
  if (status != HOOP_SUCCESS) Raise(status, hoop_last_error());
}

void Invalid(const std::string& message) { Raise(HOOP_ERR_INVALID_ARGUMENT, message); }

}  // namespace hoop::py
