// mpi-collective: one of OpenMPI's collectives (MPI_Allreduce, MPI_Alltoall, MPI_Reduce,
// MPI_Gather, MPI_Scatter; f32, sum where it reduces, root 0, out of place) over a size sweep,
// timed and laid out the way hoop-perf times and lays out hoop's (harness.h), for perf/compare;
// or (--coll sendrecv) MPI_Send/MPI_Recv between ranks 0 and 1 timed as hoop-perf sendrecv
// times hoop's: osu_latency's ping-pong and osu_bw's window (harness.h); or (--coll barrier)
// MPI_Barrier, one row of 0 bytes, the slowest rank's mean time per call, as hoop-perf barrier.
// The BTL is mpirun's choice: by default vader (shared memory) on one host, `--mca btl tcp,self`
// for TCP.
//   usage: mpirun -np N mpi-collective [--coll allreduce] [-b 4K] [-e 64M] [-f 4] [--csv FILE] [--label L]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "common/version.h"
#include "perf/harness.h"

using namespace hoop::perf;

namespace {

void Call(const std::string& coll, const CallShape& s, const float* in, float* out) {
  const int per = static_cast<int>(s.per_rank);
  if (coll == "allreduce") {
    MPI_Allreduce(in, out, static_cast<int>(s.in), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (coll == "reduce") {
    MPI_Reduce(in, out, static_cast<int>(s.in), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  } else if (coll == "alltoall") {
    MPI_Alltoall(in, per, MPI_FLOAT, out, per, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (coll == "gather") {
    MPI_Gather(in, per, MPI_FLOAT, out, per, MPI_FLOAT, 0, MPI_COMM_WORLD);
  } else {
    MPI_Scatter(in, per, MPI_FLOAT, out, per, MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

// Half a round trip, in us (rank 0's clock).
double PingPong(int rank, std::vector<char>& out, std::vector<char>& in, int bytes, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(out.data(), bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(in.data(), bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(in.data(), bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out.data(), bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
  }
  double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
  MPI_Bcast(&us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return us;
}

// kBandwidthWindow sends in flight, then a 4-byte reply; GB/s (rank 0's clock).
double Bandwidth(int rank, std::vector<char>& out, std::vector<char>& in, int bytes, int iters) {
  std::vector<MPI_Request> req(kBandwidthWindow);
  char ack[4] = {};
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      for (auto& r : req) MPI_Isend(out.data(), bytes, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &r);
      MPI_Waitall(kBandwidthWindow, req.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(ack, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      for (auto& r : req) MPI_Irecv(in.data(), bytes, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &r);
      MPI_Waitall(kBandwidthWindow, req.data(), MPI_STATUSES_IGNORE);
      MPI_Send(ack, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    }
  }
  const double us = (MPI_Wtime() - t0) * 1e6;
  double gbs = us > 0 ? static_cast<double>(bytes) * kBandwidthWindow * iters / (us * 1e3) : 0;
  MPI_Bcast(&gbs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return gbs;
}

int RunSendRecv(const HarnessArgs& a, int rank, int size) {
  if (size < 2) {
    if (rank == 0) std::fprintf(stderr, "mpi-collective: --coll sendrecv needs 2 ranks or more\n");
    return 2;
  }
  std::ofstream csv;
  if (rank == 0 && !a.csv.empty()) {
    csv.open(a.csv);
    csv << "collective,transport,ranks,bytes,lat_iters,lat_us,bw_windows,bw_GBps,wrong\n";
  }
  int rc = 0;
  for (uint64_t b : HarnessSizes(a)) {
    const int bytes = static_cast<int>(b), lat_iters = PingPongIters(b), bw_iters = BandwidthIters(b);
    std::vector<char> out(b + 1), in(b + 1);
    for (uint64_t j = 0; j < b; ++j) out[j] = static_cast<char>(b * 7 + static_cast<uint64_t>(rank) * 101 + j % 249);
    PingPong(rank, out, in, bytes, std::max(1, lat_iters / 10));  // warm-up
    std::vector<double> lat, bw;
    for (int r = 0; r < 3; ++r) {
      lat.push_back(PingPong(rank, out, in, bytes, lat_iters));
      bw.push_back(Bandwidth(rank, out, in, bytes, bw_iters));
    }
    PingPong(rank, out, in, bytes, 1);  // the checked message
    unsigned long long wrong = 0, total = 0;
    if (rank <= 1)
      for (uint64_t j = 0; j < b; ++j)
        wrong += in[j] != static_cast<char>(b * 7 + static_cast<uint64_t>(1 - rank) * 101 + j % 249);
    MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    rc |= total ? 1 : 0;
    if (rank == 0) {
      std::printf(
          "mpi-collective sendrecv %s ranks %d bytes %llu lat_iters %d lat_us %.3f bw_windows %d bw_GBps %.4f "
          "wrong %llu\n",
          a.label.c_str(), size, static_cast<unsigned long long>(b), lat_iters, Median(lat), bw_iters, Median(bw),
          total);
      std::fflush(stdout);
      if (csv.is_open())
        csv << "sendrecv," << a.label << "," << size << "," << b << "," << lat_iters << "," << Median(lat) << ","
            << bw_iters << "," << Median(bw) << "," << total << "\n";
    }
  }
  return rc;
}

// MPI_Barrier: one row, bytes 0, the slowest rank's mean per call over AutoIters' calls.
int RunBarrier(const HarnessArgs& a, int size) {
  MPI_Barrier(MPI_COMM_WORLD);
  double p0 = MPI_Wtime(), probe = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double probe_us = (MPI_Wtime() - p0) * 1e6;
  MPI_Allreduce(&probe_us, &probe, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const int iters = AutoIters(0, probe);
  for (int i = 0, warmup = AutoWarmup(iters); i < warmup; ++i) MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Barrier(MPI_COMM_WORLD);
  double us = (MPI_Wtime() - t0) * 1e6 / iters, slowest = 0;
  MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<HarnessRow> rows{{0, iters, slowest, 0}};
  if (rank != 0) return 0;
  PrintHarnessRow("mpi-collective", a, "default", size, rows[0]);
  if (!WriteHarnessCsv(a, "default", size, false, rows)) {
    std::fprintf(stderr, "mpi-collective: cannot write %s\n", a.csv.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  HarnessArgs a;
  if (!ParseHarnessArgs(argc, argv, "mpi-collective", &a) || a.help || a.version) {
    if (rank == 0 && a.version) std::printf("%s\n", hoop::VersionLine("mpi-collective").c_str());
    if (rank == 0 && a.help && !a.version)
      std::puts(
          "usage: mpirun -np N mpi-collective [--coll allreduce|alltoall|reduce|gather|scatter|barrier|sendrecv] [-b "
          "MIN]\n"
          "       [-e MAX] [-f FACTOR] [--csv FILE] [--label L] | --version");
    MPI_Finalize();
    return a.help || a.version ? 0 : 2;
  }
  if (a.label.empty()) a.label = "mpi";
  if (a.coll == "sendrecv" || a.coll == "barrier") {
    const int rc = a.coll == "sendrecv" ? RunSendRecv(a, rank, size) : RunBarrier(a, size);
    MPI_Finalize();
    return rc;
  }
  std::vector<HarnessRow> rows;
  for (uint64_t want : HarnessSizes(a)) {
    CallShape s = ShapeOf(a.coll, want, size);
    if (s.bytes == 0) continue;  // smaller than one element per rank
    // One spare element each, so that no size hands MPI a null pointer.
    std::vector<float> in(s.in + 1), out(s.out + 1);
    FillFor(a.coll, s, rank, size, in.data());
    double p0 = MPI_Wtime(), probe = 0;
    Call(a.coll, s, in.data(), out.data());
    double probe_us = (MPI_Wtime() - p0) * 1e6;
    MPI_Allreduce(&probe_us, &probe, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int iters = AutoIters(s.bytes, probe), warmup = AutoWarmup(iters);
    for (int i = 0; i < warmup; ++i) Call(a.coll, s, in.data(), out.data());
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) Call(a.coll, s, in.data(), out.data());
    double us = (MPI_Wtime() - t0) * 1e6 / iters, slowest = 0;
    MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    std::fill(out.begin(), out.end(), -100.0f);
    Call(a.coll, s, in.data(), out.data());
    unsigned long long wrong = CountWrongFor(a.coll, s, rank, size, out.data()), total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    rows.push_back({s.bytes, iters, slowest, static_cast<size_t>(total)});
    if (rank == 0) PrintHarnessRow("mpi-collective", a, "default", size, rows.back());
  }
  int rc = 0;
  if (rank == 0 && !WriteHarnessCsv(a, "default", size, false, rows)) {
    std::fprintf(stderr, "mpi-collective: cannot write %s\n", a.csv.c_str());
    rc = 1;
  }
  for (auto& r : rows) rc |= r.wrong ? 1 : 0;
  MPI_Finalize();
  return rc;
}
