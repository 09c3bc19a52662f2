// See dumps.h.
#include "tools/hoop-doctor/dumps.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace hoop::doctor {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Op::Signature() const {
  return op + " " + dtype + " " + std::to_string(count) + " " + std::to_string(root);
}

std::string Op::Describe() const {
  std::string s = op;
  if (op != "barrier") s += " " + std::to_string(count) + " x " + dtype;
  if (root >= 0) s += " (root " + std::to_string(root) + ")";
  if (peer >= 0) s += std::string(op == "send" ? " to" : " from") + " rank " + std::to_string(peer);
  if (!name.empty()) s += " [" + name + "]";
  return s;
}

namespace {

template <typename T>
T Get(const json& j, const char* key, T otherwise) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return otherwise;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return otherwise;
  }
}

Op HoopOp(const json& e) {
  Op o;
  o.seq = Get<int64_t>(e, "seq", -1);
  o.op = Get<std::string>(e, "op", "?");
  o.dtype = Get<std::string>(e, "dtype", "?");
  o.algo = Get<std::string>(e, "algo", "");
  o.name = Get<std::string>(e, "name", "");
  o.state = Get<std::string>(e, "state", "?");
  o.error = Get<std::string>(e, "error", "");
  o.count = Get<uint64_t>(e, "count", 0);
  o.root = Get<int>(e, "root", -1);
  o.peer = Get<int>(e, "peer", -1);
  o.step = Get<uint32_t>(e, "step", 0);
  o.chunk = Get<uint32_t>(e, "chunk", 0);
  o.waiting_for = Get<std::vector<int>>(e, "waiting_for", {});
  if (o.op == "send" || o.op == "recv") o.seq = -1;
  return o;
}

RankDump HoopDump(const json& j, const std::string& file) {
  RankDump d;
  d.file = file;
  d.comm = Get<std::string>(j, "comm", "?");
  d.reason = Get<std::string>(j, "reason", "");
  d.host = Get<std::string>(j, "host", "");
  d.rank = Get<int>(j, "rank", -1);
  d.size = Get<int>(j, "size", 0);
  d.pid = Get<int>(j, "pid", 0);
  d.retransmits = Get<std::vector<int64_t>>(j, "retransmits", {});
  for (const json& e : j.value("ops", json::array()))
    if (!Get<bool>(e, "busy", false)) d.ops.push_back(HoopOp(e));
  if (j.contains("queued") && j["queued"].is_array())
    for (const json& e : j["queued"]) d.queued.push_back(HoopOp(e));
  return d;
}

// PyTorch: "nccl:all_reduce" -> "allreduce" (hoop's names where they are the same collective).
std::string TorchOpName(std::string name) {
  if (auto colon = name.find(':'); colon != std::string::npos) name = name.substr(colon + 1);
  static const std::pair<const char*, const char*> kSame[] = {
      {"all_reduce", "allreduce"},      {"allreduce", "allreduce"},
      {"broadcast", "broadcast"},       {"all_gather", "allgather"},
      {"_allgather_base", "allgather"}, {"reduce_scatter", "reduce_scatter"},
      {"barrier", "barrier"},           {"reduce", "reduce"},
      {"all_to_all", "alltoall"}};
  for (const auto& [torch, hoop] : kSame)
    if (name == torch) return hoop;
  return name;
}

int RankFromName(const std::string& file) {
  const std::string stem = fs::path(file).stem().string();
  size_t i = stem.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(stem[i - 1]))) --i;
  return i < stem.size() ? std::stoi(stem.substr(i)) : -1;
}

std::vector<RankDump> TorchDumps(const json& j, const std::string& file) {
  std::vector<RankDump> out;
  const int rank = RankFromName(file);
  for (const json& e : j["entries"]) {
    const json pg = e.value("process_group", json::array());
    const std::string comm = pg.is_array() && !pg.empty() && pg[0].is_string() ? pg[0].get<std::string>() : "?";
    auto at = std::find_if(out.begin(), out.end(), [&](const RankDump& d) { return d.comm == comm; });
    if (at == out.end()) {
      RankDump d;
      d.file = file;
      d.comm = comm;
      d.rank = rank;
      d.reason = "pytorch";
      if (j.contains("pg_config") && j["pg_config"].contains(comm)) {
        const std::string ranks = Get<std::string>(j["pg_config"][comm], "ranks", "");
        d.size = ranks.empty() ? 0 : static_cast<int>(std::count(ranks.begin(), ranks.end(), ',')) + 1;
      }
      out.push_back(d);
      at = out.end() - 1;
    }
    Op o;
    const bool p2p = Get<bool>(e, "is_p2p", false);
    o.seq = p2p ? -1 : Get<int64_t>(e, "collective_seq_id", -1);
    o.name = Get<std::string>(e, "profiling_name", "");
    o.op = TorchOpName(o.name.empty() ? "?" : o.name);
    const std::string st = Get<std::string>(e, "state", "?");
    o.state = st == "completed" ? "done" : st == "scheduled" ? "queued" : st;
    const json sizes = e.value("input_sizes", json::array());
    o.count = 1;
    if (sizes.is_array() && !sizes.empty() && sizes[0].is_array())
      for (const json& n : sizes[0]) o.count *= n.is_number_unsigned() ? n.get<uint64_t>() : 1;
    const json dtypes = e.value("input_dtypes", json::array());
    o.dtype = dtypes.is_array() && !dtypes.empty() && dtypes[0].is_string() ? dtypes[0].get<std::string>() : "?";
    at->ops.push_back(o);
  }
  return out;
}

Status ReadFile(const std::string& file, std::vector<RankDump>* out, std::vector<std::string>* skipped) {
  std::ifstream in(file);
  if (!in) return InvalidArgument(file + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  if (!ParseDump(text.str(), file, out)) skipped->push_back(file);
  return Status::Ok();
}

}  // namespace

bool ParseDump(const std::string& text, const std::string& name, std::vector<RankDump>* out) {
  json j = json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("hoop_trace")) {
    out->push_back(HoopDump(j, name));
  } else if (j.is_object() && j.contains("entries") && j["entries"].is_array()) {
    for (RankDump& d : TorchDumps(j, name)) out->push_back(std::move(d));
  } else {
    return false;
  }
  return true;
}

StatusOr<std::vector<RankDump>> ReadDumps(const std::vector<std::string>& paths, std::vector<std::string>* skipped) {
  std::vector<RankDump> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.path().extension() == ".json") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) HOOP_RETURN_IF_ERROR(ReadFile(f, &out, skipped));
    } else if (fs::exists(p, ec)) {
      HOOP_RETURN_IF_ERROR(ReadFile(p, &out, skipped));
    } else {
      return InvalidArgument(p + ": no such file or folder");
    }
  }
  return out;
}

}  // namespace hoop::doctor
