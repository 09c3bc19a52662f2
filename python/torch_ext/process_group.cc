#include "python/torch_ext/process_group.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "python/torch_ext/tensors.h"

namespace hoop::torch_ext {

ProcessGroupHoop::ProcessGroupHoop(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   const std::string& host, double timeout_s)
    : GroupBase(rank, size), store_(std::make_shared<StoreBridge>(store)) {
  hoop_store_t cb = store_->Callbacks();
  const char* at = host.empty() ? nullptr : host.c_str();
  const hoop_status_t s = timeout_s > 0 ? hoop_init_store_timeout(&comm_, rank, size, &cb, at, timeout_s)
                                        : hoop_init_store(&comm_, rank, size, &cb, at);
  if (s != HOOP_SUCCESS) throw std::runtime_error(std::string("hoop: ") + hoop_last_error());
  completer_ = Completer::Make();
}

ProcessGroupHoop::ProcessGroupHoop(hoop_comm_t comm, std::shared_ptr<StoreBridge> store, int rank, int size)
    : GroupBase(rank, size), store_(std::move(store)), comm_(comm) {
  completer_ = Completer::Make();
}

#if HOOP_TORCH_HAS_SPLIT
c10::intrusive_ptr<c10d::Backend> ProcessGroupHoop::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                          const std::vector<int>& ranks,
                                                          const c10::intrusive_ptr<Options>&) {
  const std::string where = Where("split_group");
  // PyTorch asks once per device type this backend serves (cpu, cuda), and again for the next
  // type where a rank is in no part: one split_group, one store, one hoop_comm_split.
  if (store && store == last_split_store_) return last_split_.lock();
  int color = HOOP_UNDEFINED, key = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    TORCH_CHECK(ranks[i] >= 0 && ranks[i] < getSize(), where, ": rank ", ranks[i], " is not a rank of this group");
    if (ranks[i] != getRank()) continue;
    color = *std::min_element(ranks.begin(), ranks.end());  // parts do not overlap: one color each
    key = static_cast<int>(i);
  }
  hoop_comm_t out = nullptr;
  hoop_status_t s;
  {
    std::optional<pybind11::gil_scoped_release> nogil;  // a collective of this group: not holding the GIL
    if (PyGILState_Check()) nogil.emplace();
    s = hoop_comm_split(comm_, color, key, &out);
  }
  if (s != HOOP_SUCCESS) throw std::runtime_error(std::string("hoop: ") + hoop_last_error());
  last_split_store_ = store;  // held: a later split's store cannot reuse its address
  last_split_ = {};
  if (out == nullptr) return nullptr;  // in no part
  int rank = -1, size = -1;
  hoop_rank(out, &rank);
  hoop_size(out, &size);
  c10::intrusive_ptr<c10d::Backend> child = c10::make_intrusive<ProcessGroupHoop>(out, store_, rank, size);
  last_split_ = child;
  return child;
}
#endif

#if HOOP_TORCH_HAS_SHRINK
c10::intrusive_ptr<c10d::Backend> ProcessGroupHoop::shrink(const std::vector<int64_t>& ranks_to_exclude,
                                                           int shrink_flags, const c10::intrusive_ptr<Options>&) {
  const std::string where = Where("shrink");
  std::vector<int> excluded;
  for (int64_t r : ranks_to_exclude) {
    TORCH_CHECK(r >= 0 && r < getSize(), where, ": excluded rank ", r, " is not a rank of this group");
    excluded.push_back(static_cast<int>(r));
  }
  if (shrink_flags != 0) hoop_comm_revoke(comm_, "shrink_group(SHRINK_ABORT)");  // every running call ends
  hoop_comm_t out = nullptr;
  hoop_status_t s;
  {
    std::optional<pybind11::gil_scoped_release> nogil;  // it waits for the others: not holding the GIL
    if (PyGILState_Check()) nogil.emplace();
    s = hoop_comm_shrink_excluding(comm_, excluded.data(), static_cast<int>(excluded.size()), &out);
  }
  if (s != HOOP_SUCCESS) throw std::runtime_error(std::string("hoop: ") + hoop_last_error());
  int rank = -1, size = -1;
  hoop_rank(out, &rank);
  hoop_size(out, &size);
  return c10::make_intrusive<ProcessGroupHoop>(out, store_, rank, size);
}
#endif

ProcessGroupHoop::~ProcessGroupHoop() {
  completer_->Stop();  // finishes the futures it holds (their Works may live on), without the GIL
  completer_.reset();
  hoop_finalize(comm_);
}

void ProcessGroupHoop::LabelTrace() {
  const auto [name, desc] = GroupNames(static_cast<const GroupBase&>(*this));
  if (name.empty()) return;  // not yet given: the next call looks again
  const std::string label = desc.empty() ? name : name + " (" + desc + ")";
  if (hoop_comm_set_trace_label(comm_, label.c_str()) == HOOP_SUCCESS) labeled_ = true;
}

std::string ProcessGroupHoop::Where(const char* call) const {
  return "hoop: rank " + std::to_string(getRank()) + ": " + call;
}

void ProcessGroupHoop::SetDeterministic(bool on) {
  if (hoop_comm_set_deterministic(comm_, on ? 1 : 0) != HOOP_SUCCESS) TORCH_CHECK(false, hoop_last_error());
}

bool ProcessGroupHoop::deterministic() const {
  int on = 0;
  if (hoop_comm_deterministic(comm_, &on) != HOOP_SUCCESS) TORCH_CHECK(false, hoop_last_error());
  return on != 0;
}

ProcessGroupHoop::Work ProcessGroupHoop::broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) {
  const std::string where = Where("broadcast");
  const at::Tensor& t = One(tensors, where);
  at::Tensor d = Dense(t);
  const hoop_dtype_t dt = DtypeOf(t, where);
  const int root = static_cast<int>(opts.rootRank);
  return Start("hoop:broadcast", c10d::OpType::BROADCAST, tensors, {d}, BackInto(t, d),
               [&](const Slot& s) { return HOOP_ISSUE(s, broadcast, comm_, Ptr(d), Ptr(d), Count(d), dt, root); });
}

ProcessGroupHoop::Work ProcessGroupHoop::allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) {
  const std::string where = Where("allreduce");
  const at::Tensor& t = One(tensors, where);
  const Reduction red = ReductionOf(opts.reduceOp, t.scalar_type(), where);
  at::Tensor d = red.Input(Dense(t));
  const hoop_dtype_t dt = DtypeOf(t, where);
  const hoop_op_t op = red.op;
  return Start("hoop:allreduce", c10d::OpType::ALLREDUCE, tensors, {d}, BackInto(t, d),
               [&](const Slot& s) { return HOOP_ISSUE(s, allreduce, comm_, Ptr(d), Ptr(d), Count(d), dt, op); });
}

ProcessGroupHoop::Work ProcessGroupHoop::allreduce_coalesced(Tensors& tensors,
                                                             const c10d::AllreduceCoalescedOptions& opts) {
  const std::string where = Where("allreduce_coalesced");
  TORCH_CHECK(!tensors.empty(), where, ": no tensors");
  for (const auto& t : tensors) {
    CheckTensor(t, where);
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), where, ": tensors of one dtype only (",
                tensors[0].scalar_type(), " and ", t.scalar_type(), ")");
  }
  at::Tensor flat = Joined(tensors, tensors[0]);
  const hoop_dtype_t dt = DtypeOf(flat, where);
  const Reduction red = ReductionOf(opts.reduceOp, flat.scalar_type(), where);
  red.ScaleOwn(flat);
  const hoop_op_t op = red.op;
  Tensors outs = tensors;
  return Start(
      "hoop:allreduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, tensors, {flat},
      [outs, flat]() mutable { SplitInto(flat, outs); },
      [&](const Slot& s) { return HOOP_ISSUE(s, allreduce, comm_, Ptr(flat), Ptr(flat), Count(flat), dt, op); });
}

ProcessGroupHoop::Work ProcessGroupHoop::reduce(Tensors& tensors, const c10d::ReduceOptions& opts) {
  const std::string where = Where("reduce");
  const at::Tensor& t = One(tensors, where);
  const Reduction red = ReductionOf(opts.reduceOp, t.scalar_type(), where);
  at::Tensor d = red.Input(Dense(t));
  const hoop_dtype_t dt = DtypeOf(t, where);
  const hoop_op_t op = red.op;
  const int root = static_cast<int>(opts.rootRank);
  return Start("hoop:reduce", c10d::OpType::REDUCE, tensors, {d}, root == getRank() ? BackInto(t, d) : nullptr,
               [&](const Slot& s) { return HOOP_ISSUE(s, reduce, comm_, Ptr(d), Ptr(d), Count(d), dt, op, root); });
}

ProcessGroupHoop::Work ProcessGroupHoop::allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                   const c10d::AllgatherOptions&) {
  const std::string where = Where("allgather");
  const at::Tensor& in = One(inputs, where);
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), where, ": one list of ",
              getSize(), " output tensors (one per rank)");
  if (Uneven(outputs[0], in)) return AllgatherUneven(outputs[0], in, where);
  SameAs(outputs[0], in, where, "output");
  at::Tensor d = Dense(in);
  at::Tensor flat = at::empty({static_cast<int64_t>(getSize()) * in.numel()}, in.options());
  const hoop_dtype_t dt = DtypeOf(in, where);
  Tensors outs = outputs[0];
  return Start(
      "hoop:allgather", c10d::OpType::ALLGATHER, outputs[0], {d, flat},
      [outs, flat]() mutable { SplitInto(flat, outs); },
      [&](const Slot& s) { return HOOP_ISSUE(s, allgather, comm_, Ptr(d), Ptr(flat), Count(d), dt); });
}

ProcessGroupHoop::Work ProcessGroupHoop::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                         const c10d::AllgatherOptions&) {
  const std::string where = Where("allgather_into_tensor");
  CheckTensor(input, where);
  CheckTensor(output, where);
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * getSize(), where,
              ": the output must hold ", getSize(), " x ", input.numel(), " elements of ", input.scalar_type());
  at::Tensor d = Dense(input), o = Dense(output);
  const hoop_dtype_t dt = DtypeOf(input, where);
  return Start("hoop:_allgather_base", c10d::OpType::_ALLGATHER_BASE, {output}, {d, o}, BackInto(output, o),
               [&](const Slot& s) { return HOOP_ISSUE(s, allgather, comm_, Ptr(d), Ptr(o), Count(d), dt); });
}

ProcessGroupHoop::Work ProcessGroupHoop::gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                const c10d::GatherOptions& opts) {
  const std::string where = Where("gather");
  const at::Tensor& in = One(inputs, where);
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor d = Dense(in);
  at::Tensor flat;
  Tensors outs;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), where,
                ": the root needs one list of ", getSize(), " output tensors");
    SameAs(outputs[0], in, where, "output");
    flat = at::empty({static_cast<int64_t>(getSize()) * in.numel()}, in.options());
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), where,
                ": only the root takes output tensors");
  }
  const hoop_dtype_t dt = DtypeOf(in, where);
  std::function<void()> after;
  if (flat.defined()) after = [outs, flat]() mutable { SplitInto(flat, outs); };
  return Start("hoop:gather", c10d::OpType::GATHER, outs, {d, flat.defined() ? flat : d}, after, [&](const Slot& s) {
    return HOOP_ISSUE(s, gather, comm_, Ptr(d), flat.defined() ? Ptr(flat) : nullptr, Count(d), dt, root);
  });
}

ProcessGroupHoop::Work ProcessGroupHoop::scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                 const c10d::ScatterOptions& opts) {
  const std::string where = Where("scatter");
  const at::Tensor& out = One(outputs, where);
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor flat;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), where,
                ": the root needs one list of ", getSize(), " input tensors");
    SameAs(inputs[0], out, where, "input");
    flat = Joined(inputs[0], out);
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), where,
                ": only the root takes input tensors");
  }
  at::Tensor o = Dense(out);
  const hoop_dtype_t dt = DtypeOf(out, where);
  return Start("hoop:scatter", c10d::OpType::SCATTER, outputs, {o, flat.defined() ? flat : o}, BackInto(out, o),
               [&](const Slot& s) {
                 return HOOP_ISSUE(s, scatter, comm_, flat.defined() ? Ptr(flat) : nullptr, Ptr(o), Count(o), dt, root);
               });
}

ProcessGroupHoop::Work ProcessGroupHoop::reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                        const c10d::ReduceScatterOptions& opts) {
  const std::string where = Where("reduce_scatter");
  const at::Tensor& out = One(outputs, where);
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), where, ": one list of ", getSize(),
              " input tensors (one per rank)");
  const Reduction red = ReductionOf(opts.reduceOp, out.scalar_type(), where);
  if (Uneven(inputs[0], out)) return ReduceScatterUneven(outputs, inputs[0], red, where);
  SameAs(inputs[0], out, where, "input");
  at::Tensor flat = Joined(inputs[0], out), o = Dense(out);
  const hoop_dtype_t dt = DtypeOf(out, where);
  red.ScaleOwn(flat);
  const hoop_op_t op = red.op;
  return Start(
      "hoop:reduce_scatter", c10d::OpType::REDUCE_SCATTER, outputs, {flat, o}, BackInto(out, o),
      [&](const Slot& s) { return HOOP_ISSUE(s, reduce_scatter, comm_, Ptr(flat), Ptr(o), Count(o), dt, op); });
}

ProcessGroupHoop::Work ProcessGroupHoop::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                              const c10d::ReduceScatterOptions& opts) {
  const std::string where = Where("reduce_scatter_tensor");
  CheckTensor(input, where);
  CheckTensor(output, where);
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && input.numel() == output.numel() * getSize(), where,
              ": the input must hold ", getSize(), " x ", output.numel(), " elements of ", output.scalar_type());
  const Reduction red = ReductionOf(opts.reduceOp, input.scalar_type(), where);
  at::Tensor d = red.Input(Dense(input)), o = Dense(output);
  const hoop_dtype_t dt = DtypeOf(input, where);
  const hoop_op_t op = red.op;
  return Start("hoop:_reduce_scatter_base", c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {d, o}, BackInto(output, o),
               [&](const Slot& s) { return HOOP_ISSUE(s, reduce_scatter, comm_, Ptr(d), Ptr(o), Count(o), dt, op); });
}

ProcessGroupHoop::Work ProcessGroupHoop::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                       std::vector<int64_t>& output_splits,
                                                       std::vector<int64_t>& input_splits,
                                                       const c10d::AllToAllOptions&) {
  const std::string where = Where("all_to_all_single");
  CheckTensor(input, where);
  CheckTensor(output, where);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), where, ": input ", input.scalar_type(), ", output ",
              output.scalar_type());
  const size_t n = static_cast<size_t>(getSize());
  // Splits are rows of the first dimension; hoop counts elements.
  auto counts = [&](const std::vector<int64_t>& splits, const at::Tensor& t, const char* what) {
    const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
    const int64_t per_row = rows > 0 ? static_cast<int64_t>(Count(t)) / rows : 0;  // hoop's elements
    std::vector<size_t> c(n);
    if (splits.empty()) {
      TORCH_CHECK(rows % static_cast<int64_t>(n) == 0, where, ": the ", what, "'s first dimension (", rows,
                  ") does not split into ", n, " equal parts");
      for (auto& x : c) x = static_cast<size_t>(rows / static_cast<int64_t>(n) * per_row);
    } else {
      TORCH_CHECK(splits.size() == n, where, ": ", what, " split sizes need one entry per rank (", n, ")");
      TORCH_CHECK(std::accumulate(splits.begin(), splits.end(), int64_t{0}) == rows, where, ": the ", what,
                  " split sizes do not add up to its first dimension (", rows, ")");
      for (size_t p = 0; p < n; ++p) c[p] = static_cast<size_t>(splits[p] * per_row);
    }
    return c;
  };
  auto sc = counts(input_splits, input, "input"), rc = counts(output_splits, output, "output");
  std::vector<size_t> sd(n, 0), rd(n, 0);
  std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), size_t{0});
  std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), size_t{0});
  at::Tensor d = Dense(input), o = Dense(output);
  const hoop_dtype_t dt = DtypeOf(input, where);
  return Start("hoop:alltoall_base", c10d::OpType::ALLTOALL_BASE, {output}, {d, o}, BackInto(output, o),
               [&](const Slot& s) {
                 return HOOP_ISSUE(s, alltoallv, comm_, Ptr(d), sc.data(), sd.data(), Ptr(o), rc.data(), rd.data(), dt);
               });
}

ProcessGroupHoop::Work ProcessGroupHoop::alltoall(Tensors& outputs, Tensors& inputs, const c10d::AllToAllOptions&) {
  const std::string where = Where("all_to_all");
  const size_t n = static_cast<size_t>(getSize());
  TORCH_CHECK(outputs.size() == n && inputs.size() == n, where, ": one input and one output tensor per rank (", n, ")");
  for (const auto& t : inputs) CheckTensor(t, where);
  for (const auto& t : outputs) {
    CheckTensor(t, where);
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), where, ": tensors of one dtype only");
  }
  std::vector<size_t> sc(n), rc(n), sd(n, 0), rd(n, 0);
  for (size_t p = 0; p < n; ++p) {
    sc[p] = Count(inputs[p]);
    rc[p] = Count(outputs[p]);
  }
  std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), size_t{0});
  std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), size_t{0});
  at::Tensor in = Joined(inputs, inputs[0]);
  at::Tensor out =
      at::empty({static_cast<int64_t>(std::accumulate(rc.begin(), rc.end(), size_t{0}))}, outputs[0].options());
  const hoop_dtype_t dt = DtypeOf(inputs[0], where);
  Tensors outs = outputs;
  return Start(
      "hoop:alltoall", c10d::OpType::ALLTOALL, outputs, {in, out}, [outs, out]() mutable { SplitInto(out, outs); },
      [&](const Slot& s) {
        return HOOP_ISSUE(s, alltoallv, comm_, Ptr(in), sc.data(), sd.data(), Ptr(out), rc.data(), rd.data(), dt);
      });
}

ProcessGroupHoop::Work ProcessGroupHoop::barrier(const c10d::BarrierOptions&) {
  return Start("hoop:barrier", c10d::OpType::BARRIER, {}, {}, nullptr,
               [&](const Slot& s) { return hoop_ibarrier(comm_, s.request); });
}

ProcessGroupHoop::Work ProcessGroupHoop::send(Tensors& tensors, int dst, int tag) {
  const std::string where = Where("send");
  const at::Tensor& t = One(tensors, where);
  at::Tensor d = Dense(t);
  const hoop_dtype_t dt = DtypeOf(t, where);
  return Start(
      "hoop:send", c10d::OpType::SEND, tensors, {d}, nullptr,
      [&](const Slot& s) { return HOOP_ISSUE(s, send, comm_, Ptr(d), Count(d), dt, dst, tag); }, PeerCall{dst, false});
}

ProcessGroupHoop::Work ProcessGroupHoop::recv(Tensors& tensors, int src, int tag) {
  const std::string where = Where("recv");
  const at::Tensor& t = One(tensors, where);
  at::Tensor d = Dense(t);
  const hoop_dtype_t dt = DtypeOf(t, where);
  TORCH_CHECK(src != HOOP_ANY_SOURCE || !t.is_cuda(), where,
              ": a receive from any source takes a CPU tensor (on a CUDA stream the source must be named)");
  return Start(
      "hoop:recv", c10d::OpType::RECV, tensors, {d}, BackInto(t, d),
      [&](const Slot& s) {
        return s.on_stream ? hoop_recv_stream(comm_, Ptr(d), Count(d), dt, src, tag, s.stream)
                           : hoop_irecv(comm_, Ptr(d), Count(d), dt, src, tag, s.info, s.request);
      },
      PeerCall{src, true});
}

ProcessGroupHoop::Work ProcessGroupHoop::recvAnysource(Tensors& tensors, int tag) {
  return recv(tensors, HOOP_ANY_SOURCE, tag);
}

}  // namespace hoop::torch_ext
