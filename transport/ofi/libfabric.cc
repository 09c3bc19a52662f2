// Loads libfabric at run time (libfabric.h says why it is not linked).
#include "transport/ofi/libfabric.h"

#include <dlfcn.h>

#include <string>

namespace hoop {
namespace {

constexpr const char* kSoname = "libfabric.so.1";

template <class F>
bool Find(void* lib, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  if (!*out) missing->append(missing->empty() ? name : std::string(", ") + name);
  return *out != nullptr;
}

}  // namespace

StatusOr<Libfabric> LoadLibfabric() {
  void* lib = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char* why = ::dlerror();
    return Unavailable(std::string("ofi: cannot load ") + kSoname +
                       " (libfabric; apt-get install libfabric1): " + (why ? why : "not found"));
  }
  Libfabric f;
  std::string missing;
  Find(lib, "fi_getinfo", &f.getinfo, &missing);
  Find(lib, "fi_freeinfo", &f.freeinfo, &missing);
  Find(lib, "fi_dupinfo", &f.dupinfo, &missing);
  Find(lib, "fi_fabric", &f.fabric, &missing);
  Find(lib, "fi_version", &f.version, &missing);
  Find(lib, "fi_strerror", &f.strerror, &missing);
  if (!missing.empty()) return Unavailable(std::string("ofi: ") + kSoname + " lacks " + missing);
  return f;
}

}  // namespace hoop
