// hoop-train's command line. Per-model defaults (batch, learning rate, epochs) apply where an
// option is not given; see Usage().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::train {

struct Options {
  std::string model = "lenet";
  std::string layers;                // onednn | native (layer_factory.h); empty: onednn where built with it
  std::string device = "cpu";        // cpu | cuda | auto (device_choice.h)
  std::vector<std::string> devices;  // --devices: one per rank (cpu | cuda); empty: --device
  bool tf32 = true;                  // cuDNN convolutions may use TF32 (--tf32 on|off)
  bool cudnn_benchmark = false;      // cuDNN's convolution algorithms by measurement (--cudnn-benchmark on|off)
  std::string precision = "fp32";    // fp32 | bf16 | fp16 (precision.h)
  std::string grad_wire;             // f32 | bf16: the gradients on the wire (default: bf16 with --precision bf16)
  int epochs = 0;                    // 0: the model's default
  int batch = 0;                     // per rank; 0: the model's default
  double lr = 0;                     // per rank (scaled by the number of ranks); 0: the model's default
  double momentum = 0.9, weight_decay = 5e-4, warmup_epochs = 0.2;
  bool cosine = true;
  uint64_t seed = 1;
  std::string data;  // empty: kDefaultDataDir
  std::string metrics, checkpoint;
  bool resume = false;
  bool force = false;            // resume on another rank count
  int64_t checkpoint_every = 0;  // steps; 0: at epoch ends only
  double progress_s = 10;        // a progress line this often within an epoch; 0: none
  int threads = 0;               // 0: this host's cores / ranks on it
  // sync (data parallel, the default) | hogwild (hogwild.h) | ps (ps_run.h) | pipeline
  // (strategy_pipeline.cc) | distill (strategy_distill.cc)
  std::string strategy = "sync";
  std::string teacher;                  // distill: the teacher's checkpoint(s) (teacher.h TeacherFiles)
  double temperature = 4, alpha = 0.5;  // distill: the soft targets' T, and their weight in the loss
  int servers = 0;                      // ps: ranks 0..servers-1 hold the parameters (0: not given, 1)
  int stages = 0;                       // pipeline: stages per pipeline (0: all the ranks, one pipeline)
  int micro_batches = 4;                // pipeline: micro-batches per step
  std::string schedule_pipe = "1f1b";   // pipeline: gpipe | 1f1b
  int staleness = -1;                   // ps: the most steps a worker may run ahead of the slowest (-1: none)
  int backup_workers = -1;              // sync with backup workers (backup.h); -1: none (allreduce)
  std::string balance = "equal";        // equal | speed: shares of each global batch (balance.h)
  std::vector<int> shares;              // --shares: fixed images per rank per step (empty: --batch each)
  // --elastic (elastic.cc): sync SGD that goes on through a lost rank (the survivors shrink and
  // take its share of every global batch) and admits newcomers (a grow, the state sent to them).
  bool elastic = false;
  bool deterministic = false;  // --deterministic: bit-identical runs (README "Deterministic mode")
  int kill_rank = -1;          // a failure drill: the process of this job rank (HOOP_RANK) SIGKILLs itself
  int64_t kill_step = -1;      // after this many steps of the run
  int slow_rank = -1;          // a straggler to study: this rank sleeps slow_ms per step
  double slow_ms = 0;
  int64_t train_limit = 0, test_limit = 0;  // 0: the whole set
  std::string transport;
  std::vector<std::string> sweep;  // --sweep KEY=V1,V2,...: each axis of a sweep (sweep.h)
  bool ensemble = false;           // with --sweep: evaluate the trained models' average too
  std::string label;               // printed before a run's lines (a sweep's configuration)
  bool keep_predictions = false;   // keep the last evaluation's probabilities (a sweep's ensemble)
  bool help = false, version = false;
};

const char* Usage();
// Parses argv and fills in the model's defaults; InvalidArgument names the bad option.
StatusOr<Options> ParseOptions(int argc, char** argv);
// Every flag ParseOptions reads (for the usage test).
std::vector<std::string> FlagNames();

}  // namespace hoop::train
