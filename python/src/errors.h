// hoop's errors as Python exceptions: one class per hoop_status_t, all under hoop.HoopError,
// each also under the built-in exception a Python user would catch for it (an invalid argument
// is a ValueError, a timeout a TimeoutError). The message is hoop_last_error()'s: it names the
// rank, the call and the cause.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "hoop/hoop.h"

namespace hoop::py {

// Makes the classes and adds them to module m (HoopError, InvalidArgumentError, ...).
void RegisterErrors(pybind11::module_& m);

// Raises the class for `status` with `message` (the error_already_set pybind11 passes on).
[[noreturn]] void Raise(hoop_status_t status, const std::string& message);

// After a C API call: returns if it succeeded, else raises with hoop_last_error() (read on
// this thread, so call it on the thread that made the call, GIL held or not).
void Check(hoop_status_t status);

// An argument the binding itself refuses (before hoop sees it): InvalidArgumentError.
[[noreturn]] void Invalid(const std::string& message);

}  // namespace hoop::py
