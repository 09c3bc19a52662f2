// The dtype table's lookups (names, parsing, which ops apply) and element access through a
// double for the code that is not a kernel.
#include "common/dtype.h"

#include <sstream>

namespace hoop {

const char* DTypeName(DType t) { return ValidDType(t) ? DTypeRow(t).name : "?"; }

namespace {
std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}
bool NamedBy(const DTypeInfo& row, const std::string& name) {
  if (name == row.name || name == row.numpy || name == row.torch || name == Lower(row.c_name)) return true;
  std::istringstream aliases(row.aliases);
  for (std::string a; aliases >> a;)
    if (name == a) return true;
  return false;
}
}  // namespace

std::optional<DType> ParseDType(const std::string& name) {
  if (name.empty()) return std::nullopt;
  std::string n = name.rfind("torch.", 0) == 0 ? name.substr(6) : name;
  for (const DTypeInfo& row : kDTypeTable)
    if (NamedBy(row, n)) return row.type;
  return std::nullopt;
}

std::string DTypeNames() {
  std::string out;
  for (DType t : kAllDTypes) out += (out.empty() ? "" : ", ") + std::string(DTypeName(t));
  return out;
}

bool IsFloat(DType t) { return ValidDType(t) && DTypeRow(t).cls == DTypeClass::kFloat; }

std::string OpMismatch(DType t, ReduceOp op) {
  if (!ValidDType(t)) return "unknown dtype " + std::to_string(static_cast<int>(t));
  const DTypeInfo& row = DTypeRow(t);
  if (row.ops & OpBit(op)) return "";
  if (OpBit(op) == 0) return "unknown op " + std::to_string(static_cast<int>(op));
  const bool bitwise = kBitwiseOps & OpBit(op);
  if (bitwise && row.cls == DTypeClass::kFloat)
    return std::string(ReduceOpName(op)) + " takes integer and bool elements, not " + row.name;
  if (row.cls == DTypeClass::kBool)
    return std::string("bool takes min, max, band, bor and bxor, not ") + ReduceOpName(op) +
           (op == ReduceOp::kProd ? " (band is its logical and)" : " (bor is its logical or)");
  return std::string(row.name) + " does not take " + ReduceOpName(op);
}

std::optional<ReduceOp> ParseReduceOp(const std::string& name) {
  for (ReduceOp op : kAllReduceOps)
    if (name == ReduceOpName(op)) return op;
  return std::nullopt;
}

const char* MemKindName(MemKind k) {
  switch (k) {
    case MemKind::kHost: return "host";
    case MemKind::kCuda: return "cuda";
    case MemKind::kCudaPinned: return "cuda-pinned";
    case MemKind::kCudaManaged: return "cuda-managed";
  }
  return "unknown";
}

double LoadAsDouble(DType t, const void* p, size_t i) {
  switch (t) {
    case DType::kU8:
    case DType::kBool: return static_cast<const uint8_t*>(p)[i];
    case DType::kI8: return static_cast<const int8_t*>(p)[i];
    case DType::kI32: return static_cast<const int32_t*>(p)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kI16: return static_cast<const int16_t*>(p)[i];
    case DType::kU16: return static_cast<const uint16_t*>(p)[i];
    case DType::kU32: return static_cast<const uint32_t*>(p)[i];
    case DType::kU64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::kF16: return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return BF16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kF32: return static_cast<const float*>(p)[i];
    case DType::kF64: return static_cast<const double*>(p)[i];
    case DType::kF8E4M3: return F8E4M3ToFloat(static_cast<const uint8_t*>(p)[i]);
    case DType::kF8E5M2: return F8E5M2ToFloat(static_cast<const uint8_t*>(p)[i]);
  }
  return 0;
}

void StoreFromDouble(DType t, void* p, size_t i, double v) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::kU8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); return;
    case DType::kBool: static_cast<uint8_t*>(p)[i] = v != 0; return;
    case DType::kI8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); return;
    case DType::kI32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<int64_t>(v)); return;
    case DType::kI64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); return;
    case DType::kI16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(static_cast<int64_t>(v)); return;
    case DType::kU16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(static_cast<int64_t>(v)); return;
    case DType::kU32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(static_cast<int64_t>(v)); return;
    case DType::kU64:
      static_cast<uint64_t*>(p)[i] = v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
      return;
    case DType::kF16: static_cast<uint16_t*>(p)[i] = FloatToHalf(f); return;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = FloatToBF16(f); return;
    case DType::kF32: static_cast<float*>(p)[i] = f; return;
    case DType::kF64: static_cast<double*>(p)[i] = v; return;
    case DType::kF8E4M3: static_cast<uint8_t*>(p)[i] = FloatToF8E4M3(f); return;
    case DType::kF8E5M2: static_cast<uint8_t*>(p)[i] = FloatToF8E5M2(f); return;
  }
}

}  // namespace hoop
