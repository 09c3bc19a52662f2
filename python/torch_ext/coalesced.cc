// The coalesced tensor collectives of PyTorch 2.x: several all_gather_into_tensor (or
// reduce_scatter_tensor) calls of one group issued together, each output (input) holding one
// piece per rank. hoop runs each group as one collective over one joined buffer:
//  - allgather: every input's bytes one after another (dtypes may differ: gathering moves
//    bytes); rank r's block of the gathered buffer is rank r's inputs in order, copied into the
//    r-th piece of each output;
//  - reduce-scatter: for every rank r, the r-th piece of each input one after another (one dtype:
//    the reduction needs it), so that the r-th block of the joined input is what rank r gets;
//    its result is split into the outputs.
#include <torch/version.h>

#include <algorithm>

#include "python/torch_ext/process_group.h"
#include "python/torch_ext/tensors.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)

namespace hoop::torch_ext {
namespace {

// Pairs of (output, input) where each output holds `size` pieces of its input's element count.
void CheckPairs(const Tensors& outputs, const Tensors& inputs, int64_t size, bool gather, const std::string& where) {
  TORCH_CHECK(outputs.size() == inputs.size(), where, ": ", outputs.size(), " outputs for ", inputs.size(), " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckTensor(inputs[i], where);
    CheckTensor(outputs[i], where);
    const at::Tensor& big = gather ? outputs[i] : inputs[i];
    const at::Tensor& small = gather ? inputs[i] : outputs[i];
    TORCH_CHECK(big.scalar_type() == small.scalar_type() && big.numel() == small.numel() * size, where, ": pair ", i,
                ": the ", gather ? "output" : "input", " must hold ", size, " x ", small.numel(), " elements of ",
                small.scalar_type(), ", not ", big.numel(), " of ", big.scalar_type());
  }
}

}  // namespace

ProcessGroupHoop::Work ProcessGroupHoop::allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                         const c10d::AllgatherOptions&) {
  const std::string where = Where("allgather_into_tensor_coalesced");
  const int64_t size = getSize();
  CheckPairs(outputs, inputs, size, true, where);
  Tensors bytes;
  for (const auto& in : inputs) bytes.push_back(Bytes(Dense(in)));
  at::Tensor joined = bytes.empty() ? at::empty({0}, at::kByte) : at::cat(bytes);
  at::Tensor gathered = at::empty({size * joined.numel()}, joined.options());
  Tensors outs = outputs;
  auto after = [outs, gathered, size]() mutable {
    int64_t off = 0;  // of each input within a rank's block
    const int64_t block = gathered.numel() / std::max<int64_t>(size, 1);
    for (auto& out : outs) {
      at::Tensor o = Dense(out), ob = Bytes(o);
      const int64_t piece = ob.numel() / size;
      for (int64_t r = 0; r < size; ++r)
        ob.narrow(0, r * piece, piece).copy_(gathered.narrow(0, r * block + off, piece));
      if (o.data_ptr() != out.data_ptr()) out.copy_(o);
      off += piece;
    }
  };
  return Start("hoop:allgather_into_tensor_coalesced", c10d::OpType::COALESCED, outputs, {joined, gathered}, after,
               [&](const Slot& s) {
                 return HOOP_ISSUE(s, allgather, comm_, Ptr(joined), Ptr(gathered), Count(joined), HOOP_U8);
               });
}

ProcessGroupHoop::Work ProcessGroupHoop::reduce_scatter_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                         const c10d::ReduceScatterOptions& opts) {
  const std::string where = Where("reduce_scatter_tensor_coalesced");
  const int64_t size = getSize();
  CheckPairs(outputs, inputs, size, false, where);
  TORCH_CHECK(!inputs.empty(), where, ": no tensors");
  for (const auto& t : inputs)
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), where, ": tensors of one dtype only (",
                inputs[0].scalar_type(), " and ", t.scalar_type(), ")");
  const Reduction red = ReductionOf(opts.reduceOp, inputs[0].scalar_type(), where);
  Tensors flat, pieces;  // each input flattened once (a copy only where it is not contiguous), then
  for (const auto& in : inputs) flat.push_back(in.reshape({-1}));
  for (int64_t r = 0; r < size; ++r)  // rank r's block: the r-th piece of every input
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t piece = outputs[i].numel();
      pieces.push_back(flat[i].narrow(0, r * piece, piece));
    }
  at::Tensor joined = at::cat(pieces);
  red.ScaleOwn(joined);
  at::Tensor result = at::empty({joined.numel() / size}, joined.options());
  const hoop_dtype_t dt = DtypeOf(inputs[0], where);
  Tensors outs = outputs;
  return Start(
      "hoop:reduce_scatter_tensor_coalesced", c10d::OpType::COALESCED, outputs, {joined, result},
      [outs, result]() mutable { SplitInto(result, outs); },
      [&](const Slot& s) {
        return HOOP_ISSUE(s, reduce_scatter, comm_, Ptr(joined), Ptr(result), Count(result), dt, red.op);
      });
}

}  // namespace hoop::torch_ext

#endif
