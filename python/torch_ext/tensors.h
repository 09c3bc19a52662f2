// What the backend's calls share: checking tensors against what hoop takes (dtype by c10's name,
// from the library's dtype table; device; one tensor per call), the reduce op with PREMUL_SUM,
// and the contiguous copies and joins a call goes through, with the copy back after it.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <functional>
#include <string>
#include <vector>

#include "hoop/hoop.h"

namespace hoop::torch_ext {

using Tensors = std::vector<at::Tensor>;

hoop_dtype_t DtypeOf(const at::Tensor& t, const std::string& where);
void CheckTensor(const at::Tensor& t, const std::string& where);
// The one tensor of a call (one device per process), checked.
const at::Tensor& One(const Tensors& ts, const std::string& where);
// Whether any of ts has another element count than ref (a list call with sizes by rank).
bool Uneven(const Tensors& ts, const at::Tensor& ref);
// Every tensor of ts checked and of ref's dtype and element count.
void SameAs(const Tensors& ts, const at::Tensor& ref, const std::string& where, const char* what);

// A c10d reduce op as hoop runs it. PREMUL_SUM (FSDP's gradient scaling: each rank's input times
// a factor, then a sum) is a sum of inputs scaled first, into a copy: the caller's input is
// never changed.
struct Reduction {
  hoop_op_t op = HOOP_SUM;
  bool premul = false;
  double factor = 1.0;  // the scalar factor, or
  at::Tensor factor_t;  // the one-element tensor factor
  // t itself, or (PREMUL_SUM) a new tensor t x factor of t's dtype.
  at::Tensor Input(const at::Tensor& t) const;
  // PREMUL_SUM: t scaled in place (t is the call's own copy).
  void ScaleOwn(at::Tensor& t) const;
};
// On bool tensors SUM is a logical or and PRODUCT a logical and, as gloo's and NCCL's backends
// give them (NCCL runs SUM as MAX over bytes): `dist.all_reduce(flag)` asks "did any rank?".
Reduction ReductionOf(const c10d::ReduceOp& op, at::ScalarType type, const std::string& where);

// t itself where it is contiguous, else a contiguous copy (the caller copies results back).
at::Tensor Dense(const at::Tensor& t);
// After an in-place call through Dense: the results back into the caller's tensor.
std::function<void()> BackInto(const at::Tensor& t, const at::Tensor& dense);
// The tensors one after another in one new flat tensor (for list calls).
at::Tensor Joined(const Tensors& ts, const at::Tensor& like);
// Copies consecutive pieces of flat into each of outs.
void SplitInto(const at::Tensor& flat, Tensors& outs);
// A contiguous tensor's elements as one flat run of bytes (a view).
at::Tensor Bytes(const at::Tensor& dense);

inline void* Ptr(const at::Tensor& t) { return t.data_ptr(); }
// Elements as hoop counts them: a complex element is two of its real type (real, imaginary).
inline size_t Count(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * (t.is_complex() ? 2 : 1); }

}  // namespace hoop::torch_ext
