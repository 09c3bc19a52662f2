#include "perf/perf_options.h"

#include "common/parse.h"

namespace hoop::perf {

const char* const kPerfUsage =
    "usage: hoop-perf COLLECTIVE [options]       (run it under hooprun, mpirun or srun)\n"
    "       hoop-perf fusion [options]           the tensor fusion runtime ('hoop-perf fusion --help')\n"
    "\n"
    "COLLECTIVE: allreduce | broadcast | allgather | reduce_scatter | barrier\n"
    "  -b, --minbytes SIZE   smallest message (default 8); K/M/G suffixes, powers of 1024\n"
    "  -e, --maxbytes SIZE   largest message (default 64M)\n"
    "  -f, --stepfactor N    multiply the size by N each step (default 2)\n"
    "  -n, --iters N         timed calls per repetition (default: scaled by size, enough to move\n"
    "                        256 MiB, 5 to 1000)\n"
    "  -w, --warmup N        untimed calls per size (default: a fifth of the timed ones)\n"
    "  -R, --repeats N       timed repetitions per size (default 3); the median is reported\n"
    "  -c, --check 0|1       check every result against a reference, count wrong elements\n"
    "  -d, --datatype T      u8 i32 i64 f16 bf16 f32 f64 (default f32)\n"
    "  -o, --op OP           sum avg min max prod (default sum)\n"
    "  -a, --algo A          auto ring tree doubling (allreduce), chain binomial (broadcast)\n"
    "  -r, --root R          broadcast root (default 0)\n"
    "  -t, --transport T     back end for every peer: shm ucx ofi tcp (default: HOOP_TRANSPORT,\n"
    "                        else per peer the first that reaches it)\n"
    "  -p, --place P         out (out of place, default), in (in place) or both\n"
    "  -z, --compression Z   allreduce on the wire: none, fp16, bf16 or auto (default:\n"
    "                        HOOP_COMPRESSION); fp16/bf16 need -d f32|f64 and -o sum|avg. With\n"
    "                        -c 1 the check uses mixed-magnitude data and counts the elements\n"
    "                        outside the error bound (collectives/kernels/wire.h); the err/bnd\n"
    "                        column is the worst |error| / bound\n"
    "  --json FILE           also write the rows as a JSON array to FILE (rank 0)\n"
    "  --csv FILE            also write the rows as CSV with a header line to FILE (rank 0)\n"
    "  -h, --help            this text\n"
    "\n"
    "SIZE is the largest buffer of the operation: allreduce's and broadcast's buffer, allgather's\n"
    "output, reduce_scatter's input. In place means allreduce and broadcast with one buffer,\n"
    "allgather with the input at rank x count in the output, reduce_scatter with the output at\n"
    "rank x count in the input (as nccl-tests). barrier runs one row with size 0.\n"
    "time is the median over the repetitions of the slowest rank's mean per call; spread is\n"
    "(slowest - fastest repetition) / median. algbw = SIZE / time; busbw = algbw x 2(n-1)/n\n"
    "(allreduce), x (n-1)/n (allgather, reduce_scatter), x 1 (broadcast): the rate every link\n"
    "must carry, comparable with the link (nccl-tests' definitions).\n";


StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv) {
  PerfOptions o;
  if (argc < 2) return InvalidArgument("no collective given");
  std::string first = argv[1];
  if (first == "-h" || first == "--help") {
    o.help = true;
    return o;
  }
  if (first == "--version") {
    o.version = true;
    return o;
  }
  if (first == "allreduce") o.kind = CollKind::kAllreduce;
  else if (first == "broadcast") o.kind = CollKind::kBroadcast;
  else if (first == "allgather") o.kind = CollKind::kAllgather;
  else if (first == "reduce_scatter") o.kind = CollKind::kReduceScatter;
  else if (first == "barrier") o.kind = CollKind::kBarrier;
  else return InvalidArgument("unknown collective '" + first + "'");
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    }
    if (i + 1 >= argc) return InvalidArgument(a + " needs a value (or is unknown)");
    std::string v = argv[++i];
    auto bad = [&](const std::string& what) { return InvalidArgument(a + " '" + v + "': " + what); };
    if (a == "-b" || a == "--minbytes" || a == "-e" || a == "--maxbytes") {
      auto s = ParseSize(v);
      if (!s) return bad("expected a size like 8, 64K, 16M");
      (a == "-b" || a == "--minbytes" ? o.min_bytes : o.max_bytes) = *s;
    } else if (a == "-f" || a == "--stepfactor") {
      auto n = ParseInt(v);
      if (!n || *n < 2) return bad("expected an integer >= 2");
      o.factor = static_cast<uint64_t>(*n);
    } else if (a == "-n" || a == "--iters" || a == "-w" || a == "--warmup") {
      auto n = ParseInt(v);
      bool warm = a == "-w" || a == "--warmup";
      if (!n || *n < (warm ? 0 : 1) || *n > 1000000) return bad("expected a count");
      (warm ? o.warmup : o.iters) = static_cast<int>(*n);
    } else if (a == "-R" || a == "--repeats") {
      auto n = ParseInt(v);
      if (!n || *n < 1 || *n > 1000) return bad("expected a count in [1, 1000]");
      o.repeats = static_cast<int>(*n);
    } else if (a == "-t" || a == "--transport") {
      if (v != "shm" && v != "ucx" && v != "ofi" && v != "tcp") return bad("expected shm, ucx, ofi or tcp");
      o.transport = v;
    } else if (a == "-p" || a == "--place") {
      if (v == "out") o.place = Place::kOut;
      else if (v == "in") o.place = Place::kIn;
      else if (v == "both") o.place = Place::kBoth;
      else return bad("expected out, in or both");
    } else if (a == "-c" || a == "--check") {
      if (v != "0" && v != "1") return bad("expected 0 or 1");
      o.check = v == "1";
    } else if (a == "-d" || a == "--datatype") {
      auto d = ParseDType(v);
      if (!d) return bad("expected u8, i32, i64, f16, bf16, f32 or f64");
      o.dtype = *d;
    } else if (a == "-o" || a == "--op") {
      auto op = ParseReduceOp(v);
      if (!op) return bad("expected sum, avg, min, max or prod");
      o.op = *op;
    } else if (a == "-a" || a == "--algo") {
      auto al = ParseAlgo(v);
      if (!al) return bad("expected auto, ring, tree, doubling, chain or binomial");
      o.algo = *al;
    } else if (a == "-r" || a == "--root") {
      auto n = ParseInt(v);
      if (!n || *n < 0) return bad("expected a rank");
      o.root = static_cast<int>(*n);
    } else if (a == "-z" || a == "--compression") {
      auto z = ParseCompression(v);
      if (!z) return bad("expected none, fp16, bf16 or auto");
      o.compression = *z;
    } else if (a == "--json") {
      o.json = v;
    } else if (a == "--csv") {
      o.csv = v;
    } else {
      return InvalidArgument("unknown option '" + a + "'");
    }
  }
  if (o.min_bytes > o.max_bytes) return InvalidArgument("-b is larger than -e");
  if (o.compression && o.kind != CollKind::kAllreduce) return InvalidArgument("-z applies to allreduce only");
  if (o.compression && (*o.compression == Compression::kFp16 || *o.compression == Compression::kBf16) &&
      !Compressible(o.dtype, o.op))
    return InvalidArgument(std::string("-z ") + CompressionName(*o.compression) + " needs -d f32 or f64 and -o sum or avg, not " +
                           DTypeName(o.dtype) + " " + ReduceOpName(o.op));
  return o;
}

}  // namespace hoop::perf
