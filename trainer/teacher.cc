#include "trainer/teacher.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "trainer/checkpoint.h"
#include "trainer/loss.h"

namespace hoop::train {

namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

StatusOr<std::vector<std::string>> TeacherFiles(const std::string& spec) {
  std::vector<std::string> files;
  size_t at = 0;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string path = spec.substr(at, comma - at);
    at = comma + 1;
    if (path.empty()) return InvalidArgument("--teacher '" + spec + "': an empty path");
    if (IsFile(path) || !IsFile(path + ".0")) {
      if (!IsFile(path))
        return NotFound("--teacher " + path + ": no such checkpoint (nor " + path +
                        ".0, the first of a sweep's; train the teacher with --checkpoint " + path + " first)");
      files.push_back(path);
      continue;
    }
    for (int k = 0; IsFile(path + "." + std::to_string(k)); ++k) files.push_back(path + "." + std::to_string(k));
  }
  return files;
}

StatusOr<std::unique_ptr<Teacher>> Teacher::Load(const std::vector<std::string>& files, const Build& build,
                                                 const Dataset& train, float temperature) {
  auto t = std::make_unique<Teacher>();
  t->temperature_ = temperature;
  for (const std::string& file : files) {
    auto where = [&](const Status& s) { return s.WithContext("--teacher " + file); };
    auto info = PeekCheckpoint(file);
    if (!info.ok()) return where(info.status());
    auto model = build(info->model);
    if (!model.ok()) return where(model.status());
    NamedTensors weights = (*model)->net.Buffers();
    for (Param* p : (*model)->net.Params()) weights.emplace_back(p->name, &p->value);
    CheckpointInfo read;
    if (Status s = LoadCheckpoint(file, info->model, weights, &read, ExtraTensors::kSkip); !s.ok()) return where(s);
    if (info->steps_done == 0)
      return where(FailedPrecondition("the checkpoint holds no training (0 steps): an untrained teacher"));
    auto pad = InputPad(**model, train);
    if (!pad.ok()) return where(pad.status());
    if ((*model)->classes != 10)
      return where(InvalidArgument("the teacher has " + std::to_string((*model)->classes) + " classes, not 10"));
    t->members_.push_back(Member{std::move(*model), *pad, file, info->epochs_done});
  }
  if (t->members_.empty()) return InvalidArgument("--teacher: no checkpoint given");
  return t;
}

const float* Teacher::Targets(const Dataset& train, const int64_t* perm, int n, ThreadPool& pool) {
  const auto start = std::chrono::steady_clock::now();
  if (have_.size() != static_cast<size_t>(train.count)) {
    have_.assign(train.count, 0);
    kept_.assign(static_cast<size_t>(train.count) * 10, 0.0f);
  }
  todo_.clear();
  for (int i = 0; i < n; ++i)
    if (!have_[perm[i]]) todo_.push_back(perm[i]);
  const int m = static_cast<int>(todo_.size());
  if (m > 0) {
    probs_.resize(static_cast<size_t>(m) * 10);
    for (Member& mb : members_) {
      Gather(train, todo_.data(), m, ws_.batch, ws_.labels, mb.pad);
      Softmax(ForwardBatch(*mb.model, ws_, Mode::kEval, pool), probs_.data(), temperature_);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < 10; ++j)
          kept_[todo_[i] * 10 + j] += probs_[i * 10 + j] / static_cast<float>(members_.size());
    }
    for (int64_t image : todo_) have_[image] = 1;
  }
  out_.resize(static_cast<size_t>(n) * 10);
  for (int i = 0; i < n; ++i) std::copy_n(&kept_[perm[i] * 10], 10, &out_[i * 10]);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out_.data();
}

std::string Teacher::Describe() const {
  if (members_.size() == 1) {
    const Member& m = members_[0];
    return m.model->name + " from " + m.file + " (" + std::to_string(m.epochs) + " epoch(s))";
  }
  std::string names;
  for (const Member& m : members_) names += (names.empty() ? "" : ", ") + m.model->name;
  return "an ensemble of " + std::to_string(members_.size()) + " (" + names + ")";
}

}  // namespace hoop::train
