// Libfabric: the six calls libfabric exports, from the library loaded when the ofi back end is
// first used (dlopen), not linked into libhoop. Debian's libfabric1 links the PSM libraries
// (libpsm_infinipath, libpsm2), whose load-time constructors sleep about 0.2 s to calibrate a
// clock (cornelisnetworks/opa-psm2#73); linked, that was paid by every process that loads libhoop
// (each rank, hooprun, `hoop-info --version`, `import hoop`), whichever back end it used. The
// rest of libfabric's API is inline in its headers, calling through the objects these return.
#pragma once

#include <rdma/fabric.h>

#include "common/status.h"

namespace hoop {

struct Libfabric {
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;  // fi_allocinfo() is dupinfo(nullptr)
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_version) version = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
};

// Loads libfabric.so.1 (kept loaded for the rest of the process, RTLD_NODELETE: its constructors
// run once) and looks its calls up; Unavailable, saying what was missing, where it cannot.
StatusOr<Libfabric> LoadLibfabric();

}  // namespace hoop
