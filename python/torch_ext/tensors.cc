#include "python/torch_ext/tensors.h"

#include <torch/version.h>

#include "python/torch_ext/stream_work.h"

namespace hoop::torch_ext {

// By c10's name for the scalar type, from the library's dtype table (hoop_dtype_info): a torch
// with the fp8 types maps them, an older one never names them. A complex tensor is its parts
// (Count gives two per element).
hoop_dtype_t DtypeOf(const at::Tensor& t, const std::string& where) {
  const at::ScalarType type = t.is_complex() ? c10::toRealValueType(t.scalar_type()) : t.scalar_type();
  const std::string name = c10::toString(type);
  std::string known;
  hoop_dtype_info_t info;
  int found = -1;
  for (int v = 0; found < 0 && hoop_dtype_info(static_cast<hoop_dtype_t>(v), &info) == HOOP_SUCCESS; ++v) {
    if (name == info.aten) found = v;
    if (*info.torch) known += std::string(known.empty() ? "" : ", ") + info.torch;
  }
  // Checked, not thrown at the loop's end: an unoptimised build cannot see TORCH_CHECK(false) end
  // the function, and -Werror=return-type stops it.
  TORCH_CHECK(found >= 0, where, ": tensors of ", t.scalar_type(), " are not supported (", known, ")");
  return static_cast<hoop_dtype_t>(found);
}

void CheckTensor(const at::Tensor& t, const std::string& where) {
  TORCH_CHECK(t.defined(), where, ": an undefined tensor");
#if HOOP_TORCH_STREAMS
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), where, ": a tensor on ", t.device(),
              "; the hoop backend takes CPU and CUDA tensors");
#else
  TORCH_CHECK(t.device().is_cpu(), where, ": a tensor on ", t.device(),
              "; the hoop backend takes CPU tensors with this PyTorch (CUDA tensors need PyTorch 2)");
#endif
  DtypeOf(t, where);
}

const at::Tensor& One(const Tensors& ts, const std::string& where) {
  TORCH_CHECK(ts.size() == 1, where, ": one tensor per call (one device per process), not ", ts.size());
  CheckTensor(ts[0], where);
  return ts[0];
}

void SameAs(const Tensors& ts, const at::Tensor& ref, const std::string& where, const char* what) {
  for (const auto& t : ts) {
    CheckTensor(t, where);
    TORCH_CHECK(t.scalar_type() == ref.scalar_type() && t.numel() == ref.numel(), where, ": every ", what,
                " tensor must match the input (", ref.scalar_type(), ", ", ref.numel(), " elements), not ",
                t.scalar_type(), ", ", t.numel());
  }
}

namespace {

// PREMUL_SUM's factor: a double, or a one-element tensor (PyTorch 1.13 keeps one per device).
void FactorOf(const c10d::ReduceOp& op, Reduction& r, const std::string& where) {
  auto* s = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s != nullptr, where, ": PREMUL_SUM without its factor");
#if TORCH_VERSION_MAJOR >= 2
  const at::Tensor& t = s->tensor_factor;
#else
  const at::Tensor t = s->tensor_factors.empty() ? at::Tensor() : s->tensor_factors[0];
#endif
  if (t.defined()) {
    TORCH_CHECK(t.numel() == 1, where, ": PREMUL_SUM's tensor factor has ", t.numel(), " elements, not 1");
    r.factor_t = t.to(at::kCPU);
  } else {
    r.factor = s->double_factor;
  }
}

}  // namespace

Reduction ReductionOf(const c10d::ReduceOp& op, at::ScalarType type, const std::string& where) {
  Reduction r;
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM: r.op = HOOP_SUM; break;
    case c10d::ReduceOp::AVG: r.op = HOOP_AVG; break;
    case c10d::ReduceOp::PRODUCT: r.op = HOOP_PROD; break;
    case c10d::ReduceOp::MIN: r.op = HOOP_MIN; break;
    case c10d::ReduceOp::MAX: r.op = HOOP_MAX; break;
    case c10d::ReduceOp::BAND: r.op = HOOP_BAND; break;
    case c10d::ReduceOp::BOR: r.op = HOOP_BOR; break;
    case c10d::ReduceOp::BXOR: r.op = HOOP_BXOR; break;
    case c10d::ReduceOp::PREMUL_SUM:
      r.op = HOOP_SUM;
      r.premul = true;
      FactorOf(op, r, where);
      break;
    default:
      TORCH_CHECK(false, where, ": reduce op ", static_cast<int>(static_cast<c10d::ReduceOp::RedOpType>(op)),
                  " is not supported (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM)");
  }
  static const char* const kNames[] = {"SUM", "AVG", "MIN", "MAX", "PRODUCT", "BAND", "BOR", "BXOR"};
  TORCH_CHECK(!at::isComplexType(type) || r.op == HOOP_SUM || r.op == HOOP_AVG, where, ": ", type,
              " tensors take SUM, AVG and PREMUL_SUM (the real and imaginary parts reduced apart), not ",
              kNames[static_cast<int>(r.op)]);
  TORCH_CHECK(type != at::kBool || !r.premul, where,
              ": PREMUL_SUM on a bool tensor: a scaled sum has no bool value (use SUM, which is a logical or)");
  if (type == at::kBool) {
    if (r.op == HOOP_SUM) r.op = HOOP_BOR;
    if (r.op == HOOP_PROD) r.op = HOOP_BAND;
  }
  return r;
}

at::Tensor Reduction::Input(const at::Tensor& t) const {
  if (!premul) return t;
  at::Tensor s = factor_t.defined() ? t.mul(factor_t.to(t.device())) : t.mul(factor);
  return s.scalar_type() == t.scalar_type() ? s.contiguous() : s.to(t.scalar_type()).contiguous();
}

void Reduction::ScaleOwn(at::Tensor& t) const {
  if (!premul) return;
  if (at::isFloatingType(t.scalar_type()))
    factor_t.defined() ? t.mul_(factor_t.to(t.device())) : t.mul_(factor);
  else
    t.copy_(Input(t));
}

at::Tensor Dense(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

std::function<void()> BackInto(const at::Tensor& t, const at::Tensor& dense) {
  if (dense.data_ptr() == t.data_ptr()) return {};
  return [t, dense]() mutable { t.copy_(dense); };
}

at::Tensor Joined(const Tensors& ts, const at::Tensor& like) {
  if (ts.empty()) return at::empty({0}, like.options());
  std::vector<at::Tensor> flat;
  for (const auto& t : ts) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void SplitInto(const at::Tensor& flat, Tensors& outs) {
  int64_t at = 0;
  for (auto& o : outs) {
    o.copy_(flat.narrow(0, at, o.numel()).view(o.sizes()));
    at += o.numel();
  }
}

at::Tensor Bytes(const at::Tensor& dense) { return dense.reshape({-1}).view(at::kByte); }

}  // namespace hoop::torch_ext
