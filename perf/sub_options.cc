// See sub_options.h.
#include "perf/sub_options.h"

#include "common/cli.h"
#include "common/parse.h"

namespace hoop::perf {

const char* const kFusionUsage =
    "usage: hoop-perf fusion [options]        (run it under hooprun, mpirun or srun)\n"
    "\n"
    "Times T named tensors of B bytes (f32 sum) through the tensor fusion runtime, against one\n"
    "allreduce of T x B bytes and against T separate allreduces, in the same run.\n"
    "  --tensors T        tensors per round (default 1000)\n"
    "  --bytes B          bytes per tensor, K/M/G suffixes (default 4K)\n"
    "  -n, --rounds N     timed rounds per repetition (default 10; the unfused way runs\n"
    "                     max(2, N/4) rounds of T calls)\n"
    "  -w, --warmup N     untimed rounds per repetition (default 3)\n"
    "  -R, --repeats N    repetitions (default 3); medians are reported\n"
    "  -t, --transport T  back end for every peer: shm ucx ofi tcp\n"
    "  --json FILE        also write the result as a JSON object (rank 0): fused_us, unfused_us,\n"
    "                     single_us, negotiation_us, ...\n"
    "  -h, --help         this text\n"
    "\n"
    "fused_us, single_us and unfused_us are per round (all T tensors), the slowest rank's mean,\n"
    "median over repetitions; the ratios are the medians of each repetition's own ratios.\n"
    "negotiation_us is the steady state's cost per cycle: the mean time\n"
    "of one cycle's readiness exchange (the one small allreduce, a byte per cached name) over idle\n"
    "cycles after the timed rounds; cycle_wait_us is the same mean during the timed rounds, where\n"
    "it also holds the wait for the slowest rank to reach the cycle. The tensor fusion settings\n"
    "(HOOP_CYCLE_TIME_MS, HOOP_FUSION_THRESHOLD, ...) apply as they are set.\n";

const char* const kSendRecvUsage =
    "usage: hoop-perf sendrecv [options]      (run it under hooprun, mpirun or srun; 2 ranks or more)\n"
    "\n"
    "Point-to-point between ranks 0 and 1, as the OSU benchmarks measure it:\n"
    "  lat_us   half the round trip of a ping-pong (osu_latency): rank 0 sends, rank 1 receives and\n"
    "           sends the same size back; 10000 round trips up to 8 KiB, 1000 above\n"
    "  bw_GB/s  64 sends in flight from rank 0, received by rank 1, which then sends a 4-byte reply\n"
    "           (osu_bw); bytes x 64 x windows / time\n"
    "Fewer iterations where a size would move more than 1 GiB. Other ranks wait in the barriers.\n"
    "  -b, --minbytes SIZE  smallest message (default 8; 0 allowed), K/M/G suffixes\n"
    "  -e, --maxbytes SIZE  largest message (default 4M)\n"
    "  -f, --stepfactor N   multiply the size by N each step (default 2)\n"
    "  -n, --iters N        round trips per repetition, instead of the rule above (windows: N/10)\n"
    "  -R, --repeats N      repetitions per size (default 3); the median is reported, spread is\n"
    "                       (slowest - fastest) / median\n"
    "  -t, --transport T    back end for every peer: shm ucx ofi tcp\n"
    "  --json FILE          also write the rows as a JSON array (rank 0)\n"
    "  -h, --help           this text\n"
    "Every size's last message is checked byte by byte (#wrong).\n";

const char* const kRecorderUsage =
    "usage: hoop-perf recorder [options]      (run it under hooprun, mpirun or srun)\n"
    "\n"
    "The flight recorder's cost, side by side: two communicators of the same ranks, alike but that\n"
    "one records its operations (HOOP_TRACE_OPS=N) and the other does not (0), each timing blocks\n"
    "of the same blocking allreduce (f32 sum, out of place) in turn, the order swapped every block.\n"
    "  -b, --bytes SIZE   bytes per allreduce, a multiple of 4 (default 8), K/M suffixes\n"
    "  -n, --calls N      calls per block (default 20000)\n"
    "  -R, --blocks N     blocks on each communicator (default 20)\n"
    "  --ops N            the recording one's operations kept (default 2000; 0: neither records,\n"
    "                     an A/A check of the method's own bias)\n"
    "  -t, --transport T  back end for every peer: shm ucx ofi tcp\n"
    "  --json FILE        also write the result as a JSON object (rank 0)\n"
    "  -h, --help         this text\n"
    "\n"
    "A block's time is the slowest rank's mean per call. Reported: each communicator's median, and\n"
    "the median of the blocks' own ratios (recording over not, each pair run back to back), which\n"
    "is the figure: the machine's drift between blocks cancels in it.\n";

namespace {

const std::vector<std::string> kTransports = {"shm", "ucx", "ofi", "tcp"};

void Declare(cli::Flags& f, FusionBenchOptions& o) {
  f.Early("-h,--help", &o.help);
  f.Value("--tensors", cli::Int(&o.tensors, 1, 1000000));
  f.Value("--bytes", [&o](const std::string& v) -> std::string {
    auto b = ParseSize(v);
    if (!b || *b < 4 || *b % 4 || *b > (1ull << 30)) return "expected a multiple of 4 bytes up to 1G";
    o.bytes = *b;
    return "";
  });
  f.Value("-n,--rounds", cli::Int(&o.rounds, 1, 100000));
  f.Value("-w,--warmup", cli::Int(&o.warmup, 0, 100000));
  f.Value("-R,--repeats", cli::Int(&o.repeats, 1, 1000));
  f.Value("-t,--transport", cli::OneOf(&o.transport, kTransports));
  f.Value("--json", cli::Text(&o.json));
}

void Declare(cli::Flags& f, SendRecvOptions& o) {
  f.Early("-h,--help", &o.help);
  auto size = [](uint64_t* out) {
    return [=](const std::string& v) -> std::string {
      auto b = ParseSize(v);
      if (!b || *b > (1ull << 30)) return "expected a size up to 1G";
      *out = *b;
      return "";
    };
  };
  f.Value("-b,--minbytes", size(&o.min_bytes));
  f.Value("-e,--maxbytes", size(&o.max_bytes));
  f.Value("-f,--stepfactor", cli::Int(&o.factor, 2, 1024));
  f.Value("-n,--iters", cli::Int(&o.iters, 10, 10000000));
  f.Value("-R,--repeats", cli::Int(&o.repeats, 1, 1000));
  f.Value("-t,--transport", cli::OneOf(&o.transport, kTransports));
  f.Value("--json", cli::Text(&o.json));
}

void Declare(cli::Flags& f, RecorderBenchOptions& o) {
  f.Early("-h,--help", &o.help);
  f.Value("-b,--bytes", [&o](const std::string& v) -> std::string {
    auto b = ParseSize(v);
    if (!b || *b < 4 || *b % 4 || *b > (64ull << 20)) return "expected a multiple of 4 bytes up to 64M";
    o.bytes = *b;
    return "";
  });
  f.Value("-n,--calls", cli::Int(&o.calls, 1, 100000000));
  f.Value("-R,--blocks", cli::Int(&o.blocks, 1, 10000));
  f.Value("--ops", cli::Int(&o.ops, 0, 1 << 20));
  f.Value("-t,--transport", cli::OneOf(&o.transport, kTransports));
  f.Value("--json", cli::Text(&o.json));
}

template <typename Options>
std::vector<std::string> NamesOf() {
  Options o;
  cli::Flags f;
  Declare(f, o);
  return f.Names();
}

}  // namespace

StatusOr<FusionBenchOptions> ParseFusionOptions(int argc, char** argv) {
  FusionBenchOptions o;
  cli::Flags f;
  Declare(f, o);
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv, 2));
  if (!o.help && o.tensors * o.bytes > (4ull << 30)) return InvalidArgument("--tensors x --bytes is over 4 GiB");
  return o;
}

std::vector<std::string> FusionFlagNames() { return NamesOf<FusionBenchOptions>(); }

StatusOr<SendRecvOptions> ParseSendRecvOptions(int argc, char** argv) {
  SendRecvOptions o;
  cli::Flags f;
  Declare(f, o);
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv, 2));
  if (!o.help && o.min_bytes > o.max_bytes) return InvalidArgument("-b is larger than -e");
  return o;
}

std::vector<std::string> SendRecvFlagNames() { return NamesOf<SendRecvOptions>(); }

StatusOr<RecorderBenchOptions> ParseRecorderOptions(int argc, char** argv) {
  RecorderBenchOptions o;
  cli::Flags f;
  Declare(f, o);
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv, 2));
  return o;
}

std::vector<std::string> RecorderFlagNames() { return NamesOf<RecorderBenchOptions>(); }

}  // namespace hoop::perf
