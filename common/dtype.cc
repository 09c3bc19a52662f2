#include "common/dtype.h"

namespace hoop {

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kI8: return "i8";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::optional<DType> ParseDType(const std::string& name) {
  for (DType t : kAllDTypes)
    if (name == DTypeName(t)) return t;
  if (name == "float" || name == "float32") return DType::kF32;
  if (name == "double" || name == "float64") return DType::kF64;
  if (name == "half" || name == "float16") return DType::kF16;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "int32") return DType::kI32;
  if (name == "int64") return DType::kI64;
  if (name == "uint8") return DType::kU8;
  if (name == "int8") return DType::kI8;
  return std::nullopt;
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kBand: return "band";
    case ReduceOp::kBor: return "bor";
    case ReduceOp::kBxor: return "bxor";
  }
  return "?";
}

bool IsFloat(DType t) { return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64; }

std::string OpMismatch(DType t, ReduceOp op) {
  const bool bitwise = op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
  if (bitwise && IsFloat(t))
    return std::string(ReduceOpName(op)) + " takes integer and bool elements, not " + DTypeName(t);
  if (t == DType::kBool && (op == ReduceOp::kSum || op == ReduceOp::kAvg || op == ReduceOp::kProd))
    return std::string("bool takes min, max, band, bor and bxor, not ") + ReduceOpName(op) +
           (op == ReduceOp::kProd ? " (band is its logical and)" : " (bor is its logical or)");
  return "";
}

bool OpApplies(DType t, ReduceOp op) { return OpMismatch(t, op).empty(); }

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

}  // namespace hoop
