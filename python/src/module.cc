// hoop._hoop: the Python binding of hoop's C API (include/hoop/hoop.h), made with pybind11.
//
// Why over the C API and not the C++ classes: the C API is the interface hoop keeps stable for
// framework authors, it already covers everything Python needs (init from the environment,
// the collectives blocking and not, point-to-point, sub-communicators, errors with messages),
// and going through it tests it the way its users use it. pybind11 (Debian's pybind11-dev) does
// the buffer protocol, the GIL and the exceptions; the NumPy-facing layer (allocating outputs,
// shapes, the default communicator) is Python, in hoop/__init__.py.
#include <pybind11/pybind11.h>

#include "hoop/hoop.h"
#include "python/src/comm.h"
#include "python/src/errors.h"

namespace pyb = pybind11;

PYBIND11_MODULE(_hoop, m) {
  m.doc() = "hoop's C API for Python (use the hoop package, not this module)";
  hoop::py::RegisterErrors(m);
  auto comm = hoop::py::RegisterComm(m);
  hoop::py::RegisterCollectives(comm);
  hoop::py::RegisterFusion(m);

  m.attr("API_VERSION") = HOOP_API_VERSION;
  m.def("version", [] {
    int v = 0;
    hoop::py::Check(hoop_get_version(&v));
    return pyb::make_tuple(v / 10000, v / 100 % 100, v % 100);
  });
  m.def(
      "compression_error_factor",
      [](int compression, int nranks) {
        return hoop_compression_error_factor(static_cast<hoop_compression_t>(compression), nranks);
      },
      "g of the C API's bound: |result - exact| <= g * (sum |x| + 2^-24 * M).");
  // The dtype table (hoop_dtype_info): its enumerators by their C names less the prefix, and
  // the rows themselves for the layers above (hoop.dtypes(), the torch and NumPy mappings).
  static const char* const kOpNames[] = {"sum", "avg", "min", "max", "prod", "band", "bor", "bxor"};
  pyb::list rows;
  hoop_dtype_info_t info;
  for (int v = 0; hoop_dtype_info(static_cast<hoop_dtype_t>(v), &info) == HOOP_SUCCESS; ++v) {
    m.attr(info.c_name) = v;
    pyb::list ops;
    for (int op = HOOP_SUM; op <= HOOP_BXOR; ++op)
      if (info.ops & (1u << op)) ops.append(kOpNames[op]);
    pyb::dict d;
    d["value"] = v;
    d["name"] = info.name;
    d["c_name"] = info.c_name;
    d["size"] = info.size;
    d["float"] = info.is_float != 0;
    d["numpy"] = info.numpy;
    d["torch"] = info.torch;
    d["ops"] = ops;
    rows.append(d);
  }
  m.attr("DTYPES") = pyb::tuple(rows);
  // The C API's other enumerators, by their C names less the prefix.
  const std::pair<const char*, int> values[] = {{"SUM", HOOP_SUM},
                                                {"AVG", HOOP_AVG},
                                                {"MIN", HOOP_MIN},
                                                {"MAX", HOOP_MAX},
                                                {"PROD", HOOP_PROD},
                                                {"BAND", HOOP_BAND},
                                                {"BOR", HOOP_BOR},
                                                {"BXOR", HOOP_BXOR},
                                                {"ANY_SOURCE", HOOP_ANY_SOURCE},
                                                {"UNDEFINED", HOOP_UNDEFINED},
                                                {"COMPRESSION_DEFAULT", HOOP_COMPRESSION_DEFAULT},
                                                {"COMPRESSION_NONE", HOOP_COMPRESSION_NONE},
                                                {"COMPRESSION_FP16", HOOP_COMPRESSION_FP16},
                                                {"COMPRESSION_BF16", HOOP_COMPRESSION_BF16},
                                                {"COMPRESSION_AUTO", HOOP_COMPRESSION_AUTO}};
  for (const auto& [name, value] : values) m.attr(name) = value;
}
