#include "trainer/metrics.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace hoop::train {

namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// name, value pairs in column order: the one list both formats print.
std::vector<std::pair<const char*, double>> Fields(const EpochMetrics& m) {
  return {{"epoch", m.epoch},
          {"wall_s", m.wall_s},
          {"train_s", m.train_s},
          {"images", static_cast<double>(m.images)},
          {"images_per_s", m.images_per_s},
          {"data_s", m.data_s},
          {"forward_s", m.forward_s},
          {"backward_s", m.backward_s},
          {"comm_wait_s", m.comm_wait_s},
          {"optimizer_s", m.optimizer_s},
          {"train_loss", m.train_loss},
          {"train_acc", m.train_acc},
          {"test_loss", m.test_loss},
          {"test_acc", m.test_acc},
          {"lr", m.lr},
          {"cpu_joules", m.cpu_joules},
          {"gpu_joules", m.gpu_joules},
          {"images_per_joule", m.images_per_joule}};
}

// A value for the files: NaN (not available) as JSON's null or CSV's empty cell.
std::string Num(double v, bool json) {
  if (std::isnan(v)) return json ? "null" : "";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// `text` as a JSON string, quotes included.
std::string JsonText(const std::string& text) { return nlohmann::json(text).dump(); }

// The per-rank lists: a JSON array, or one CSV cell of values joined by ';'.
template <class T>
std::string List(const std::vector<T>& v, bool json) {
  if (json) return nlohmann::json(v).dump();
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ';';
    s += Num(static_cast<double>(v[i]), false);
  }
  return s;
}

}  // namespace

std::vector<double> EpochValues(const EpochMetrics& m) {
  std::vector<double> v;
  for (auto& [k, x] : Fields(m)) v.push_back(x);
  return v;
}

size_t EpochFieldCount() { return Fields(EpochMetrics{}).size(); }

EpochMetrics EpochFromValues(const double* v, size_t fields) {
  EpochMetrics m;
  m.epoch = static_cast<int>(v[0]);
  m.wall_s = v[1], m.train_s = v[2], m.images = static_cast<int64_t>(v[3]), m.images_per_s = v[4];
  m.data_s = v[5], m.forward_s = v[6], m.backward_s = v[7], m.comm_wait_s = v[8], m.optimizer_s = v[9];
  m.train_loss = v[10], m.train_acc = v[11], m.test_loss = v[12], m.test_acc = v[13], m.lr = v[14];
  if (fields >= 18) m.cpu_joules = v[15], m.gpu_joules = v[16], m.images_per_joule = v[17];
  return m;
}

std::string FormatEpoch(const EpochMetrics& m, int epochs) {
  char b[320];
  std::snprintf(b, sizeof b,
                "epoch %d/%d: train loss %.4f acc %.2f%% | test loss %.4f acc %.2f%% | %.0f images/s | %.1f s "
                "(data %.2f, forward %.2f, backward %.2f, comm wait %.2f, optimizer %.2f) | %.1f s elapsed",
                m.epoch, epochs, m.train_loss, 100 * m.train_acc, m.test_loss, 100 * m.test_acc, m.images_per_s,
                m.train_s, m.data_s, m.forward_s, m.backward_s, m.comm_wait_s, m.optimizer_s, m.wall_s);
  std::string line = b;
  if (std::isnan(m.images_per_joule)) return line + " | energy n/a";
  auto joules = [](double j) { return std::isnan(j) ? std::string("n/a") : Num(j, false) + " J"; };
  return line + " | energy: CPU " + joules(m.cpu_joules) + ", GPU " + joules(m.gpu_joules) + ", " +
         Num(m.images_per_joule, false) + " images/J";
}

Status WriteMetrics(const std::string& path, const RunInfo& run, const std::vector<EpochMetrics>& epochs) {
  std::ostringstream o;
  if (EndsWith(path, ".json")) {
    o << "{\"model\": \"" << run.model << "\", \"ranks\": " << run.ranks << ", \"batch\": " << run.batch
      << ", \"threads\": " << run.threads << ", \"transport\": \"" << run.transport
      << "\", \"cpu_energy\": " << JsonText(run.cpu_energy) << ", \"gpu_energy\": " << JsonText(run.gpu_energy)
      << ", \"devices\": " << nlohmann::json(run.devices).dump() << ", \"epochs\": [";
    for (size_t i = 0; i < epochs.size(); ++i) {
      o << (i ? ",\n  {" : "\n  {");
      bool first = true;
      for (auto& [k, v] : Fields(epochs[i])) {
        o << (first ? "" : ", ") << '"' << k << "\": " << Num(v, true);
        first = false;
      }
      o << ", \"shares\": " << List(epochs[i].shares, true)
        << ", \"rank_images_per_s\": " << List(epochs[i].rank_images_per_s, true)
        << ", \"ranks_by_step\": " << List(epochs[i].ranks_by_step, true) << "}";
    }
    o << "\n]}\n";
  } else {
    o << "model,ranks,batch,threads,transport";
    for (auto& [k, v] : Fields(EpochMetrics{})) o << ',' << k;
    o << ",shares,rank_images_per_s,ranks_by_step\n";
    for (const auto& m : epochs) {
      o << run.model << ',' << run.ranks << ',' << run.batch << ',' << run.threads << ',' << run.transport;
      for (auto& [k, v] : Fields(m)) o << ',' << Num(v, false);
      o << ',' << List(m.shares, false) << ',' << List(m.rank_images_per_s, false) << ','
        << List(m.ranks_by_step, false) << '\n';
    }
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << o.str();
    if (!f.good()) return ErrnoStatus(Code::kInvalidArgument, "metrics: cannot write " + tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return ErrnoStatus(Code::kInvalidArgument, "metrics: cannot rename " + tmp + " to " + path, err);
  }
  return Status::Ok();
}

}  // namespace hoop::train
