// all_gather and reduce_scatter with a list of tensors whose sizes differ by rank, as NCCL's
// backend takes them (gloo's refuses): dist.all_gather(outs, t) where outs[k] holds rank k's
// tensor, and dist.reduce_scatter(out, ins) where ins[k] is the block reduced into rank k's out.
// Every rank passes the same list of sizes; this rank's own entry must match its tensor. They
// run as hoop's allgatherv and reduce_scatterv over the tensors joined into one flat buffer,
// one whole block a step (hoop.h), and the results are split back into the caller's tensors.
#include <numeric>

#include "python/torch_ext/process_group.h"
#include "python/torch_ext/tensors.h"

namespace hoop::torch_ext {

namespace {

// Each tensor's element count, checking it is of ref's dtype; `own` (this rank's entry) must
// have `own_count` elements.
std::vector<size_t> CountsOf(const Tensors& ts, const at::Tensor& ref, int own, size_t own_count,
                             const std::string& where, const char* what) {
  std::vector<size_t> counts;
  for (const auto& t : ts) {
    CheckTensor(t, where);
    TORCH_CHECK(t.scalar_type() == ref.scalar_type(), where, ": every ", what, " tensor must be ", ref.scalar_type(),
                ", not ", t.scalar_type());
    counts.push_back(Count(t));
  }
  TORCH_CHECK(counts[static_cast<size_t>(own)] == own_count, where, ": this rank's (", own, ") ", what, " tensor has ",
              counts[static_cast<size_t>(own)], " elements, its own tensor ", own_count);
  return counts;
}

}  // namespace

bool Uneven(const Tensors& ts, const at::Tensor& ref) {
  for (const auto& t : ts)
    if (t.defined() && t.numel() != ref.numel()) return true;
  return false;
}

ProcessGroupHoop::Work ProcessGroupHoop::AllgatherUneven(Tensors& outs, const at::Tensor& in,
                                                         const std::string& where) {
  const std::vector<size_t> counts = CountsOf(outs, in, getRank(), Count(in), where, "output");
  std::vector<size_t> displs(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), size_t{0});
  at::Tensor d = Dense(in);
  at::Tensor flat = at::empty({static_cast<int64_t>(displs.back() + counts.back())}, in.options());
  const hoop_dtype_t dt = DtypeOf(in, where);
  Tensors split = outs;
  return Start(
      "hoop:allgather", c10d::OpType::ALLGATHER, outs, {d, flat}, [split, flat]() mutable { SplitInto(flat, split); },
      [&](const Slot& s) {
        return HOOP_ISSUE(s, allgatherv, comm_, Ptr(d), Count(d), Ptr(flat), counts.data(), displs.data(), dt);
      });
}

ProcessGroupHoop::Work ProcessGroupHoop::ReduceScatterUneven(Tensors& outputs, Tensors& ins, const Reduction& red,
                                                             const std::string& where) {
  const at::Tensor& out = outputs[0];
  const std::vector<size_t> counts = CountsOf(ins, out, getRank(), Count(out), where, "input");
  at::Tensor flat = Joined(ins, out), o = Dense(out);
  red.ScaleOwn(flat);
  const hoop_dtype_t dt = DtypeOf(out, where);
  const hoop_op_t op = red.op;
  return Start(
      "hoop:reduce_scatter", c10d::OpType::REDUCE_SCATTER, outputs, {flat, o}, BackInto(out, o),
      [&](const Slot& s) { return HOOP_ISSUE(s, reduce_scatterv, comm_, Ptr(flat), Ptr(o), counts.data(), dt, op); });
}

}  // namespace hoop::torch_ext
