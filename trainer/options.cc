#include "trainer/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/cli.h"
#include "common/parse.h"
#include "trainer/balance.h"
#include "trainer/device_choice.h"
#include "trainer/layer_factory.h"
#include "trainer/model.h"
#include "trainer/precision.h"
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
         "  --batch N               images per rank per step (default: lenet 32, resnet 64);\n"
         "                          --batch-size N is the same\n"
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
         "                          and exit 130/143); one that exists is overwritten, and said so\n"
         "  --checkpoint-every N    also every N steps, mid-epoch (default: epoch ends only)\n"
         "  --resume                continue from --checkpoint, mid-epoch too, as an unbroken run would\n"
         "                          (rank 0 reads it, all ranks get it); --metrics keeps the epochs done.\n"
         "                          No such file yet: trains from the start, saying so (one command\n"
         "                          for a preemption loop)\n"
         "  --force                 resume on another rank count (the rate, --lr x ranks, changes)\n"
         "  --progress SECONDS      a progress line this often within an epoch: step, images/s, time\n"
         "                          left (default 10; on a terminal a line redrawn in place; 0: none)\n"
         "  --threads N             compute threads per rank (default: cores / ranks on this host)\n"
         "  --strategy sync|hogwild|ps|pipeline|distill\n"
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
         "                          distill: knowledge distillation (Hinton et al. 2015), data parallel\n"
         "                          as sync: --model (the student) learns from the soft targets of\n"
         "                          --teacher's model on the same images, on the same device\n"
         "  --teacher FILE[,FILE...]\n"
         "                          distill: hoop-train checkpoints of the teacher (any --model; its\n"
         "                          parameters and batch-norm statistics are read on every rank);\n"
         "                          several: an ensemble, their soft targets averaged. A FILE that is\n"
         "                          not there while FILE.0 is: a sweep's models (--sweep ... --checkpoint\n"
         "                          FILE), FILE.0, FILE.1, ... as the ensemble\n"
         "  --temperature T         distill: the soft targets are softmax(logits / T) (default 4)\n"
         "  --alpha A               distill: the loss is A x T^2 x KL(teacher || student at T) +\n"
         "                          (1 - A) x cross-entropy on the labels (default 0.5)\n"
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
         "                          warmup-epochs, seed, epochs, model, layers, temperature, alpha);\n"
         "                          several --sweep: every\n"
         "                          combination. The configurations share the job's ranks (a group of\n"
         "                          ranks each, or several in turn per rank); rank 0 prints a table of\n"
         "                          their accuracy and time. --metrics FILE and --checkpoint FILE get\n"
         "                          one file each (FILE.K; --teacher FILE takes them all)\n"
         "  --ensemble              with --sweep: also the accuracy of the models' averaged predictions\n"
         "  --elastic               sync SGD through lost ranks and newcomers (under hooprun --min-np):\n"
         "                          the survivors shrink and share out the lost rank's images of every\n"
         "                          global batch (the global batch and learning rate stay), from the\n"
         "                          state in memory; newcomers are admitted at the next look (about\n"
         "                          4 a second) and sent the parameters and the optimizer's state\n"
         "  --deterministic         bit-identical training for a rank count and seed: the same\n"
         "                          checkpoint bytes and metrics over any back end, algorithm, host\n"
         "                          map and fusion setting (hoop's deterministic mode: every gradient\n"
         "                          sum folds in rank order); --threads then defaults to 1 (the CPU\n"
         "                          layers' bits depend on how many threads split a batch: give the\n"
         "                          same --threads to runs you compare); cuDNN's deterministic\n"
         "                          algorithms on GPU ranks. --strategy sync, pipeline or distill\n"
         "  --kill-rank R --kill-step S\n"
         "                          a failure drill: the process with job rank R (HOOP_RANK) kills\n"
         "                          itself (SIGKILL) after S steps of the run\n"
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
         "  --precision fp32|bf16   the layers' arithmetic: f32 (default), or bf16 mixed precision: the\n"
         "                          convolutions multiply in bf16 and accumulate in f32, from f32\n"
         "                          master weights; batch norm, pooling, linear layers and the loss\n"
         "                          stay f32. CPU ranks: oneDNN's bf16 (--layers onednn), where the CPU\n"
         "                          has AVX512-BF16 or AMX (refused where it would be emulated); GPU\n"
         "                          ranks: not yet. fp16 is refused (no fp16 in oneDNN's CPU kernels)\n"
         "  --grad-wire f32|bf16    the gradients' type on the wire (hoop's bf16 compression: half the\n"
         "                          bytes, f32 sums at every hop); default bf16 with --precision bf16\n"
         "  --cudnn-benchmark on|off\n"
         "                          GPU ranks: each convolution takes the algorithm cuDNN measures\n"
         "                          fastest for its input shape, once per shape, as PyTorch's\n"
         "                          cudnn.benchmark (default off: the first cuDNN's heuristics rank)\n"
         "  --tf32 on|off           GPU ranks: let cuDNN's convolutions use TF32 tensor cores (default\n"
         "                          on, as PyTorch's convolutions; matrix products stay f32)\n"
         "  --train-limit N         train on the first N images only (default: all 60000)\n"
         "  --test-limit N          evaluate on the first N test images only (default: all 10000)\n"
         "  -t, --transport T       back end: shm ucx ofi tcp (default: HOOP_TRANSPORT, else per peer)\n"
         "  -h, --help              this text\n"
         "  --version               hoop-train's version\n"
         "\n"
         "A flag's value follows it (--epochs 2) or joins it with '=' (--epochs=2).\n"
         "The tensor fusion settings (HOOP_CYCLE_TIME_MS, HOOP_FUSION_THRESHOLD, HOOP_TIMEOUT, ...)\n"
         "apply as they are set. Example, the main job on one host:\n"
         "  hooprun -np 2 build/bin/hoop-train --model lenet --epochs 2 --metrics lenet.csv\n";
}

namespace {

// Which flags were given where a default depends on it.
struct GivenFlags {
  bool micro = false, schedule = false, balance = false, device = false, temperature = false, alpha = false;
};

// --strategy distill needs its teacher; its settings are for it alone.
Status CheckDistill(const Options& o, const GivenFlags& g) {
  if (o.strategy != "distill") {
    if (!o.teacher.empty() || g.temperature || g.alpha)
      return InvalidArgument(std::string(!o.teacher.empty() ? "--teacher"
                                         : g.temperature    ? "--temperature"
                                                            : "--alpha") +
                             " is for --strategy distill");
    return Status::Ok();
  }
  if (o.teacher.empty())
    return InvalidArgument("--strategy distill needs --teacher FILE: a hoop-train checkpoint of the teacher");
  return Status::Ok();
}

// --deterministic leaves out what makes a run's bits depend on timing: updates applied as they
// come (hogwild, ps), the slowest ranks' gradients dropped (backup workers), splits measured
// (--balance speed), and a membership that changes when a rank is lost (--elastic).
Status CheckDeterministic(const Options& o) {
  if (!o.deterministic) return Status::Ok();
  if (o.strategy != "sync" && o.strategy != "pipeline" && o.strategy != "distill")
    return InvalidArgument("--deterministic trains with --strategy sync, pipeline or distill; " + o.strategy +
                           " applies updates in the order they come");
  if (o.backup_workers >= 0) return InvalidArgument("--deterministic: --backup-workers drops whichever ranks are slow");
  if (o.balance == "speed") return InvalidArgument("--deterministic: --balance speed splits batches by measured speed");
  if (o.elastic) return InvalidArgument("--deterministic: --elastic changes the ranks when one is lost");
  return Status::Ok();
}

// Every flag, stored into `o` as it is read.
void Declare(cli::Flags& f, Options& o, GivenFlags& g) {
  f.Early("-h,--help", &o.help);
  f.Early("--version", &o.version);
  f.Switch("--resume", &o.resume);
  f.Switch("--force", &o.force);
  f.Switch("--ensemble", &o.ensemble);
  // [lo, hi], or (lo, hi] when lo itself is refused (a learning rate of 0); the message prints
  // the range exactly as it is checked.
  auto num = [](double* out, double lo, double hi, bool lo_open = false) {
    return [=](const std::string& v) -> std::string {
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(lo_open ? d > lo : d >= lo) || !(d <= hi)) {
        char range[96];
        std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
        return std::string("expected a number in ") + range;
      }
      *out = d;
      return "";
    };
  };
  auto count = [](auto* out, int64_t lo, int64_t hi) { return cli::Int(out, lo, hi); };
  auto one_of = [](std::string* out, std::vector<std::string> allowed, const char* expected, bool* given = nullptr) {
    return [=](const std::string& v) -> std::string {
      if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) return std::string("expected ") + expected;
      *out = v;
      if (given) *given = true;
      return "";
    };
  };
  f.Value("--model", one_of(&o.model, {"lenet", "resnet", "resnet18", "resnet34"}, kModelNames));
  f.Value("--epochs", count(&o.epochs, 1, 1000));
  f.Value("--batch,--batch-size", count(&o.batch, 1, 65536));  // --batch-size: PyTorch examples' name
  f.Value("--lr", num(&o.lr, 0, 100, true));
  f.Value("--momentum", num(&o.momentum, 0, 0.9999));
  f.Value("--weight-decay", num(&o.weight_decay, 0, 1));
  f.Value("--warmup-epochs", num(&o.warmup_epochs, 0, 1000));
  f.Value("--schedule", [&o](const std::string& v) -> std::string {
    if (v != "cosine" && v != "constant") return "expected cosine or constant";
    o.cosine = v == "cosine";
    return "";
  });
  f.Value("--seed", count(&o.seed, 0, INT64_MAX));
  f.Value("--data", cli::Text(&o.data));
  f.Value("--metrics", cli::Text(&o.metrics));
  f.Value("--checkpoint", cli::Text(&o.checkpoint));
  f.Value("--checkpoint-every", count(&o.checkpoint_every, 1, INT64_MAX));
  f.Value("--progress", num(&o.progress_s, 0, 86400));
  f.Value("--layers", one_of(&o.layers, {"native", "onednn"}, "native or onednn"));
  f.Value("--device", one_of(&o.device, {"cpu", "cuda", "auto"}, "cpu, cuda or auto", &g.device));
  f.Value("--devices", [&o](const std::string&, const std::string& v) -> Status {
    HOOP_ASSIGN_OR_RETURN(o.devices, ParseDevices(v));
    return Status::Ok();
  });
  f.Value("--precision", one_of(&o.precision, {"fp32", "bf16", "fp16"}, "fp32, bf16 or fp16"));
  f.Value("--grad-wire", one_of(&o.grad_wire, {"f32", "bf16"}, "f32 or bf16"));
  f.Value("--cudnn-benchmark", [&o](const std::string& v) -> std::string {
    if (v != "on" && v != "off") return "expected on or off";
    o.cudnn_benchmark = v == "on";
    return "";
  });
  f.Value("--tf32", [&o](const std::string& v) -> std::string {
    if (v != "on" && v != "off") return "expected on or off";
    o.tf32 = v == "on";
    return "";
  });
  f.Value("--strategy", one_of(&o.strategy, {"sync", "hogwild", "ps", "pipeline", "distill"},
                               "sync, hogwild, ps, pipeline or distill"));
  f.Value("--teacher", cli::Text(&o.teacher));
  f.Value("--temperature", [&o, &g, num](const std::string& v) {
    g.temperature = true;
    return num(&o.temperature, 0, 1000, true)(v);
  });
  f.Value("--alpha", [&o, &g, num](const std::string& v) {
    g.alpha = true;
    return num(&o.alpha, 0, 1)(v);
  });
  f.Value("--servers", count(&o.servers, 1, 65535));
  f.Value("--stages", count(&o.stages, 1, 65535));
  f.Value("--micro-batches", [&o, &g, count](const std::string& v) {
    g.micro = true;
    return count(&o.micro_batches, 1, 65536)(v);
  });
  f.Value("--schedule-pipe", one_of(&o.schedule_pipe, {"gpipe", "1f1b"}, "gpipe or 1f1b", &g.schedule));
  f.Value("--staleness", count(&o.staleness, 0, 1000000));
  f.Value("--backup-workers", count(&o.backup_workers, 0, 65535));
  f.Value("--sweep", [&o](const std::string&, const std::string& v) -> Status {
    HOOP_RETURN_IF_ERROR(ParseSweep(v).status());
    o.sweep.push_back(v);
    return Status::Ok();
  });
  f.Value("--balance", one_of(&o.balance, {"equal", "speed"}, "equal or speed", &g.balance));
  f.Value("--shares", [&o](const std::string&, const std::string& v) -> Status {
    HOOP_ASSIGN_OR_RETURN(o.shares, ParseShares(v));
    return Status::Ok();
  });
  f.Switch("--elastic", &o.elastic);
  f.Switch("--deterministic", &o.deterministic);
  f.Value("--kill-rank", count(&o.kill_rank, 0, 1 << 20));
  f.Value("--kill-step", count(&o.kill_step, 1, INT64_MAX));
  f.Value("--slow-rank", count(&o.slow_rank, 0, 65535));
  f.Value("--slow-ms", num(&o.slow_ms, 0, 60000));
  f.Value("--threads", count(&o.threads, 1, 256));
  f.Value("--train-limit", count(&o.train_limit, 1, INT64_MAX));
  f.Value("--test-limit", count(&o.test_limit, 1, INT64_MAX));
  f.Value("-t,--transport", cli::OneOf(&o.transport, {"shm", "ucx", "ofi", "tcp"}));
}

}  // namespace

std::vector<std::string> FlagNames() {
  Options o;
  GivenFlags g;
  cli::Flags f;
  Declare(f, o, g);
  return f.Names();
}

StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  GivenFlags g;
  cli::Flags f;
  Declare(f, o, g);
  HOOP_RETURN_IF_ERROR(f.Parse(argc, argv));
  if (o.help || o.version) return o;
  const bool micro_given = g.micro, schedule_given = g.schedule, balance_given = g.balance, device_given = g.device;
  if (o.resume && o.checkpoint.empty()) return InvalidArgument("--resume needs --checkpoint FILE");
  if (o.checkpoint_every && o.checkpoint.empty()) return InvalidArgument("--checkpoint-every needs --checkpoint FILE");
  if (o.force && !o.resume) return InvalidArgument("--force applies to --resume only");
  if (o.backup_workers >= 0 && o.strategy != "sync") return InvalidArgument("--backup-workers is for --strategy sync");
  if ((o.servers || o.staleness >= 0) && o.strategy != "ps")
    return InvalidArgument(std::string(o.servers ? "--servers" : "--staleness") + " is for --strategy ps");
  if ((o.stages || micro_given || schedule_given) && o.strategy != "pipeline")
    return InvalidArgument(std::string(o.stages      ? "--stages"
                                       : micro_given ? "--micro-batches"
                                                     : "--schedule-pipe") +
                           " is for --strategy pipeline");
  if (o.strategy == "pipeline" || o.strategy == "ps") {
    if (o.balance != "equal" || !o.shares.empty())
      return InvalidArgument("--strategy " + o.strategy + ": --balance and --shares are for --strategy sync");
    if (!o.sweep.empty())
      return InvalidArgument("--sweep runs --strategy sync, hogwild or distill configurations, not " + o.strategy);
  }
  if (o.strategy == "ps") {
    if (!o.servers) o.servers = 1;
  }
  if (o.ensemble && o.sweep.empty()) return InvalidArgument("--ensemble averages a sweep's models: it needs --sweep");
  if (!o.sweep.empty() && o.resume) return InvalidArgument("--sweep runs many models: --resume is for one");
  if ((o.slow_rank >= 0) != (o.slow_ms > 0)) return InvalidArgument("--slow-rank and --slow-ms go together");
  if ((o.kill_rank >= 0) != (o.kill_step > 0)) return InvalidArgument("--kill-rank and --kill-step go together");
  if (o.elastic &&
      (o.strategy != "sync" || o.backup_workers >= 0 || !o.sweep.empty() || !o.shares.empty() || o.balance != "equal"))
    return InvalidArgument(
        "--elastic trains with --strategy sync (allreduce), without --backup-workers, --sweep, --shares or "
        "--balance speed");
  if (!o.shares.empty() && o.balance == "speed")
    return InvalidArgument("--shares fixes the split; --balance speed measures it: give one");
  HOOP_RETURN_IF_ERROR(CheckDistill(o, g));
  HOOP_RETURN_IF_ERROR(CheckDeterministic(o));
  if (device_given && !o.devices.empty()) return InvalidArgument("--device and --devices: give one");
  bool any_gpu = o.device != "cpu", any_cpu = o.device != "cuda";
  if (!o.devices.empty()) {
    any_gpu = std::find(o.devices.begin(), o.devices.end(), "cuda") != o.devices.end();
    any_cpu = std::find(o.devices.begin(), o.devices.end(), "cpu") != o.devices.end();
  }
  if (any_gpu) {
    if ((o.strategy != "sync" && o.strategy != "distill") || o.backup_workers >= 0 || !o.sweep.empty())
      return InvalidArgument(std::string(o.devices.empty() ? "--device " + o.device : "--devices") +
                             ": GPU ranks train with --strategy sync or distill (allreduce), without --backup-workers "
                             "or --sweep");
    if (any_cpu && !balance_given && o.shares.empty()) o.balance = "speed";  // a hybrid job
  }
  const bool lenet = o.model == "lenet";
  if (o.epochs == 0) o.epochs = lenet ? 2 : 4;
  if (o.batch == 0) o.batch = lenet ? 32 : 64;
  if (o.lr == 0) o.lr = lenet ? 0.025 : 0.05;
  if (o.layers.empty()) o.layers = HaveOneDnn() ? "onednn" : "native";
  HOOP_RETURN_IF_ERROR(CheckPrecision(o, any_cpu, any_gpu));
  // The gradients go through the fusion runtime's allreduce with sync and distill only (hogwild,
  // ps, backup workers and the pipeline move theirs in their own ways, f32).
  const bool allreduced = (o.strategy == "sync" || o.strategy == "distill") && o.backup_workers < 0;
  if (!o.grad_wire.empty() && !allreduced)
    return InvalidArgument(
        "--grad-wire is for the gradients' allreduce: --strategy sync or distill, without "
        "--backup-workers");
  if (o.grad_wire.empty()) o.grad_wire = o.precision == "bf16" && allreduced ? "bf16" : "f32";
  if (o.strategy == "pipeline" && o.micro_batches > o.batch)
    return InvalidArgument("--micro-batches " + std::to_string(o.micro_batches) + ": more than the " +
                           std::to_string(o.batch) + " images of --batch");
  return o;
}

}  // namespace hoop::train
