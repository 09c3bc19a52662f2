// hoop-probe-rank: a rank that uses hoop as a careless or unlucky user would, through the public
// C API alone (it includes nothing but <hoop/hoop.h>). The hardening tests run it under hooprun.
//
//   init_finalize        init, then finalize at once, no collective (the shm start-up race)
//   counts               every entry point given counts whose byte size overflows, or that no
//                        call can address: each must be refused, naming rank, call and count
//   roots R0,R1,...  N   broadcast of N f32 with rank r passing root R[r % k]; prints the
//                        outcome and a digest of the data, then the next call's outcome
//   two_comms            two communicators from one job, each running its own allreduce
//   after_finalize       calls on a finalized communicator, a second finalize
//   fusion_misuse        a second fusion start, a call after stop, a second stop
//   crash segv|abort     dies by that signal after init (the exit hooprun must report)
//   stop R               rank R stops itself (SIGSTOP) before an allreduce the others wait in
// Every line it prints starts with "rank R:"; "FAIL" marks a broken promise. Extra arguments (a
// marker the tests use to find stray processes) are ignored.
#include <hoop/hoop.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/usage_answer.h"

namespace {

int g_rank = -1;  // for messages only; set once init succeeded

int Fail(const char* what) {
  std::printf("rank %d: FAIL %s: %s\n", g_rank, what, hoop_last_error());
  return 1;
}

hoop_comm_t Init() {
  hoop_comm_t c = nullptr;
  if (hoop_init_from_env(&c) != HOOP_SUCCESS) {
    std::printf("rank ?: FAIL init: %s\n", hoop_last_error());
    std::exit(1);
  }
  hoop_rank(c, &g_rank);
  return c;
}

// A refused call must be HOOP_ERR_INVALID_ARGUMENT and its message must name this rank, the call
// and every word in `names` (the count, typically).
int ExpectRefused(hoop_status_t s, const char* call, const std::vector<std::string>& names) {
  std::string msg = hoop_last_error();
  bool ok = s == HOOP_ERR_INVALID_ARGUMENT && msg.find("rank " + std::to_string(g_rank)) != std::string::npos &&
            msg.find(call) != std::string::npos;
  for (const std::string& n : names) ok = ok && msg.find(n) != std::string::npos;
  std::printf("rank %d: %s %s: %s: %s\n", g_rank, ok ? "refused" : "FAIL", call, hoop_status_string(s), msg.c_str());
  return ok ? 0 : 1;
}

int Counts(hoop_comm_t c) {
  int size = 0;
  hoop_size(c, &size);
  float small[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  const size_t k62 = size_t{1} << 62, k63 = size_t{1} << 63;
  int bad = 0;
  // 2^62 f32 is exactly 2^64 bytes: a wrapped product of 0 ("success, nothing done").
  bad += ExpectRefused(hoop_allreduce(c, small, out, k62, HOOP_F32, HOOP_SUM), "allreduce", {std::to_string(k62)});
  // 2^62 + 1 f32: 4 bytes after wrapping.
  bad +=
      ExpectRefused(hoop_allreduce(c, small, out, k62 + 1, HOOP_F32, HOOP_SUM), "allreduce", {std::to_string(k62 + 1)});
  hoop_allreduce_opts_t none = {HOOP_COMPRESSION_NONE, nullptr};
  bad += ExpectRefused(hoop_allreduce_ex(c, small, out, k62 + 1, HOOP_F32, HOOP_SUM, &none), "allreduce",
                       {std::to_string(k62 + 1)});
  bad += ExpectRefused(hoop_broadcast(c, small, out, k62 + 2, HOOP_F32, 0), "broadcast", {std::to_string(k62 + 2)});
  // Fits in bytes, not in size x count: 2^63 / size + 1 elements per rank.
  const size_t per_rank = size > 1 ? k63 / static_cast<size_t>(size) + 1 : k63 + 4;
  bad += ExpectRefused(hoop_allgather(c, small, out, per_rank, HOOP_U8), "allgather", {std::to_string(per_rank)});
  bad += ExpectRefused(hoop_reduce_scatter(c, small, out, k63 + 4, HOOP_F32, HOOP_SUM), "reduce_scatter",
                       {std::to_string(k63 + 4)});
  // Byte sizes that fit in 64 bits but not in memory: more than PTRDIFF_MAX, and past the end of
  // the address space from a buffer near its top.
  bad +=
      ExpectRefused(hoop_allreduce(c, small, out, k63 + 8, HOOP_U8, HOOP_MAX), "allreduce", {std::to_string(k63 + 8)});
  void* top = reinterpret_cast<void*>(UINTPTR_MAX - 64);
  bad += ExpectRefused(hoop_allreduce(c, top, top, 1000, HOOP_F64, HOOP_SUM), "allreduce", {"1000"});
  // Addressable bytes, but more chunks than a call's message tags can number (2^24 chunks).
  const size_t huge = size_t{1} << 45;
  bad += ExpectRefused(hoop_allreduce(c, small, out, huge, HOOP_F32, HOOP_SUM), "allreduce", {std::to_string(huge)});

  hoop_fusion_t f = nullptr;
  if (hoop_fusion_start(c, &f) != HOOP_SUCCESS) return Fail("fusion start");
  hoop_handle_t h = 0;
  bad += ExpectRefused(
      hoop_fusion_allreduce(f, "a", small, out, k62 + 1, HOOP_F32, HOOP_SUM, nullptr, nullptr, nullptr, &h),
      "tensor 'a'", {std::to_string(k62 + 1)});
  bad += ExpectRefused(hoop_fusion_broadcast(f, "b", small, out, k62 + 2, HOOP_F32, 0, nullptr, nullptr, &h),
                       "tensor 'b'", {std::to_string(k62 + 2)});
  bad += ExpectRefused(hoop_fusion_allgather(f, "g", small, out, per_rank, HOOP_U8, nullptr, nullptr, &h), "tensor 'g'",
                       {std::to_string(per_rank)});
  // The runtime still works.
  float t[4] = {1, 1, 1, 1};
  if (hoop_fusion_allreduce(f, "ok", t, t, 4, HOOP_F32, HOOP_SUM, nullptr, nullptr, nullptr, &h) != HOOP_SUCCESS ||
      hoop_fusion_wait(f, h) != HOOP_SUCCESS || t[0] != static_cast<float>(size))
    return Fail("fusion allreduce after refusals");
  if (hoop_fusion_stop(f) != HOOP_SUCCESS) return Fail("fusion stop");
  // And so does the communicator: nothing was sent, nothing poisoned.
  if (hoop_allreduce(c, small, out, 4, HOOP_F32, HOOP_SUM) != HOOP_SUCCESS) return Fail("allreduce after refusals");
  if (out[3] != 4.0f * static_cast<float>(size)) return Fail("allreduce result after refusals");
  std::printf("rank %d: counts %s\n", g_rank, bad ? "FAILED" : "ok");
  return bad ? 1 : hoop_finalize(c) == HOOP_SUCCESS ? 0 : Fail("finalize");
}

uint64_t Digest(const float* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, p + i, 4);
    h = (h ^ b) * 1099511628211ull;
  }
  return h;
}

int Roots(hoop_comm_t c, const char* list, size_t count) {
  std::vector<int> roots;
  for (const char* p = list; *p;) {
    roots.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  const int root = roots[static_cast<size_t>(g_rank) % roots.size()];
  // Every rank's input says whose it is, so a digest tells whose data a rank ended with.
  std::vector<float> in(count), out(count, -1.0f);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(g_rank * 1000 + static_cast<int>(i % 997));
  hoop_status_t s = hoop_broadcast(c, in.data(), out.data(), count, HOOP_F32, root);
  if (s == HOOP_SUCCESS) {
    std::vector<float> want(count);
    for (size_t i = 0; i < count; ++i) want[i] = static_cast<float>(root * 1000 + static_cast<int>(i % 997));
    std::printf("rank %d: root %d: success, %s data\n", g_rank, root,
                Digest(out.data(), count) == Digest(want.data(), count) ? "root's" : "WRONG");
  } else {
    std::printf("rank %d: root %d: %s: %s\n", g_rank, root, hoop_status_string(s), hoop_last_error());
  }
  std::fflush(stdout);
  hoop_status_t next = hoop_barrier(c);
  std::printf("rank %d: next call: %s\n", g_rank, hoop_status_string(next));
  hoop_finalize(c);
  return s == HOOP_SUCCESS ? 0 : 1;
}

int TwoComms() {
  hoop_comm_t a = Init();
  hoop_comm_t b = Init();
  int size = 0;
  hoop_size(a, &size);
  // Different data on each, and calls interleaved, so crossed wires cannot go unnoticed.
  for (int round = 0; round < 3; ++round) {
    int xa[3] = {g_rank, 1, round}, xb[3] = {100 * g_rank, 2, 10 * round};
    if (hoop_allreduce(a, xa, xa, 3, HOOP_I32, HOOP_SUM) != HOOP_SUCCESS) return Fail("allreduce on the first");
    if (hoop_allreduce(b, xb, xb, 3, HOOP_I32, HOOP_SUM) != HOOP_SUCCESS) return Fail("allreduce on the second");
    const int ranks_sum = size * (size - 1) / 2;
    if (xa[0] != ranks_sum || xa[1] != size || xa[2] != size * round || xb[0] != 100 * ranks_sum || xb[1] != 2 * size ||
        xb[2] != 10 * round * size) {
      std::printf("rank %d: FAIL wrong results: first {%d %d %d}, second {%d %d %d}\n", g_rank, xa[0], xa[1], xa[2],
                  xb[0], xb[1], xb[2]);
      return 1;
    }
  }
  if (hoop_finalize(b) != HOOP_SUCCESS || hoop_finalize(a) != HOOP_SUCCESS) return Fail("finalize");
  std::printf("rank %d: two communicators ok\n", g_rank);
  return 0;
}

int AfterFinalize(hoop_comm_t c) {
  if (hoop_finalize(c) != HOOP_SUCCESS) return Fail("finalize");
  float x = 1;
  int r = 0, bad = 0;
  bad += ExpectRefused(hoop_allreduce(c, &x, &x, 1, HOOP_F32, HOOP_SUM), "hoop_allreduce", {"finalized"});
  bad += ExpectRefused(hoop_barrier(c), "hoop_barrier", {"finalized"});
  bad += ExpectRefused(hoop_rank(c, &r), "hoop_rank", {"finalized"});
  hoop_fusion_t f = nullptr;
  bad += ExpectRefused(hoop_fusion_start(c, &f), "hoop_fusion_start", {"finalized"});
  bad += ExpectRefused(hoop_finalize(c), "hoop_finalize", {"finalized"});
  std::printf("rank %d: after_finalize %s\n", g_rank, bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}

int FusionMisuse(hoop_comm_t c) {
  hoop_fusion_t f = nullptr, again = nullptr;
  if (hoop_fusion_start(c, &f) != HOOP_SUCCESS) return Fail("fusion start");
  int bad = 0;
  // A second start on a busy communicator is refused and leaves the caller's handle as it was.
  again = f;
  bad += ExpectRefused(hoop_fusion_start(c, &again), "hoop_fusion_start", {"already"});
  if (again != f) {
    std::printf("rank %d: FAIL a refused hoop_fusion_start overwrote the caller's handle\n", g_rank);
    ++bad;
  }
  float x[2] = {1, 2};
  hoop_handle_t h = 0;
  if (hoop_fusion_allreduce(f, "x", x, x, 2, HOOP_F32, HOOP_SUM, nullptr, nullptr, nullptr, &h) != HOOP_SUCCESS ||
      hoop_fusion_wait(f, h) != HOOP_SUCCESS)
    return Fail("fusion allreduce");
  if (hoop_fusion_stop(f) != HOOP_SUCCESS) return Fail("fusion stop");
  bad += ExpectRefused(hoop_fusion_allreduce(f, "x", x, x, 2, HOOP_F32, HOOP_SUM, nullptr, nullptr, nullptr, &h),
                       "hoop_fusion_allreduce", {"stopped"});
  bad += ExpectRefused(hoop_fusion_wait(f, h), "hoop_fusion_wait", {"stopped"});
  bad += ExpectRefused(hoop_fusion_synchronize(f), "hoop_fusion_synchronize", {"stopped"});
  bad += ExpectRefused(hoop_fusion_stop(f), "hoop_fusion_stop", {"stopped"});
  // The communicator is free for direct calls again.
  if (hoop_allreduce(c, x, x, 2, HOOP_F32, HOOP_SUM) != HOOP_SUCCESS) return Fail("allreduce after fusion stop");
  if (hoop_finalize(c) != HOOP_SUCCESS) return Fail("finalize");
  std::printf("rank %d: fusion_misuse %s\n", g_rank, bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}

int Crash(const char* how) {
  std::printf("rank %d: crashing by %s\n", g_rank, how);
  std::fflush(stdout);
  if (std::strcmp(how, "abort") == 0) std::abort();
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return 0;
}

int Stop(hoop_comm_t c, int who) {
  float x[1024];
  for (float& v : x) v = 1;
  if (g_rank == who) {
    std::printf("rank %d: stopping myself\n", g_rank);
    std::fflush(stdout);
    ::raise(SIGSTOP);
  }
  hoop_status_t s = hoop_allreduce(c, x, x, 1024, HOOP_F32, HOOP_SUM);
  std::printf("rank %d: allreduce: %s: %s\n", g_rank, hoop_status_string(s), hoop_last_error());
  hoop_finalize(c);
  return s == HOOP_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* usage =
      "usage: hoop-probe-rank init_finalize | counts | roots R0,R1,... N | two_comms | after_finalize"
      " | fusion_misuse | crash segv|abort | stop RANK\n"
      "  one rank of a hardening test of the C API, run under hooprun\n";
  if (int code = hoop::test::AnswerUsage(argc, argv, "hoop-probe-rank", usage); code >= 0) return code;
  const std::string mode = argv[1];
  if (mode == "two_comms") return TwoComms();
  if ((mode == "roots" && argc < 4) || ((mode == "crash" || mode == "stop") && argc < 3)) {
    std::fputs(usage, stderr);
    return 2;
  }
  hoop_comm_t c = Init();
  if (mode == "init_finalize") return hoop_finalize(c) == HOOP_SUCCESS ? 0 : Fail("finalize");
  if (mode == "counts") return Counts(c);
  if (mode == "roots") return Roots(c, argv[2], static_cast<size_t>(std::atol(argv[3])));
  if (mode == "after_finalize") return AfterFinalize(c);
  if (mode == "fusion_misuse") return FusionMisuse(c);
  if (mode == "crash") return Crash(argv[2]);
  if (mode == "stop") return Stop(c, std::atoi(argv[2]));
  std::fprintf(stderr, "hoop-probe-rank: unknown mode '%s'\n", mode.c_str());
  return 2;
}
