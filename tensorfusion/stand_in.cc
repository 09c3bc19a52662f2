#include "tensorfusion/stand_in.h"

#include <cstring>
#include <limits>
#include <vector>

namespace hoop::fusion {

namespace {

// One element of the identity of a float type, as a double.
double FloatIdentity(ReduceOp op, double prescale) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (op) {
    case ReduceOp::kProd: return prescale != 0 ? 1 / prescale : 1;
    case ReduceOp::kMin: return prescale < 0 ? -inf : inf;
    case ReduceOp::kMax: return prescale < 0 ? inf : -inf;
    default: return 0;
  }
}

// One element of the identity of an integer or bool type, little-endian bytes.
void IntIdentity(DType dtype, ReduceOp op, unsigned char* e) {
  const size_t size = DTypeSize(dtype);
  const DTypeClass cls = DTypeRow(dtype).cls;
  std::memset(e, 0, size);
  switch (op) {
    case ReduceOp::kProd: e[0] = 1; break;
    case ReduceOp::kBand:  // every bit set; bool's true is 1
      if (cls == DTypeClass::kBool)
        e[0] = 1;
      else
        std::memset(e, 0xff, size);
      break;
    case ReduceOp::kMin:  // the largest value
      if (cls == DTypeClass::kBool) {
        e[0] = 1;
      } else {
        std::memset(e, 0xff, size);
        if (cls == DTypeClass::kSigned) e[size - 1] = 0x7f;
      }
      break;
    case ReduceOp::kMax:  // the smallest value
      if (cls == DTypeClass::kSigned) e[size - 1] = 0x80;
      break;
    default: break;  // sum, avg, bor, bxor: zero
  }
}

}  // namespace

void FillIdentity(DType dtype, ReduceOp op, double prescale, void* buf, size_t count) {
  const size_t size = DTypeSize(dtype);
  unsigned char e[8] = {};
  if (IsFloat(dtype))
    StoreFromDouble(dtype, e, 0, FloatIdentity(op, prescale));
  else
    IntIdentity(dtype, op, e);
  auto* out = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < count; ++i) std::memcpy(out + i * size, e, size);
}

}  // namespace hoop::fusion
