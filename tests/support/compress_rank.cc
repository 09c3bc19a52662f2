// hoop-test-rank's checks of wire compression (collectives/kernels/wire.h), run on every rank:
//
//   compress           fp16 and bf16 x f32, f64 x sum, avg x counts {0, 1, 7, 1000, 100003}
//                      x out of place / in place, on mixed-magnitude data well beyond fp16's
//                      range: every element inside the bound the header states, against an f64
//                      reference, and every rank with the same bits. Then inf and NaN travel
//                      through; error feedback makes the mean of repeated calls converge;
//                      calls compression cannot serve are refused, naming the cause.
//   compress_mismatch  rank 0 asks for fp16, the others for nothing: every rank fails naming it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/testing/reference.h"

namespace hoop {
namespace {

struct Checker {
  Communicator& c;
  int checks = 0, failures = 0;
  double worst = 0;

  void Fail(const std::string& what) {
    ++failures;
    std::printf("FAIL %s\n", what.c_str());
  }
  uint64_t Hash(const void* p, size_t bytes) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
    return h;
  }
  // Every rank must hold the same bits: all hashes gathered and compared.
  bool SameEverywhere(const void* p, size_t bytes) {
    int64_t h = static_cast<int64_t>(Hash(p, bytes));
    std::vector<int64_t> all(static_cast<size_t>(c.size()));
    if (!c.Allgather({&h, 1, DType::kI64}, {all.data(), all.size(), DType::kI64}).Wait().ok()) return false;
    for (int64_t x : all)
      if (x != h) return false;
    return true;
  }

  void OneCase(Compression z, DType dt, ReduceOp op, size_t count, bool in_place, uint64_t seed) {
    ++checks;
    const size_t n = static_cast<size_t>(c.size()), me = static_cast<size_t>(c.rank()), es = DTypeSize(dt);
    std::vector<std::vector<char>> in(n, std::vector<char>(count * es + 8));
    std::vector<const void*> ptrs;
    for (size_t r = 0; r < n; ++r) {
      FillMixed(dt, in[r].data(), count, seed * 131 + r);
      ptrs.push_back(in[r].data());
    }
    std::vector<char> out(count * es + 8, 0x5a);
    char* dst = out.data();
    if (in_place) std::memcpy(dst, in[me].data(), count * es);
    const char* src = in_place ? dst : in[me].data();
    CallOptions o;
    o.compression = z;
    const std::string what = std::string(CompressionName(z)) + " " + DTypeName(dt) + " " + ReduceOpName(op) +
                             " count " + std::to_string(count) + (in_place ? " in place" : "");
    Status s = c.Allreduce({const_cast<char*>(src), count, dt}, {dst, count, dt}, op, o).Wait();
    if (!s.ok()) return Fail(what + ": " + s.ToString());
    BoundCheck b = CheckCompressedBound(dt, op, z, ptrs, dst, count);
    worst = std::max(worst, b.worst);
    if (b.outside)
      Fail(what + ": " + std::to_string(b.outside) + " elements outside the bound, worst " + std::to_string(b.worst) +
           "x it");
    if (!SameEverywhere(dst, count * es)) Fail(what + ": ranks hold different bits");
  }

  // inf and NaN among large finite values travel as themselves; the finite ones stay finite.
  void Specials(Compression z) {
    ++checks;
    const size_t count = 1000;
    std::vector<float> x(count), out(count);
    for (size_t i = 0; i < count; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * (60000.0f + 1000.0f * static_cast<float>(i));
    if (c.rank() == 0) x[3] = INFINITY;
    if (c.rank() == c.size() - 1) x[5] = NAN;
    CallOptions o;
    o.compression = z;
    Status s = c.Allreduce({x.data(), count, DType::kF32}, {out.data(), count, DType::kF32}, ReduceOp::kSum, o).Wait();
    const std::string what = std::string(CompressionName(z)) + " with inf and NaN";
    if (!s.ok()) return Fail(what + ": " + s.ToString());
    if (!(out[3] == INFINITY)) Fail(what + ": inf became " + std::to_string(out[3]));
    if (!std::isnan(out[5]) && c.size() > 1) Fail(what + ": NaN became " + std::to_string(out[5]));
    for (size_t i = 0; i < count; ++i)
      if (i != 3 && i != 5 && !std::isfinite(out[i]))
        return Fail(what + ": finite sum at " + std::to_string(i) + " became " + std::to_string(out[i]));
  }

  // Error feedback: the same input K times. Without it every call makes the same error, so the
  // mean of the results is as far off as one; with it the errors telescope and the mean's error
  // shrinks like 1/K. Compared as the RMS relative to the bound, on f32 sums.
  void Feedback(Compression z) {
    ++checks;
    if (c.size() == 1) return;
    const size_t count = 100003, n = static_cast<size_t>(c.size());
    std::vector<std::vector<char>> in(n, std::vector<char>(count * 4));
    std::vector<const void*> ptrs;
    for (size_t r = 0; r < n; ++r) {
      FillMixed(DType::kF32, in[r].data(), count, 9000 + r);
      ptrs.push_back(in[r].data());
    }
    const float* mine = reinterpret_cast<const float*>(in[static_cast<size_t>(c.rank())].data());
    auto rms_of_mean = [&](bool feedback) -> double {
      const int K = 16;
      std::vector<float> out(count), residual(count, 0.0f);
      std::vector<double> sum(count, 0.0);
      CallOptions o;
      o.compression = z;
      o.residual = feedback ? residual.data() : nullptr;
      for (int k = 0; k < K; ++k) {
        if (!c.Allreduce({const_cast<float*>(mine), count, DType::kF32}, {out.data(), count, DType::kF32},
                         ReduceOp::kSum, o)
                 .Wait()
                 .ok())
          return -1;
        for (size_t i = 0; i < count; ++i) sum[i] += out[i];
      }
      const double g = CompressionErrorFactor(z, c.size());
      std::vector<double> exact(count, 0.0), a(count, 0.0);
      double m = 0, acc = 0;
      for (size_t i = 0; i < count; ++i) {
        for (const void* p : ptrs)
          exact[i] += static_cast<const float*>(p)[i], a[i] += std::fabs(static_cast<const float*>(p)[i]);
        m = std::max(m, a[i]);
      }
      for (size_t i = 0; i < count; ++i) {
        double rel = (sum[i] / K - exact[i]) / (g * (a[i] + std::ldexp(m, -24)));
        acc += rel * rel;
      }
      return std::sqrt(acc / count);
    };
    const double plain = rms_of_mean(false), fed = rms_of_mean(true);
    std::printf(
        "rank %d: %s error feedback: RMS error of the mean of 16 calls, relative to the bound: %.4f without, %.4f "
        "with\n",
        c.rank(), CompressionName(z), plain, fed);
    if (plain < 0 || fed < 0) return Fail(std::string(CompressionName(z)) + " error feedback: a call failed");
    if (!(fed < plain / 4))
      Fail(std::string(CompressionName(z)) + " error feedback did not shrink the error of the mean");
  }

  void Refusals() {
    std::vector<int32_t> ints(10);
    std::vector<float> f(10), res(10);
    auto expect = [&](const std::string& what, Status s, const std::string& says) {
      ++checks;
      if (s.code() != Code::kInvalidArgument || s.message().find(says) == std::string::npos)
        Fail(what + ": wanted an invalid-argument error saying '" + says + "', got " + s.ToString());
    };
    CallOptions o;
    o.compression = Compression::kFp16;
    expect("fp16 on i32",
           c.Allreduce({ints.data(), 10, DType::kI32}, {ints.data(), 10, DType::kI32}, ReduceOp::kSum, o).Wait(),
           "compression fp16 applies to f32 and f64 sum and avg, not i32 sum");
    expect("fp16 max", c.Allreduce({f.data(), 10, DType::kF32}, {f.data(), 10, DType::kF32}, ReduceOp::kMax, o).Wait(),
           "not f32 max");
    o.algo = Algo::kTree;
    expect("fp16 tree", c.Allreduce({f.data(), 10, DType::kF32}, {f.data(), 10, DType::kF32}, ReduceOp::kSum, o).Wait(),
           "compression runs the ring algorithm, not tree");
    CallOptions r;
    r.compression = Compression::kNone;
    r.residual = res.data();
    expect("residual without compression",
           c.Allreduce({f.data(), 10, DType::kF32}, {f.data(), 10, DType::kF32}, ReduceOp::kSum, r).Wait(),
           "residual (error feedback) was given with compression none");
  }
};

}  // namespace

int RunCompress(Communicator& c) {
  Checker k{c};
  uint64_t seed = 1;
  for (Compression z : {Compression::kFp16, Compression::kBf16})
    for (DType dt : {DType::kF32, DType::kF64})
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg})
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{100003}})
          for (bool in_place : {false, true}) k.OneCase(z, dt, op, count, in_place, seed++);
  for (Compression z : {Compression::kFp16, Compression::kBf16}) {
    k.Specials(z);
    k.Feedback(z);
  }
  k.Refusals();
  std::printf("rank %d: compress %s: %d checks, %d failed, worst error %.3f of the bound\n", c.rank(),
              k.failures ? "FAILED" : "ok", k.checks, k.failures, k.worst);
  return k.failures ? 1 : 0;
}

int RunCompressMismatch(Communicator& c) {
  std::vector<float> x(1 << 20, 1.0f), out(x.size());
  CallOptions o;
  o.compression = c.rank() == 0 ? Compression::kFp16 : Compression::kNone;
  Status s =
      c.Allreduce({x.data(), x.size(), DType::kF32}, {out.data(), out.size(), DType::kF32}, ReduceOp::kSum, o).Wait();
  std::printf("rank %d: %s\n", c.rank(), s.ToString().c_str());
  return s.ok() ? 0 : 1;
}

}  // namespace hoop
