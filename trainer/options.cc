#include "trainer/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/parse.h"
#include "trainer/balance.h"
#include "trainer/device_choice.h"
#include "trainer/layer_factory.h"
#include "trainer/model.h"
#include "trainer/sweep.h"

namespace hoop::train {

const char* Usage() {
  return "usage: hoop-train [options]          (run it under hooprun, mpirun or srun; alone it is 1 rank)\n"
         "\n"
         "Trains a CNN on Fashion-MNIST (or CIFAR-10) with synchronous data-parallel SGD: every rank trains on its\n"
         "shard of each global batch, and gradients are averaged through hoop's tensor fusion runtime\n"
         "while backward is still running.\n"
         "  --model NAME            the network: lenet (default), resnet (small, with batch norm),\n"
         "                          resnet18 or resnet34 (32x32 inputs: Fashion-MNIST is padded)\n"
         "  --epochs N              passes over the training set (default: lenet 2, resnet 4)\n"
         "  --batch N               images per rank per step (default: lenet 32, resnet 64)\n"
         "  --lr X                  learning rate per rank; the rate used is X times the number of\n"
         "                          ranks, reached by linear warm-up (default: lenet 0.025, resnet 0.05)\n"
         "  --momentum X            (default 0.9)\n"
         "  --weight-decay X        (default 5e-4)\n"
         "  --warmup-epochs X       length of the warm-up, in epochs (default 0.2; 0: none)\n"
         "  --schedule cosine|constant\n"
         "                          after warm-up: decay to 0 along a half cosine (default), or hold\n"
         "  --seed N                weights and the per-epoch shuffle (default 1)\n"
         "  --data DIR              Fashion-MNIST's IDX files, gzipped or not (default\n"
         "                          /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist),\n"
         "                          or CIFAR-10's binary version (data_batch_N.bin, test_batch.bin;\n"
         "                          resnet18/34 only)\n"
         "  --metrics FILE          per-epoch metrics, JSON if FILE ends in .json, else CSV (rank 0)\n"
         "  --checkpoint FILE       written by rank 0 after every epoch, atomically, and when the job\n"
         "                          is interrupted (Ctrl-C, SIGTERM: the ranks agree on a step, save it\n"
         "                          and exit 130/143)\n"
         "  --checkpoint-every N    also every N steps, mid-epoch (default: epoch ends only)\n"
         "  --resume                continue from --checkpoint, mid-epoch too, as an unbroken run would\n"
         "                          (rank 0 reads it, all ranks get it); --metrics keeps the epochs done\n"
         "  --force                 resume on another rank count (the rate, --lr x ranks, changes)\n"
         "  --progress SECONDS      a progress line this often within an epoch: step, images/s, time\n"
         "                          left (default 10; on a terminal a line redrawn in place; 0: none)\n"
         "  --threads N             compute threads per rank (default: cores / ranks on this host)\n"
         "  --strategy sync|hogwild|ps|pipeline\n"
         "                          sync: synchronous data parallelism, gradients averaged every step\n"
         "                          (the default); hogwild: ranks on one host update one shared copy\n"
         "                          of the parameters without locks, each with its own batches at\n"
         "                          --lr / ranks (Recht et al. 2011; no gradients exchanged); ps:\n"
         "                          parameter servers (DistBelief): ranks 0..K-1 hold the parameters,\n"
         "                          sharded by size, and apply each worker's gradient as it arrives\n"
         "                          at --lr / workers; the other ranks are workers that pull them,\n"
         "                          compute on their own batches and push, without waiting for each\n"
         "                          other. A worker that dies is left out and the job goes on (run it\n"
         "                          under hooprun --enable-recovery); a server that dies ends it\n"
         "                          pipeline: the model's layers split over --stages ranks, each step's\n"
         "                          batch through them in micro-batches; with more ranks, several\n"
         "                          pipelines share each global batch as sync's ranks do\n"
         "  --servers K             ps: how many of the ranks are servers (default 1)\n"
         "  --staleness S           ps: a worker starts step t only once every live worker has pushed\n"
         "                          step t-S-1, so what it reads misses at most S steps of any other\n"
         "                          (default: no bound). 0: the servers sum each step's gradients of\n"
         "                          every worker and apply their mean: synchronous SGD, as sync's\n"
         "                          rate (--lr x workers) and updates\n"
         "  --stages S              pipeline: stages per pipeline (default: every rank, one pipeline);\n"
         "                          the ranks must be a multiple of S. Layers are split into S\n"
         "                          contiguous groups balanced by rank 0's measured time per layer\n"
         "  --micro-batches M       pipeline: each step's --batch images in M micro-batches (default\n"
         "                          4); gradients are summed over them, so the step is the batch's\n"
         "                          (batch norm sees each micro-batch's statistics, as GPipe's)\n"
         "  --schedule-pipe gpipe|1f1b\n"
         "                          pipeline: every forward then every backward (gpipe), or one\n"
         "                          forward and one backward in turn once the pipeline is full (1f1b,\n"
         "                          the default: fewer micro-batches in flight per stage)\n"
         "  --backup-workers B      sync SGD whose steps use the first (ranks - B) gradients to reach\n"
         "                          rank 0 and drop the B slowest (the dropped ranks take the same\n"
         "                          step, and one that fell behind skips the steps it missed); the\n"
         "                          mean is over the images used\n"
         "  --balance equal|speed   how each global batch (--batch x ranks) is split: equally (the\n"
         "                          default), or in proportion to each rank's measured speed,\n"
         "                          re-measured every epoch, for ranks of unequal speed\n"
         "  --shares N,N,...        a fixed split instead: images per rank in each global batch\n"
         "  --sweep KEY=V1,V2,...   train one model per value (KEY: lr, batch, momentum, weight-decay,\n"
         "                          warmup-epochs, seed, epochs, model, layers); several --sweep: every\n"
         "                          combination. The configurations share the job's ranks (a group of\n"
         "                          ranks each, or several in turn per rank); rank 0 prints a table of\n"
         "                          their accuracy and time. --metrics FILE gets one file each (FILE.K)\n"
         "  --ensemble              with --sweep: also the accuracy of the models' averaged predictions\n"
         "  --slow-rank R --slow-ms T\n"
         "                          a straggler to study: rank R sleeps T ms in every step's\n"
         "                          forward pass, as a slower device would compute\n"
         "  --layers native|onednn  the layers' back end: oneDNN's primitives (convolution, batch norm\n"
         "                          with ReLU fused, max pooling; the default where hoop was built\n"
         "                          with libdnnl-dev) or the hand-written ones (im2col + OpenBLAS);\n"
         "                          the same model and parameters either way (CPU ranks)\n"
         "  --device cpu|cuda|auto  where the ranks compute: the CPU (default); a GPU each (local rank r\n"
         "                          on GPU r modulo the GPUs: cuDNN and cuBLAS layers, parameters and\n"
         "                          gradients on the device, exchanged over CUDA IPC on one host); auto:\n"
         "                          local ranks below the number of GPUs on one each, the rest on the\n"
         "                          CPU (a hybrid job: --balance speed is then its default)\n"
         "  --devices D,D,...       one device per rank, cpu or cuda, in rank order (a hybrid job\n"
         "                          when they differ)\n"
         "  --tf32 on|off           GPU ranks: let cuDNN's convolutions use TF32 tensor cores (default\n"
         "                          on, as PyTorch's convolutions; matrix products stay f32)\n"
         "  --train-limit N         train on the first N images only (default: all 60000)\n"
         "  --test-limit N          evaluate on the first N test images only (default: all 10000)\n"
         "  -t, --transport T       back end: shm ucx ofi tcp (default: HOOP_TRANSPORT, else per peer)\n"
         "  -h, --help              this text\n"
         "  --version               hoop-train's version\n"
         "\n"
         "The tensor fusion settings (HOOP_CYCLE_TIME_MS, HOOP_FUSION_THRESHOLD, HOOP_TIMEOUT, ...)\n"
         "apply as they are set. Example, the main job on one host:\n"
         "  hooprun -np 2 build/bin/hoop-train --model lenet --epochs 2 --metrics lenet.csv\n";
}

StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  // [lo, hi], or (lo, hi] when lo itself is refused (a learning rate of 0); the message prints
  // the range exactly as it is checked.
  auto num = [](const std::string& a, const std::string& v, double lo, double hi, bool lo_open = false) -> StatusOr<double> {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(lo_open ? d > lo : d >= lo) || !(d <= hi)) {
      char range[96];
      std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
      return InvalidArgument(a + " '" + v + "': expected a number in " + range);
    }
    return d;
  };
  auto count = [](const std::string& a, const std::string& v, int64_t lo, int64_t hi) -> StatusOr<int64_t> {
    auto n = ParseInt(v);
    if (!n || *n < lo || *n > hi)
      return InvalidArgument(a + " '" + v + "': expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return *n;
  };
  bool micro_given = false, schedule_given = false, balance_given = false, device_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    }
    if (a == "--version") {
      o.version = true;
      return o;
    }
    if (a == "--resume" || a == "--force" || a == "--ensemble") {
      (a == "--resume" ? o.resume : a == "--force" ? o.force : o.ensemble) = true;
      continue;
    }
    static const char* const kValued[] = {"--model", "--epochs", "--batch", "--lr", "--momentum", "--weight-decay",
                                          "--warmup-epochs", "--schedule", "--seed", "--data", "--metrics", "--checkpoint",
                                          "--threads", "--strategy", "--servers", "--staleness", "--stages", "--micro-batches", "--schedule-pipe", "--backup-workers", "--sweep", "--balance", "--shares", "--slow-rank", "--slow-ms",
                                          "--layers", "--device", "--devices", "--tf32", "--train-limit", "--test-limit", "-t", "--transport",
                                          "--checkpoint-every", "--progress"};
    if (std::find(std::begin(kValued), std::end(kValued), a) == std::end(kValued))
      return InvalidArgument("unknown option '" + a + "' (see --help)");
    if (i + 1 >= argc) return InvalidArgument(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--model") {
      if (v != "lenet" && v != "resnet" && v != "resnet18" && v != "resnet34")
        return InvalidArgument("--model '" + v + "': expected " + kModelNames);
      o.model = v;
    } else if (a == "--epochs") {
      HOOP_ASSIGN_OR_RETURN(int64_t n, count(a, v, 1, 1000));
      o.epochs = static_cast<int>(n);
    } else if (a == "--batch") {
      HOOP_ASSIGN_OR_RETURN(int64_t n, count(a, v, 1, 65536));
      o.batch = static_cast<int>(n);
    } else if (a == "--lr") {
      HOOP_ASSIGN_OR_RETURN(o.lr, num(a, v, 0, 100, true));
    } else if (a == "--momentum") {
      HOOP_ASSIGN_OR_RETURN(o.momentum, num(a, v, 0, 0.9999));
    } else if (a == "--weight-decay") {
      HOOP_ASSIGN_OR_RETURN(o.weight_decay, num(a, v, 0, 1));
    } else if (a == "--warmup-epochs") {
      HOOP_ASSIGN_OR_RETURN(o.warmup_epochs, num(a, v, 0, 1000));
    } else if (a == "--schedule") {
      if (v != "cosine" && v != "constant") return InvalidArgument("--schedule '" + v + "': expected cosine or constant");
      o.cosine = v == "cosine";
    } else if (a == "--seed") {
      HOOP_ASSIGN_OR_RETURN(int64_t n, count(a, v, 0, INT64_MAX));
      o.seed = static_cast<uint64_t>(n);
    } else if (a == "--data") {
      o.data = v;
    } else if (a == "--metrics") {
      o.metrics = v;
    } else if (a == "--checkpoint") {
      o.checkpoint = v;
    } else if (a == "--checkpoint-every") {
      HOOP_ASSIGN_OR_RETURN(o.checkpoint_every, count(a, v, 1, INT64_MAX));
    } else if (a == "--progress") {
      HOOP_ASSIGN_OR_RETURN(o.progress_s, num(a, v, 0, 86400));
    } else if (a == "--layers") {
      if (v != "native" && v != "onednn") return InvalidArgument("--layers '" + v + "': expected native or onednn");
      o.layers = v;
    } else if (a == "--device") {
      if (v != "cpu" && v != "cuda" && v != "auto") return InvalidArgument("--device '" + v + "': expected cpu, cuda or auto");
      o.device = v;
      device_given = true;
    } else if (a == "--devices") {
      HOOP_ASSIGN_OR_RETURN(o.devices, ParseDevices(v));
    } else if (a == "--tf32") {
      if (v != "on" && v != "off") return InvalidArgument("--tf32 '" + v + "': expected on or off");
      o.tf32 = v == "on";
    } else if (a == "--strategy") {
      if (v != "sync" && v != "hogwild" && v != "ps" && v != "pipeline")
        return InvalidArgument("--strategy '" + v + "': expected sync, hogwild, ps or pipeline");
      o.strategy = v;
    } else if (a == "--servers") {
      HOOP_ASSIGN_OR_RETURN(int64_t k, count(a, v, 1, 65535));
      o.servers = static_cast<int>(k);
    } else if (a == "--stages") {
      HOOP_ASSIGN_OR_RETURN(int64_t k, count(a, v, 1, 65535));
      o.stages = static_cast<int>(k);
    } else if (a == "--micro-batches") {
      HOOP_ASSIGN_OR_RETURN(int64_t k, count(a, v, 1, 65536));
      o.micro_batches = static_cast<int>(k);
      micro_given = true;
    } else if (a == "--schedule-pipe") {
      if (v != "gpipe" && v != "1f1b") return InvalidArgument("--schedule-pipe '" + v + "': expected gpipe or 1f1b");
      o.schedule_pipe = v;
      schedule_given = true;
    } else if (a == "--staleness") {
      HOOP_ASSIGN_OR_RETURN(int64_t k, count(a, v, 0, 1000000));
      o.staleness = static_cast<int>(k);
    } else if (a == "--backup-workers") {
      HOOP_ASSIGN_OR_RETURN(int64_t b, count(a, v, 0, 65535));
      o.backup_workers = static_cast<int>(b);
    } else if (a == "--sweep") {
      HOOP_RETURN_IF_ERROR(ParseSweep(v).status());
      o.sweep.push_back(v);
    } else if (a == "--balance") {
      if (v != "equal" && v != "speed") return InvalidArgument("--balance '" + v + "': expected equal or speed");
      o.balance = v;
      balance_given = true;
    } else if (a == "--shares") {
      HOOP_ASSIGN_OR_RETURN(o.shares, ParseShares(v));
    } else if (a == "--slow-rank") {
      HOOP_ASSIGN_OR_RETURN(int64_t r, count(a, v, 0, 65535));
      o.slow_rank = static_cast<int>(r);
    } else if (a == "--slow-ms") {
      HOOP_ASSIGN_OR_RETURN(o.slow_ms, num(a, v, 0, 60000));
    } else if (a == "--threads") {
      HOOP_ASSIGN_OR_RETURN(int64_t n, count(a, v, 1, 256));
      o.threads = static_cast<int>(n);
    } else if (a == "--train-limit") {
      HOOP_ASSIGN_OR_RETURN(o.train_limit, count(a, v, 1, INT64_MAX));
    } else if (a == "--test-limit") {
      HOOP_ASSIGN_OR_RETURN(o.test_limit, count(a, v, 1, INT64_MAX));
    } else {  // -t, --transport
      static const char* const kBackends[] = {"shm", "ucx", "ofi", "tcp"};
      if (std::find(std::begin(kBackends), std::end(kBackends), v) == std::end(kBackends))
        return InvalidArgument(a + " '" + v + "': expected shm, ucx, ofi or tcp");
      o.transport = v;
    }
  }
  if (o.resume && o.checkpoint.empty()) return InvalidArgument("--resume needs --checkpoint FILE");
  if (o.checkpoint_every && o.checkpoint.empty()) return InvalidArgument("--checkpoint-every needs --checkpoint FILE");
  if (o.force && !o.resume) return InvalidArgument("--force applies to --resume only");
  if (o.backup_workers >= 0 && o.strategy != "sync") return InvalidArgument("--backup-workers is for --strategy sync");
  if ((o.servers || o.staleness >= 0) && o.strategy != "ps")
    return InvalidArgument(std::string(o.servers ? "--servers" : "--staleness") + " is for --strategy ps");
  if ((o.stages || micro_given || schedule_given) && o.strategy != "pipeline")
    return InvalidArgument(std::string(o.stages ? "--stages" : micro_given ? "--micro-batches" : "--schedule-pipe") +
                           " is for --strategy pipeline");
  if (o.strategy == "pipeline" || o.strategy == "ps") {
    if (o.balance != "equal" || !o.shares.empty())
      return InvalidArgument("--strategy " + o.strategy + ": --balance and --shares are for --strategy sync");
    if (!o.sweep.empty()) return InvalidArgument("--sweep runs --strategy sync or hogwild configurations, not " + o.strategy);
  }
  if (o.strategy == "ps") {
    if (!o.servers) o.servers = 1;
  }
  if (o.ensemble && o.sweep.empty()) return InvalidArgument("--ensemble averages a sweep's models: it needs --sweep");
  if (!o.sweep.empty() && (!o.checkpoint.empty() || o.resume))
    return InvalidArgument("--sweep runs many models: --checkpoint and --resume are for one");
  if ((o.slow_rank >= 0) != (o.slow_ms > 0)) return InvalidArgument("--slow-rank and --slow-ms go together");
  if (!o.shares.empty() && o.balance == "speed") return InvalidArgument("--shares fixes the split; --balance speed measures it: give one");
  if (device_given && !o.devices.empty()) return InvalidArgument("--device and --devices: give one");
  bool any_gpu = o.device != "cpu", any_cpu = o.device != "cuda";
  if (!o.devices.empty()) {
    any_gpu = std::find(o.devices.begin(), o.devices.end(), "cuda") != o.devices.end();
    any_cpu = std::find(o.devices.begin(), o.devices.end(), "cpu") != o.devices.end();
  }
  if (any_gpu) {
    if (o.strategy != "sync" || o.backup_workers >= 0 || !o.sweep.empty())
      return InvalidArgument(std::string(o.devices.empty() ? "--device " + o.device : "--devices") +
                             ": GPU ranks train with --strategy sync (allreduce), without --backup-workers or --sweep");
    if (any_cpu && !balance_given && o.shares.empty()) o.balance = "speed";  // a hybrid job
  }
  const bool lenet = o.model == "lenet";
  if (o.epochs == 0) o.epochs = lenet ? 2 : 4;
  if (o.batch == 0) o.batch = lenet ? 32 : 64;
  if (o.lr == 0) o.lr = lenet ? 0.025 : 0.05;
  if (o.layers.empty()) o.layers = HaveOneDnn() ? "onednn" : "native";
  if (o.strategy == "pipeline" && o.micro_batches > o.batch)
    return InvalidArgument("--micro-batches " + std::to_string(o.micro_batches) + ": more than the " +
                           std::to_string(o.batch) + " images of --batch");
  return o;
}

}  // namespace hoop::train
