// Built against an installed hoop by the install test, through the public C++ header alone:
// a blocking and a nonblocking allreduce, a send/receive around a ring, a split in halves, a
// uint16_t allreduce that wraps, a refused call caught as hoop::api::Error, and the flight
// recorder's record with a named call.
#include <hoop/hoop.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  try {
    hoop::api::Comm comm = hoop::api::Comm::FromEnv();
    const int n = comm.size();
    std::vector<float> grad(1001, float(comm.rank() + 1));
    comm.NameNextCall("consumer: grads");
    comm.Allreduce<float>(grad, grad, HOOP_AVG);
    const std::string trace = comm.Trace();  // the flight recorder, with that call in it, named
    const bool traced =
        trace.find("\"hoop_trace\"") != std::string::npos && trace.find("\"consumer: grads\"") != std::string::npos;
    std::vector<std::int32_t> in(7, comm.rank()), out(7);
    hoop::api::Request r = comm.Iallreduce<std::int32_t>(in, out, HOOP_MAX);
    r.Wait();
    // Around the ring: receive from the left, send to the right.
    std::vector<double> mine(5, comm.rank() * 10.0), left(8, -1.0);
    hoop_recv_info_t info{};
    hoop::api::Request rr = comm.Irecv<double>(left, (comm.rank() + n - 1) % n, 4, &info);
    comm.Send<double>(mine, (comm.rank() + 1) % n, 4);
    rr.Wait();
    const bool ring = info.count == 5 && info.source == (comm.rank() + n - 1) % n && left[4] == info.source * 10.0;
    // Halves: each sums its ranks.
    hoop::api::Comm half = comm.Split(comm.rank() * 2 / n, comm.rank());
    std::vector<std::int64_t> one(1, comm.rank()), sum(1);
    half.Allreduce<std::int64_t>(one, sum, HOOP_SUM);
    const int lo = comm.rank() * 2 / n == 0 ? 0 : (n + 1) / 2, hi = comm.rank() * 2 / n == 0 ? (n + 1) / 2 : n;
    const bool split = half.size() == hi - lo && sum[0] == std::int64_t(hi - 1 + lo) * (hi - lo) / 2;
    std::vector<std::uint16_t> wide(3, 65535), wrapped(3);  // the 16-bit integers; sums wrap
    comm.Allreduce<std::uint16_t>(wide, wrapped, HOOP_SUM);
    const bool u16 = wrapped[2] == static_cast<std::uint16_t>(0 - n);
    bool refused = false;
    try {
      comm.Broadcast<float>(grad, n);  // root out of range
    } catch (const hoop::api::Error& e) {
      refused = e.status() == HOOP_ERR_INVALID_ARGUMENT;
    }
    bool ok = grad[0] == float(n + 1) / 2 && grad[1000] == grad[0] && out[6] == n - 1 && ring && split && refused &&
              traced && u16;
    std::printf(
        "consumer-cxx rank %d of %d: avg %g, max %d, ring %d, split %d, u16 %d, bad root refused %d, traced %d: %s\n",
        comm.rank(), n, grad[0], out[6], ring, split, u16, refused, traced, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  } catch (const hoop::api::Error& e) {
    std::fprintf(stderr, "consumer-cxx: %s\n", e.what());
    return 1;
  }
}
