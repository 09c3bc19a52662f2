#include "common/dtype.h"

namespace hoop {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kU8: return 1;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kI32:
    case DType::kF32: return 4;
    case DType::kI64:
    case DType::kF64: return 8;
  }
  return 0;
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
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
  return std::nullopt;
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
  }
  return "?";
}

std::optional<ReduceOp> ParseReduceOp(const std::string& name) {
  for (ReduceOp op : kAllReduceOps)
    if (name == ReduceOpName(op)) return op;
  return std::nullopt;
}

const char* MemKindName(MemKind k) { return k == MemKind::kHost ? "host" : "cuda"; }

}  // namespace hoop
