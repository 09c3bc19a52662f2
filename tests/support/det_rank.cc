// hoop-test-rank's check of the deterministic mode (schedules/fold.cc), run on every rank:
//
//   deterministic [SEED [off]]   the communicator's deterministic mode on (off: left as
//                    HOOP_DETERMINISTIC says, to show the check fails without it); every rank makes every rank's
//                    input (order-sensitive data: mixed magnitudes, FillOrderSensitive) for
//                    f16, bf16, f32, f64 (and i32, u8, bool, the fp8s for the ops that apply)
//                    x sum, avg, prod, min, max x counts {0, 1, 7, 1001, 12289, 65539}, and checks bit
//                    for bit against the canonical fold (CanonicalReduce):
//                      allreduce out of place and in place, reduce (the root moving),
//                      reduce_scatter, reduce_scatterv (uneven blocks, some empty);
//                    then through the tensor fusion runtime: tensors of several dtypes and
//                    sizes submitted together, fused in an order the seed shuffles, and one
//                    alone (fuse = false). Prints "rank R: deterministic ok digest D checks C":
//                    D hashes every result, so runs that differ in transport, algorithm, chunk
//                    size, window, instruction set or fusion must print the same D for the same
//                    rank count and seed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/testing/reference.h"
#include "common/config.h"
#include "tensorfusion/runtime.h"

namespace hoop {
namespace {

using fusion::FusionOptions;
using fusion::Handle;
using fusion::Runtime;
using fusion::TensorOptions;

struct DetCheck {
  Communicator& c;
  uint64_t seed;
  int checks = 0, failures = 0;
  uint64_t digest = 1469598103934665603ull;

  void Mix(const void* p, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) digest = (digest ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  }
  // Every rank's input for one case, made alike on every rank.
  std::vector<std::vector<char>> Inputs(DType d, size_t count, uint64_t tag) {
    std::vector<std::vector<char>> in(static_cast<size_t>(c.size()), std::vector<char>(count * DTypeSize(d) + 1));
    for (int r = 0; r < c.size(); ++r)
      FillOrderSensitive(d, in[static_cast<size_t>(r)].data(), count,
                         seed * 1000003 + tag * 131 + static_cast<uint64_t>(r));
    return in;
  }
  static std::vector<const void*> Ptrs(const std::vector<std::vector<char>>& in, size_t offset = 0) {
    std::vector<const void*> p;
    for (const auto& v : in) p.push_back(v.data() + offset);
    return p;
  }
  void Expect(const Status& s, const void* got, const void* want, size_t bytes, const std::string& what) {
    ++checks;
    if (!s.ok()) {
      ++failures;
      std::printf("FAIL rank %d: %s: %s\n", c.rank(), what.c_str(), s.ToString().c_str());
      return;
    }
    Mix(got, bytes);
    if (bytes > 0 && std::memcmp(got, want, bytes) != 0) {
      ++failures;
      std::printf("FAIL rank %d: %s: bits differ from the canonical fold\n", c.rank(), what.c_str());
    }
  }

  void Case(DType d, ReduceOp op, size_t count, uint64_t tag) {
    const int n = c.size(), me = c.rank();
    const size_t es = DTypeSize(d), bytes = count * es;
    const std::string what = std::string(DTypeName(d)) + " " + ReduceOpName(op) + " count " + std::to_string(count);
    auto in = Inputs(d, count, tag);
    std::vector<char> want(bytes + 1), got(bytes + 1);
    CanonicalReduce(d, op, Ptrs(in), want.data(), count);
    Buffer mine{in[static_cast<size_t>(me)].data(), count, d};
    Expect(c.Allreduce(mine, {got.data(), count, d}, op).Wait(), got.data(), want.data(), bytes, "allreduce " + what);
    std::vector<char> inplace = in[static_cast<size_t>(me)];
    Expect(c.Allreduce({inplace.data(), count, d}, {inplace.data(), count, d}, op).Wait(), inplace.data(), want.data(),
           bytes, "in-place allreduce " + what);
    const int root = static_cast<int>(tag % static_cast<uint64_t>(n));
    std::vector<char> rgot(bytes + 1);
    Status rs = c.Reduce(mine, {rgot.data(), count, d}, op, root).Wait();
    if (me == root) Expect(rs, rgot.data(), want.data(), bytes, "reduce to " + std::to_string(root) + " " + what);
    // reduce_scatter: `count` per block, from inputs of n x count.
    auto big = Inputs(d, count * static_cast<size_t>(n), tag + 7);
    std::vector<char> bwant(bytes + 1), bgot(bytes + 1);
    CanonicalReduce(d, op, Ptrs(big, static_cast<size_t>(me) * bytes), bwant.data(), count);
    Expect(c.ReduceScatter({big[static_cast<size_t>(me)].data(), count * static_cast<size_t>(n), d},
                           {bgot.data(), count, d}, op)
               .Wait(),
           bgot.data(), bwant.data(), bytes, "reduce_scatter " + what);
    // reduce_scatterv: uneven blocks, halving (rank 0's the largest, later ones often empty).
    std::vector<size_t> counts(static_cast<size_t>(n), 0);
    size_t left = count, at = 0;
    for (int r = 0; r + 1 < n; ++r) left -= counts[static_cast<size_t>(r)] = left / 2 + (left % 2);
    counts.back() += left;
    for (int r = 0; r < me; ++r) at += counts[static_cast<size_t>(r)];
    const size_t mb = counts[static_cast<size_t>(me)] * es;
    std::vector<char> vwant(mb + 1), vgot(mb + 1);
    CanonicalReduce(d, op, Ptrs(in, at * es), vwant.data(), counts[static_cast<size_t>(me)]);
    Expect(c.ReduceScatterv(mine, {vgot.data(), counts[static_cast<size_t>(me)], d}, counts, op).Wait(), vgot.data(),
           vwant.data(), mb, "reduce_scatterv " + what);
  }

  // Tensors of several dtypes and sizes through the fusion runtime at once, in a seeded order,
  // and one alone: each must be the canonical fold whatever it was packed beside.
  void Fused(const Config& cfg) {
    FusionOptions fo = FusionOptions::FromConfig(cfg);
    auto rt = Runtime::Start(c, fo);
    ++checks;
    if (!rt.ok()) {
      ++failures;
      std::printf("FAIL rank %d: fusion runtime: %s\n", c.rank(), rt.status().ToString().c_str());
      return;
    }
    struct T {
      DType d;
      ReduceOp op;
      size_t count;
      bool fuse;
    };
    std::vector<T> ts = {{DType::kF32, ReduceOp::kSum, 1001, true},  {DType::kBF16, ReduceOp::kAvg, 77, true},
                         {DType::kF64, ReduceOp::kSum, 4099, true},  {DType::kF16, ReduceOp::kSum, 3, true},
                         {DType::kF32, ReduceOp::kAvg, 65539, true}, {DType::kF32, ReduceOp::kSum, 513, false}};
    std::vector<size_t> order(ts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<uint32_t>(seed)));
    std::vector<std::vector<std::vector<char>>> ins(ts.size());
    std::vector<std::vector<char>> got(ts.size()), want(ts.size());
    std::vector<Handle> hs(ts.size());
    for (size_t i : order) {
      const T& t = ts[i];
      ins[i] = Inputs(t.d, t.count, 900 + i);
      want[i].resize(t.count * DTypeSize(t.d) + 1);
      got[i].resize(want[i].size());
      CanonicalReduce(t.d, t.op, Ptrs(ins[i]), want[i].data(), t.count);
      TensorOptions o;
      o.fuse = t.fuse;
      hs[i] = (*rt)->Allreduce("det" + std::to_string(i), {ins[i][static_cast<size_t>(c.rank())].data(), t.count, t.d},
                               {got[i].data(), t.count, t.d}, t.op, o);
    }
    for (size_t i = 0; i < ts.size(); ++i)
      Expect(hs[i].Wait(), got[i].data(), want[i].data(), ts[i].count * DTypeSize(ts[i].d),
             std::string("fused allreduce ") + DTypeName(ts[i].d) + " count " + std::to_string(ts[i].count));
    Status s = (*rt)->Shutdown();
    if (!s.ok()) std::printf("FAIL rank %d: fusion shutdown: %s\n", c.rank(), s.ToString().c_str());
    failures += s.ok() ? 0 : 1;
  }
};

}  // namespace

int RunDeterministic(Communicator& c, const Config& cfg, uint64_t seed, bool on) {
  if (on) c.SetDeterministic(true);
  DetCheck k{c, seed};
  uint64_t tag = 0;
  for (DType d : kAllDTypes)
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      if (!OpApplies(d, op)) continue;
      // The float types at every count; the others, whose results no order changes, at two.
      const bool fl = d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 || d == DType::kF64;
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{12289}, size_t{65539}}) {
        ++tag;
        if (!fl && count != 7 && count != 1001) continue;
        k.Case(d, op, count, tag);
      }
    }
  k.Fused(cfg);
  std::printf("rank %d: deterministic %s digest %016llx checks %d\n", c.rank(), k.failures ? "FAILED" : "ok",
              static_cast<unsigned long long>(k.digest), k.checks);
  return k.failures ? 1 : 0;
}

}  // namespace hoop
