#include "perf/perf_options.h"

#include <algorithm>

#include "common/cli.h"
#include "common/parse.h"
#include "common/suggest.h"

namespace hoop::perf {

const char* const kPerfUsage =
    "usage: hoop-perf COLLECTIVE [options]       (run it under hooprun, mpirun or srun)\n"
    "       hoop-perf fusion [options]           the tensor fusion runtime ('hoop-perf fusion --help')\n"
    "       hoop-perf sendrecv [options]         point-to-point latency and bandwidth, as osu_latency\n"
    "                                            and osu_bw ('hoop-perf sendrecv --help')\n"
    "       hoop-perf recorder [options]         the flight recorder's cost, recording beside not\n"
    "                                            ('hoop-perf recorder --help')\n"
    "       hoop-perf --version\n"
    "\n"
    "COLLECTIVE: allreduce | broadcast | allgather | reduce_scatter | barrier | reduce | gather |\n"
    "            scatter | alltoall | allgatherv | reduce_scatterv | alltoallv (the v-forms with\n"
    "            every rank's count alike, as OSU's benchmarks run them); nccl-tests' names\n"
    "            all_reduce and all_gather too\n"
    "nccl-tests' flags, with nccl-tests' meanings:\n"
    "  -b, --minbytes SIZE      smallest message (default 8); K/M/G suffixes, powers of 1024. -b 0\n"
    "                           runs one empty call first; a size below one element otherwise is refused\n"
    "  -e, --maxbytes SIZE      largest message (default 64M)\n"
    "  -f, --stepfactor N       multiply the size by N each step (default 2)\n"
    "  -i, --stepbytes SIZE     add SIZE each step instead (linear steps; not with -f)\n"
    "  -n, --iters N            timed iterations per repetition (default: scaled by size, enough to\n"
    "                           move 256 MiB, 5 to 1000)\n"
    "  -w, --warmup_iters N     untimed iterations per size (default: a fifth of the timed ones;\n"
    "                           --warmup N is the same)\n"
    "  -m, --agg_iters N        calls per iteration (default 1); the time is per call\n"
    "  -c, --check 0|1          check every result against a reference (default 1): one more call\n"
    "                           per size on fresh data, wrong elements counted in #wrong\n"
    "  -d, --datatype T|all     u8 i8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64 bool f8e4m3 f8e5m2, or\n"
    "                           all of them in turn (default f32); NumPy's and torch's names work too\n"
    "                           (float16, uint32...)\n"
    "  -o, --op OP|all          sum avg min max prod band bor bxor, or all of them in turn (default sum);\n"
    "                           band/bor/bxor take integers and bool, bool takes min max band bor bxor\n"
    "                           (with all, the pairs that do not apply are skipped, saying so)\n"
    "  -r, --root R             root of broadcast, reduce, gather, scatter (default 0)\n"
    "  -a, --average 0|1|2|3    the time reported: 0 rank 0's, 1 the mean over ranks, 2 the fastest\n"
    "                           rank's, 3 the slowest rank's (default 3; nccl-tests' default is 1)\n"
    "  -z, --blocking 0|1       1: every call runs on the calling thread and returns done (default);\n"
    "                           0: calls are posted to the communicator's worker and waited for at\n"
    "                           the end of each iteration\n"
    "  -T, --timeout SECONDS    fail a call that takes longer (default: HOOP_TIMEOUT, else 300)\n"
    "  -g, --ngpus 1            ranks per process: always 1 (start N ranks with 'hooprun -np N');\n"
    "  -t, --nthreads 1         GPUs: --device cuda\n"
    "  -p, --parallel_init 0|1  accepted; with one rank per process there is nothing to parallelise\n"
    "  -F, --csv FILE           also write the rows as CSV with a header line to FILE (rank 0)\n"
    "  -N, --run_cycles N       run the whole sweep N times (default 1; nccl-tests' 0, forever, is not taken)\n"
    "  -G, --cudagraph N, -y, --stream_null 0|1, -C, --report_cputime 0|1\n"
    "                           accepted, and said to do nothing: hoop-perf captures no CUDA graphs, runs\n"
    "                           device calls on hoop's own streams and reports wall-clock time\n"
    "hoop's own:\n"
    "  -R, --repeats N          timed repetitions per size (default 3); the median is reported\n"
    "  --place out|in|both      out of place, in place, or both side by side (default both)\n"
    "  --rotate K               successive calls go round K sets of buffers (default 1: every call\n"
    "                           on the same): K x SIZE larger than the caches measures memory that is\n"
    "                           not still cached from the call before (1 to 64)\n"
    "  --device host|cuda       where the buffers live (default host); cuda: device memory on GPU\n"
    "                           (local rank mod the device count), results checked after copying back\n"
    "  --algo A                 auto ring tree doubling hierarchical (allreduce), chain binomial (broadcast,\n"
    "                           reduce), flat binomial (gather, scatter), pairwise (alltoall)\n"
    "                           (default auto: HOOP_ALGO, else chosen per size)\n"
    "  --transport T            back end for every peer: shm ucx ofi tcp (default: HOOP_TRANSPORT,\n"
    "                           else per peer the first that reaches it)\n"
    "  --compression Z          allreduce on the wire: none, fp16, bf16 or auto (default:\n"
    "                           HOOP_COMPRESSION, else none); fp16/bf16 apply to f32/f64 sum/avg\n"
    "                           (with -d all or -o all the other cases run uncompressed, saying so).\n"
    "                           Checked results use mixed-magnitude data and count the elements\n"
    "                           outside the error bound (collectives/kernels/wire.h); err/bnd is the\n"
    "                           worst |error| / bound\n"
    "  --json FILE              also write the rows as a JSON array to FILE (rank 0)\n"
    "  -h, --help               this text\n"
    "  --version                hoop-perf's version\n"
    "\n"
    "A flag's value follows it (-b 8) or joins it ('-b8', '--minbytes=8').\n"
    "--csv and --json files are rewritten as each size finishes, so an interrupted sweep keeps what\n"
    "it measured; a path that cannot be written is refused before the first measurement.\n"
    "SIZE is the largest buffer of the operation: allreduce's, broadcast's, reduce's and\n"
    "alltoall's buffer, allgather's and gather's output, reduce_scatter's and scatter's input (a\n"
    "v-form's, its cousin's). In place means allreduce, broadcast, reduce and alltoall with one\n"
    "buffer, allgather and gather with the input at rank x count in the output, reduce_scatter and\n"
    "scatter with the output at rank x count in the input (as nccl-tests). barrier runs one row\n"
    "with size 0.\n"
    "time is the median over the repetitions of the per-call time combined across ranks (-a);\n"
    "spread is (slowest - fastest repetition) / median. algbw = SIZE / time; busbw = algbw x\n"
    "2(n-1)/n (allreduce), x (n-1)/n (allgather, reduce_scatter, gather, scatter, alltoall and the\n"
    "v-forms), x 1 (broadcast, reduce): the rate every link must carry, comparable with the link\n"
    "(nccl-tests' definitions).\n";

const char* AverageName(Average a) {
  switch (a) {
    case Average::kRank0: return "rank 0";
    case Average::kMean: return "mean";
    case Average::kMin: return "min";
    case Average::kMax: return "max";
  }
  return "?";
}

bool PerRankBlocks(CollKind k) {
  return k == CollKind::kAllgather || k == CollKind::kReduceScatter || k == CollKind::kGather ||
         k == CollKind::kScatter || k == CollKind::kAlltoall || k == CollKind::kAllgatherv ||
         k == CollKind::kReduceScatterv || k == CollKind::kAlltoallv;
}

std::vector<uint64_t> SweepSizes(const PerfOptions& o) {
  std::vector<uint64_t> sizes;
  if (o.kind == CollKind::kBarrier) return {0};
  uint64_t bytes = o.min_bytes;
  if (bytes == 0) {  // one empty call, then on from one step (0 x factor stays 0 for ever)
    sizes.push_back(0);
    bytes = o.step_bytes ? o.step_bytes : 1;
  }
  for (; bytes <= o.max_bytes;) {
    sizes.push_back(bytes);
    if (o.step_bytes) {
      if (bytes > UINT64_MAX - o.step_bytes) break;
      bytes += o.step_bytes;
    } else {
      if (bytes > UINT64_MAX / o.factor) break;
      bytes *= o.factor;
    }
  }
  return sizes;
}

namespace {

// Every flag after the collective, stored into `o` as it is read.
void Declare(cli::Flags& f, PerfOptions& o, bool* factor_given) {
  f.Early("-h,--help", &o.help);
  f.Early("--version", &o.version);
  auto size = [](uint64_t* out, bool step) {
    return [=](const std::string& v) -> std::string {
      auto s = ParseSize(v);
      if (!s) return "expected a size like 8, 64K, 16M";
      if (step && *s == 0) return "expected a step of at least 1 byte";
      *out = *s;
      return "";
    };
  };
  auto count = [](int* out, int lo, int hi) { return cli::Int(out, lo, hi, "a count"); };
  auto flag01 = [](bool* out) {
    return [=](const std::string& v) -> std::string {
      if (v != "0" && v != "1") return "expected 0 or 1";
      *out = v == "1";
      return "";
    };
  };
  f.Value("-b,--minbytes", size(&o.min_bytes, false));
  f.Value("-e,--maxbytes", size(&o.max_bytes, false));
  f.Value("-i,--stepbytes", size(&o.step_bytes, true));
  f.Value("-f,--stepfactor", [&o, factor_given](const std::string& v) -> std::string {
    auto n = ParseInt(v);
    if (!n || *n < 2) return "expected an integer >= 2";
    o.factor = static_cast<uint64_t>(*n);
    *factor_given = true;
    return "";
  });
  f.Value("-n,--iters", count(&o.iters, 1, 1000000));
  f.Value("-w,--warmup_iters,--warmup", count(&o.warmup, 0, 1000000));
  f.Value("-m,--agg_iters", count(&o.agg, 1, 1024));
  f.Value("-R,--repeats", count(&o.repeats, 1, 1000));
  f.Value("--rotate", count(&o.rotate, 1, 64));
  f.Value("-c,--check", flag01(&o.check));
  f.Value("-z,--blocking", flag01(&o.blocking));
  f.Value("-p,--parallel_init", [flag01](const std::string& v) {
    bool ignored;
    return flag01(&ignored)(v);
  });
  for (const char* names : {"-g,--ngpus", "-t,--nthreads"}) {
    const bool gpus = names[1] == 'g';
    f.Value(names, [gpus](const std::string& v) -> std::string {
      auto n = ParseInt(v);
      if (!n || *n < 1) return "expected 1";
      if (*n > 1)
        return "hoop-perf runs one rank per process; start " + v + " ranks with 'hooprun -np " + v + " hoop-perf ...'" +
               (gpus ? " (device buffers: --device cuda)" : "");
      return "";
    });
  }
  f.Value("-a,--average", [&o](const std::string& v) -> std::string {
    if (v != "0" && v != "1" && v != "2" && v != "3") return "expected 0 (rank 0), 1 (mean), 2 (min) or 3 (max)";
    o.average = static_cast<Average>(v[0] - '0');
    return "";
  });
  f.Value("-T,--timeout", [&o](const std::string& v) -> std::string {
    auto s = ParseSeconds(v);
    if (!s || *s > 604800) return "expected seconds in (0, 604800]";
    o.timeout_s = *s;
    return "";
  });
  f.Value("-d,--datatype", [&o](const std::string& v) -> std::string {
    if (v == "all") {
      o.dtypes.assign(std::begin(kAllDTypes), std::end(kAllDTypes));
      return "";
    }
    auto d = ParseDType(v);
    if (!d) return "expected " + DTypeNames() + " or all";
    o.dtypes = {*d};
    return "";
  });
  f.Value("-o,--op", [&o](const std::string& v) -> std::string {
    if (v == "all") {
      o.ops.assign(std::begin(kAllReduceOps), std::end(kAllReduceOps));
      return "";
    }
    auto op = ParseReduceOp(v);
    if (!op) return "expected sum, avg, min, max, prod, band, bor, bxor or all";
    o.ops = {*op};
    return "";
  });
  f.Value("--device", [&o](const std::string& v) -> std::string {
    if (v != "host" && v != "cuda") return "expected host or cuda";
    o.cuda = v == "cuda";
    return "";
  });
  f.Value("--transport", cli::OneOf(&o.transport, {"shm", "ucx", "ofi", "tcp"}));
  f.Value("--place", [&o](const std::string& v) -> std::string {
    if (v == "out")
      o.place = Place::kOut;
    else if (v == "in")
      o.place = Place::kIn;
    else if (v == "both")
      o.place = Place::kBoth;
    else
      return "expected out, in or both";
    return "";
  });
  f.Value("--algo", [&o](const std::string& v) -> std::string {
    auto al = ParseAlgo(v);
    if (!al) return "expected auto, ring, tree, doubling, hierarchical, chain, binomial, flat or pairwise";
    o.algo = *al;
    return "";
  });
  f.Value("-r,--root", [&o](const std::string& v) -> std::string {
    auto n = ParseInt(v);
    if (!n || *n < 0 || *n > 1 << 20) return "expected a rank";
    o.root = static_cast<int>(*n);
    return "";
  });
  f.Value("--compression", [&o](const std::string& v) -> std::string {
    auto z = ParseCompression(v);
    if (!z) return "expected none, fp16, bf16 or auto";
    o.compression = *z;
    return "";
  });
  f.Value("--json", cli::Text(&o.json));
  f.Value("-F,--csv", cli::Text(&o.csv));
  f.Value("-N,--run_cycles", [&o](const std::string& v) -> std::string {
    auto n = ParseInt(v);
    if (!n || *n < 1 || *n > 1000000) return "expected a count of sweeps >= 1 (nccl-tests' 0, forever, is not taken)";
    o.cycles = static_cast<int>(*n);
    return "";
  });
  // nccl-tests' CUDA-side flags: taken, so a wrapper's command line runs, and said to do nothing.
  struct Ignored {
    const char* names;
    const char* why;
  };
  for (const Ignored& ig : {Ignored{"-G,--cudagraph", "hoop-perf does not capture CUDA graphs"},
                            Ignored{"-y,--stream_null", "hoop-perf's calls on device buffers use hoop's own streams"},
                            Ignored{"-C,--report_cputime", "hoop-perf reports wall-clock time only"}}) {
    f.Value(ig.names, [&o, ig](const std::string& flag, const std::string& v) -> Status {
      auto n = ParseInt(v);
      if (!n || *n < 0) return InvalidArgument(flag + " '" + v + "': expected a non-negative integer");
      if (*n != 0) o.notes.push_back(flag + " " + v + " ignored: " + ig.why);
      return Status::Ok();
    });
  }
}

}  // namespace

std::vector<std::string> PerfFlagNames() {
  PerfOptions o;
  bool factor_given = false;
  cli::Flags f;
  Declare(f, o, &factor_given);
  return f.Names();
}

StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv) {
  PerfOptions o;
  if (argc < 2) return InvalidArgument("missing COLLECTIVE (hoop-perf allreduce -b 8 -e 128M, as all_reduce_perf)");
  std::string first = argv[1];
  if (first == "-h" || first == "--help") {
    o.help = true;
    return o;
  }
  if (first == "--version") {
    o.version = true;
    return o;
  }
  // nccl-tests' names (all_reduce_perf ...) too.
  if (first == "all_reduce") first = "allreduce";
  if (first == "all_gather") first = "allgather";
  if (first == "all_to_all") first = "alltoall";
  if (first.size() > 1 && first[0] == '-' && first != "-h" && first != "--help" && first != "--version")
    return InvalidArgument("missing COLLECTIVE before '" + first +
                           "': hoop-perf COLLECTIVE [options], e.g. hoop-perf "
                           "allreduce " +
                           first +
                           " ... (COLLECTIVE: allreduce, broadcast, allgather, reduce_scatter, "
                           "alltoall, ...; nccl-tests' all_reduce and all_gather too)");
  if (first == "allreduce")
    o.kind = CollKind::kAllreduce;
  else if (first == "broadcast")
    o.kind = CollKind::kBroadcast;
  else if (first == "allgather")
    o.kind = CollKind::kAllgather;
  else if (first == "reduce_scatter")
    o.kind = CollKind::kReduceScatter;
  else if (first == "barrier")
    o.kind = CollKind::kBarrier;
  else if (first == "reduce")
    o.kind = CollKind::kReduce;
  else if (first == "gather")
    o.kind = CollKind::kGather;
  else if (first == "scatter")
    o.kind = CollKind::kScatter;
  else if (first == "alltoall")
    o.kind = CollKind::kAlltoall;
  else if (first == "allgatherv")
    o.kind = CollKind::kAllgatherv;
  else if (first == "reduce_scatterv")
    o.kind = CollKind::kReduceScatterv;
  else if (first == "alltoallv")
    o.kind = CollKind::kAlltoallv;
  else {
    static const std::vector<std::string> kCollectives = {
        "allreduce", "broadcast",  "allgather",       "reduce_scatter", "barrier", "reduce",   "gather",  "scatter",
        "alltoall",  "allgatherv", "reduce_scatterv", "alltoallv",      "fusion",  "sendrecv", "recorder"};
    std::string near = Nearest(first, kCollectives);
    return InvalidArgument("unknown collective '" + first + "'" +
                           (near.empty() ? "" : " (did you mean " + near + "?)"));
  }
  bool factor_given = false;
  cli::Flags f;
  Declare(f, o, &factor_given);
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv, 2));
  if (o.help || o.version) return o;
  if (o.min_bytes > o.max_bytes) return InvalidArgument("-b is larger than -e");
  if (o.step_bytes && factor_given) return InvalidArgument("-i (linear steps) and -f (a factor) exclude each other");
  if (o.compression && o.kind != CollKind::kAllreduce)
    return InvalidArgument("--compression applies to allreduce only");
  if (Reduces(o.kind)) {  // some pair must apply; -d all / -o all skip the others
    bool any = false;
    for (DType d : o.dtypes)
      for (ReduceOp op : o.ops) any |= OpApplies(d, op);
    if (!any)
      return InvalidArgument("-d " + std::string(DTypeName(o.dtypes[0])) + " -o " + ReduceOpName(o.ops[0]) + ": " +
                             OpMismatch(o.dtypes[0], o.ops[0]));
  }
  if (o.compression && (*o.compression == Compression::kFp16 || *o.compression == Compression::kBf16)) {
    bool any = false;
    for (DType d : o.dtypes)
      for (ReduceOp op : o.ops) any |= Compressible(d, op);
    if (!any)
      return InvalidArgument(std::string("--compression ") + CompressionName(*o.compression) +
                             " needs -d f32 or f64 and -o sum or avg, not " + DTypeName(o.dtypes[0]) + " " +
                             ReduceOpName(o.ops[0]));
  }
  return o;
}

}  // namespace hoop::perf
