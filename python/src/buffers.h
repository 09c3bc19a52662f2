// Python buffers as hoop's (pointer, count, dtype): any object with the buffer protocol (NumPy
// arrays, bytearray, memoryview, array.array), C-contiguous, its element type read from the
// buffer's struct format. A View holds the buffer for as long as it lives (so a NumPy array
// cannot be resized under an operation in flight) and the object with it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "hoop/hoop.h"

namespace hoop::py {

// hoop's dtype for a struct format character and item size ("f", 4: HOOP_F32), or -1.
int DtypeOfFormat(const std::string& format, size_t itemsize);

// The name of a hoop dtype ("f32"), for messages.
const char* DtypeName(hoop_dtype_t d);

// Bytes per element of a hoop dtype.
size_t DtypeSize(hoop_dtype_t d);

struct View {
  pybind11::object owner;                       // the Python object (kept alive)
  std::unique_ptr<pybind11::buffer_info> info;  // the exported buffer (released last)
  void* data = nullptr;
  size_t count = 0;  // elements of dtype
  hoop_dtype_t dtype = HOOP_U8;

  // `what` names the argument in messages ("rank 1: allreduce: recvbuf"). `dtype` >= 0 reads the
  // buffer as that hoop dtype (bf16 from a uint16 array, say; its size must divide the bytes);
  // -1 takes the buffer's own.
  static View Of(const pybind11::object& obj, bool writable, int dtype, const std::string& what);
};

}  // namespace hoop::py
