/* hoop's public C++ interface: a thin, header-only layer over the C API in hoop/hoop.h.
 *
 * It pulls in no internal header, so it is what a program built against an installed hoop
 * includes (find_package(hoop) or pkg-config hoop): hoop::api::Comm owns a communicator
 * (finalized when it goes out of scope), its calls take std::span of the element types hoop
 * reduces and throw hoop::api::Error (the status and hoop_last_error()'s message) where the C call
 * fails, and the nonblocking calls return a hoop::api::Request that waits or frees itself once.
 * Types without a C++ element type (f16, bf16) go through the C API with a hoop_dtype_t.
 *
 *   hoop::api::Comm comm = hoop::api::Comm::FromEnv();   // under hooprun, mpirun or Slurm
 *   std::vector<float> grad(n);
 *   comm.Allreduce<float>(grad, grad, HOOP_AVG);         // in place
 *   hoop::api::Request r = comm.Iallreduce<float>(grad, grad, HOOP_SUM);
 *   r.Wait();
 */
#ifndef HOOP_HOOP_HPP_
#define HOOP_HOOP_HPP_

// std::span and the rest need C++20. CMake's hoop::hoop carries it (cxx_std_20); with
// pkg-config, or a compiler whose default is older (g++ 12: gnu++17), say -std=c++20.
#if !defined(__cplusplus) || (__cplusplus < 202002L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 202002L))
#error "hoop/hoop.hpp needs C++20: compile with -std=c++20 (CMake's hoop::hoop target sets it; the C API, hoop/hoop.h, needs no C++ at all)"
#else  // the rest only where it can compile, so the one line above is all a compiler says

#include <hoop/hoop.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace hoop::api {

// A failed call: status() is the C status, what() names rank, call and cause.
class Error : public std::runtime_error {
 public:
  Error(hoop_status_t status, const std::string& what) : std::runtime_error(what), status_(status) {}
  hoop_status_t status() const noexcept { return status_; }

 private:
  hoop_status_t status_;
};

inline void Check(hoop_status_t s) {
  if (s != HOOP_SUCCESS) {
    const char* why = hoop_last_error();
    throw Error(s, why && *why ? why : hoop_status_string(s));
  }
}

// The hoop dtype of a C++ element type; other types do not compile.
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<std::uint8_t> { static constexpr hoop_dtype_t value = HOOP_U8; };
template <>
struct DTypeOf<std::int8_t> { static constexpr hoop_dtype_t value = HOOP_I8; };
template <>
struct DTypeOf<std::int16_t> { static constexpr hoop_dtype_t value = HOOP_I16; };
template <>
struct DTypeOf<std::uint16_t> { static constexpr hoop_dtype_t value = HOOP_U16; };
template <>
struct DTypeOf<std::int32_t> { static constexpr hoop_dtype_t value = HOOP_I32; };
template <>
struct DTypeOf<std::uint32_t> { static constexpr hoop_dtype_t value = HOOP_U32; };
template <>
struct DTypeOf<std::int64_t> { static constexpr hoop_dtype_t value = HOOP_I64; };
template <>
struct DTypeOf<std::uint64_t> { static constexpr hoop_dtype_t value = HOOP_U64; };
template <>
struct DTypeOf<float> { static constexpr hoop_dtype_t value = HOOP_F32; };
template <>
struct DTypeOf<double> { static constexpr hoop_dtype_t value = HOOP_F64; };
template <>
struct DTypeOf<bool> { static constexpr hoop_dtype_t value = HOOP_BOOL; };
static_assert(sizeof(bool) == 1, "HOOP_BOOL is one byte per element");

// A nonblocking call in flight. Move-only; Wait() returns once it finished (throwing its error),
// and a Request dropped unwaited waits in its destructor, since the buffers it reads and writes
// belong to the caller's scope.
class Request {
 public:
  Request() = default;
  explicit Request(hoop_request_t r) : r_(r) {}
  Request(Request&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  Request& operator=(Request&& o) noexcept {
    if (this != &o) {
      Drop();
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() { Drop(); }

  bool valid() const noexcept { return r_ != nullptr; }
  // True once the call finished; Wait() then returns at once.
  bool Test() {
    if (!r_) return true;
    int done = 0;
    Check(hoop_test(r_, &done));
    return done != 0;
  }
  void Wait() {
    if (!r_) return;
    Check(hoop_wait(std::exchange(r_, nullptr)));
  }

 private:
  void Drop() noexcept {
    if (r_) (void)hoop_wait(std::exchange(r_, nullptr));
  }
  hoop_request_t r_ = nullptr;
};

class Comm {
 public:
  // The rank, size and store from the environment hooprun, mpirun or Slurm sets.
  static Comm FromEnv() {
    hoop_comm_t c = nullptr;
    Check(hoop_init_from_env(&c));
    return Comm(c);
  }
  Comm(int rank, int size, const std::string& store_url, const std::string& token) {
    Check(hoop_init(&c_, rank, size, store_url.c_str(), token.c_str()));
  }
  Comm(Comm&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  Comm& operator=(Comm&& o) noexcept {
    if (this != &o) {
      if (c_) (void)hoop_finalize(c_);
      c_ = std::exchange(o.c_, nullptr);
    }
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() {
    if (c_) (void)hoop_finalize(c_);
  }

  hoop_comm_t get() const noexcept { return c_; }  // for the C calls this layer does not wrap
  int rank() const { return Get(hoop_rank); }
  int size() const { return Get(hoop_size); }
  int local_rank() const { return Get(hoop_local_rank); }
  int local_size() const { return Get(hoop_local_size); }

  // Blocking collectives; `in` may be `out` (in place). Counts come from the spans: each call
  // checks the sizes it can see here and hoop checks the rest (and across ranks).
  template <class T>
  void Allreduce(std::span<const T> in, std::span<T> out, hoop_op_t op = HOOP_SUM) {
    Same(in.size(), out.size(), "Allreduce");
    Check(hoop_allreduce(c_, in.data(), out.data(), out.size(), DTypeOf<T>::value, op));
  }
  template <class T>
  void Broadcast(std::span<T> buf, int root) {
    Check(hoop_broadcast(c_, buf.data(), buf.data(), buf.size(), DTypeOf<T>::value, root));
  }
  template <class T>
  void Allgather(std::span<const T> in, std::span<T> out) {
    Same(in.size() * size_t(size()), out.size(), "Allgather");
    Check(hoop_allgather(c_, in.data(), out.data(), in.size(), DTypeOf<T>::value));
  }
  template <class T>
  void ReduceScatter(std::span<const T> in, std::span<T> out, hoop_op_t op = HOOP_SUM) {
    Same(in.size(), out.size() * size_t(size()), "ReduceScatter");
    Check(hoop_reduce_scatter(c_, in.data(), out.data(), out.size(), DTypeOf<T>::value, op));
  }
  template <class T>
  void Reduce(std::span<const T> in, std::span<T> out, int root, hoop_op_t op = HOOP_SUM) {
    Check(hoop_reduce(c_, in.data(), out.data(), in.size(), DTypeOf<T>::value, op, root));
  }
  template <class T>
  void Alltoall(std::span<const T> in, std::span<T> out) {
    Same(in.size(), out.size(), "Alltoall");
    Check(hoop_alltoall(c_, in.data(), out.data(), in.size() / size_t(size()), DTypeOf<T>::value));
  }
  void Barrier() { Check(hoop_barrier(c_)); }

  // On a CUDA stream (a cudaStream_t passed as void*): ordered with the stream's work, the way
  // NCCL's calls are, and never blocking (hoop.h's *_stream calls). The spans may be device memory.
  template <class T>
  void AllreduceOn(void* stream, std::span<const T> in, std::span<T> out, hoop_op_t op = HOOP_SUM) {
    Same(in.size(), out.size(), "AllreduceOn");
    Check(hoop_allreduce_stream(c_, in.data(), out.data(), out.size(), DTypeOf<T>::value, op, stream));
  }
  template <class T>
  void BroadcastOn(void* stream, std::span<T> buf, int root) {
    Check(hoop_broadcast_stream(c_, buf.data(), buf.data(), buf.size(), DTypeOf<T>::value, root, stream));
  }
  template <class T>
  void AllgatherOn(void* stream, std::span<const T> in, std::span<T> out) {
    Same(in.size() * size_t(size()), out.size(), "AllgatherOn");
    Check(hoop_allgather_stream(c_, in.data(), out.data(), in.size(), DTypeOf<T>::value, stream));
  }
  template <class T>
  void ReduceScatterOn(void* stream, std::span<const T> in, std::span<T> out, hoop_op_t op = HOOP_SUM) {
    Same(in.size(), out.size() * size_t(size()), "ReduceScatterOn");
    Check(hoop_reduce_scatter_stream(c_, in.data(), out.data(), out.size(), DTypeOf<T>::value, op, stream));
  }
  template <class T>
  void SendOn(void* stream, std::span<const T> buf, int peer, int tag) {
    Check(hoop_send_stream(c_, buf.data(), buf.size(), DTypeOf<T>::value, peer, tag, stream));
  }
  template <class T>
  void RecvOn(void* stream, std::span<T> buf, int peer, int tag) {
    Check(hoop_recv_stream(c_, buf.data(), buf.size(), DTypeOf<T>::value, peer, tag, stream));
  }

  // Nonblocking forms: they run in the order posted, the same on every rank.
  template <class T>
  Request Iallreduce(std::span<const T> in, std::span<T> out, hoop_op_t op = HOOP_SUM) {
    Same(in.size(), out.size(), "Iallreduce");
    hoop_request_t r = nullptr;
    Check(hoop_iallreduce(c_, in.data(), out.data(), out.size(), DTypeOf<T>::value, op, &r));
    return Request(r);
  }
  template <class T>
  Request Ibroadcast(std::span<T> buf, int root) {
    hoop_request_t r = nullptr;
    Check(hoop_ibroadcast(c_, buf.data(), buf.data(), buf.size(), DTypeOf<T>::value, root, &r));
    return Request(r);
  }
  Request Ibarrier() {
    hoop_request_t r = nullptr;
    Check(hoop_ibarrier(c_, &r));
    return Request(r);
  }

  // Sub-communicators (hoop.h: hoop_comm_split). Split with HOOP_UNDEFINED gives an empty Comm
  // (valid() false); the others are freed when the Comm goes.
  Comm Split(int color, int key) const {
    hoop_comm_t c = nullptr;
    Check(hoop_comm_split(c_, color, key, &c));
    return Comm(c);
  }
  Comm Dup() const {
    hoop_comm_t c = nullptr;
    Check(hoop_comm_dup(c_, &c));
    return Comm(c);
  }
  bool valid() const noexcept { return c_ != nullptr; }
  // Deterministic mode (hoop.h, hoop_comm_set_deterministic).
  void SetDeterministic(bool on) { Check(hoop_comm_set_deterministic(c_, on ? 1 : 0)); }
  bool deterministic() const { return Get(hoop_comm_deterministic) != 0; }

  // The flight recorder (hoop.h): this rank's record as JSON (hoop_comm_trace); written to
  // dir/hoop-trace.<comm>.<rank>.json ("": HOOP_TRACE_DIR's); the communicator's name in its
  // dumps; a name for the next call made on it ("" clears either).
  std::string Trace() const {
    std::string json;
    for (int tries = 0;; ++tries) {
      size_t need = 0;
      const hoop_status_t s = hoop_comm_trace(c_, json.empty() ? nullptr : json.data(), json.size(), &need);
      if (s == HOOP_SUCCESS) {
        json.resize(need ? need - 1 : 0);
        return json;
      }
      if (need <= json.size() || tries == 8) Check(s);  // not for want of room (or it keeps growing)
      json.resize(need + 4096);                         // (a call recorded meanwhile makes it longer)
    }
  }
  void DumpTrace(const std::string& dir = "") { Check(hoop_comm_dump_trace(c_, dir.empty() ? nullptr : dir.c_str())); }
  void SetTraceLabel(const std::string& label) { Check(hoop_comm_set_trace_label(c_, label.c_str())); }
  void NameNextCall(const std::string& name) { Check(hoop_comm_set_trace_name(c_, name.c_str())); }

  // Point-to-point (hoop.h says how messages match and when they complete). Recv's span may be
  // longer than the message; the returned info says how many elements came, and from whom.
  template <class T>
  void Send(std::span<const T> buf, int peer, int tag) {
    Check(hoop_send(c_, buf.data(), buf.size(), DTypeOf<T>::value, peer, tag));
  }
  template <class T>
  hoop_recv_info_t Recv(std::span<T> buf, int peer, int tag) {
    hoop_recv_info_t info{};
    Check(hoop_recv(c_, buf.data(), buf.size(), DTypeOf<T>::value, peer, tag, &info));
    return info;
  }
  template <class T>
  Request Isend(std::span<const T> buf, int peer, int tag) {
    hoop_request_t r = nullptr;
    Check(hoop_isend(c_, buf.data(), buf.size(), DTypeOf<T>::value, peer, tag, &r));
    return Request(r);
  }
  // `info` (may be null) is written by the time the request's Test() or Wait() sees it done.
  template <class T>
  Request Irecv(std::span<T> buf, int peer, int tag, hoop_recv_info_t* info = nullptr) {
    hoop_request_t r = nullptr;
    Check(hoop_irecv(c_, buf.data(), buf.size(), DTypeOf<T>::value, peer, tag, info, &r));
    return Request(r);
  }

 private:
  explicit Comm(hoop_comm_t c) : c_(c) {}
  int Get(hoop_status_t (*f)(hoop_comm_t, int*)) const {
    int v = 0;
    Check(f(c_, &v));
    return v;
  }
  static void Same(size_t a, size_t b, const char* call) {
    if (a != b)
      throw Error(HOOP_ERR_INVALID_ARGUMENT, std::string("hoop::api::Comm::") + call + ": the spans hold " +
                                                 std::to_string(a) + " and " + std::to_string(b) +
                                                 " elements where the call needs them to agree");
  }
  hoop_comm_t c_ = nullptr;
};

}  // namespace hoop::api

#endif  // C++20
#endif  // HOOP_HOOP_HPP_
