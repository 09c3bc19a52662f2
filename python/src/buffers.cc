#include "python/src/buffers.h"

#include "python/src/errors.h"

namespace hoop::py {

namespace pyb = pybind11;

int DtypeOfFormat(const std::string& format, size_t itemsize) {
  // Native or little-endian byte order only ('@', '=', '<'; this is a little-endian build).
  std::string f = format;
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.erase(0, 1);
  if (f.size() != 1) return -1;
  switch (f[0]) {
    case 'b': return HOOP_I8;
    case 'B': return HOOP_U8;
    case '?': return HOOP_BOOL;
    case 'e': return HOOP_F16;
    case 'f': return HOOP_F32;
    case 'd': return HOOP_F64;
    case 'h':
    case 'i':
    case 'l':
    case 'q': return itemsize == 2 ? HOOP_I16 : itemsize == 4 ? HOOP_I32 : itemsize == 8 ? HOOP_I64 : -1;
    case 'H':
    case 'I':
    case 'L':
    case 'Q': return itemsize == 2 ? HOOP_U16 : itemsize == 4 ? HOOP_U32 : itemsize == 8 ? HOOP_U64 : -1;
    default: return -1;
  }
}

// From the library's dtype table (hoop_dtype_info).
const char* DtypeName(hoop_dtype_t d) {
  hoop_dtype_info_t info;
  return hoop_dtype_info(d, &info) == HOOP_SUCCESS ? info.name : "?";
}

size_t DtypeSize(hoop_dtype_t d) {
  hoop_dtype_info_t info;
  return hoop_dtype_info(d, &info) == HOOP_SUCCESS ? info.size : 1;
}

View View::Of(const pyb::object& obj, bool writable, int dtype, const std::string& what) {
  View v;
  v.owner = obj;
  if (!PyObject_CheckBuffer(obj.ptr()))
    Invalid(what + ": a " + std::string(pyb::str(pyb::type::handle_of(obj).attr("__name__"))) +
            " has no buffer (pass a NumPy array, bytearray, memoryview or array.array)");
  Py_buffer* raw = new Py_buffer;
  int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), raw, flags) != 0) {
    delete raw;
    PyErr_Clear();
    // Ask again without the demands, to say which one it failed.
    Py_buffer probe;
    if (PyObject_GetBuffer(obj.ptr(), &probe, PyBUF_FULL_RO) == 0) {
      const bool ro = probe.readonly;
      PyBuffer_Release(&probe);
      if (writable && ro) Invalid(what + ": the buffer is read-only");
    } else {
      PyErr_Clear();
    }
    Invalid(what + ": the buffer is not C-contiguous (pass numpy.ascontiguousarray(x))");
  }
  v.info = std::make_unique<pyb::buffer_info>(raw, /*ownview=*/true);
  const size_t bytes = static_cast<size_t>(v.info->size) * static_cast<size_t>(v.info->itemsize);
  int own = DtypeOfFormat(v.info->format, static_cast<size_t>(v.info->itemsize));
  if (dtype < 0) {
    if (own < 0)
      Invalid(what + ": elements of format '" + v.info->format + "' (" + std::to_string(v.info->itemsize) +
              " bytes) are no hoop dtype (u8, i8, bool, i32, i64, f16, f32, f64; bf16, f8e4m3 and f8e5m2 by "
              "dtype=)");
    v.dtype = static_cast<hoop_dtype_t>(own);
  } else {
    v.dtype = static_cast<hoop_dtype_t>(dtype);
    if (bytes % DtypeSize(v.dtype) != 0)
      Invalid(what + ": " + std::to_string(bytes) + " bytes are no whole number of " + DtypeName(v.dtype) +
              " elements");
  }
  v.data = v.info->ptr;
  v.count = bytes / DtypeSize(v.dtype);
  return v;
}

}  // namespace hoop::py
