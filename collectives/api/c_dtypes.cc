// hoop_dtype_info: the dtype table (common/dtype.h) through the C API, so the layers above it
// that see only the C API (the Python package, the torch backend) and a framework's own code
// read the same rows the library checks calls against.
#include <string>

#include "collectives/api/c_api_internal.h"
#include "common/dtype.h"

static_assert(HOOP_SUM == static_cast<int>(hoop::ReduceOp::kSum) &&
              HOOP_BXOR == static_cast<int>(hoop::ReduceOp::kBxor));  // so that ops' bits are OpBit's

extern "C" {

hoop_status_t hoop_dtype_info(hoop_dtype_t dtype, hoop_dtype_info_t* info) {
  const int v = static_cast<int>(dtype);
  if (v < 0 || !hoop::ValidDType(static_cast<hoop::DType>(v)))
    return hoop::capi::Report(hoop::InvalidArgument("hoop_dtype_info: unknown dtype " + std::to_string(v)));
  if (!info) return hoop::capi::Report(hoop::InvalidArgument("hoop_dtype_info: info is NULL"));
  const hoop::DTypeInfo& row = hoop::DTypeRow(static_cast<hoop::DType>(v));
  info->name = row.name;
  info->c_name = row.c_name;
  info->size = row.size;
  info->is_float = row.cls == hoop::DTypeClass::kFloat;
  info->ops = row.ops;
  info->numpy = row.numpy;
  info->torch = row.torch;
  info->aten = row.aten;
  return HOOP_SUCCESS;
}

}  // extern "C"
