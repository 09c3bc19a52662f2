#include "trainer/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "trainer/metrics.h"

namespace hoop::train {

namespace {

constexpr char kMagic[8] = {'H', 'O', 'O', 'P', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 3;

template <class T>
void Put(std::string& b, T v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void PutStr(std::string& b, const std::string& s) {
  Put<uint32_t>(b, static_cast<uint32_t>(s.size()));
  b += s;
}

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <class T>
  bool Get(T* v) {
    if (b_.size() - at_ < sizeof(T)) return false;
    std::memcpy(v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool GetStr(std::string* s) {
    uint32_t n;
    if (!Get(&n) || b_.size() - at_ < n) return false;
    s->assign(b_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool GetFloats(float* out, uint64_t n) {
    if ((b_.size() - at_) / sizeof(float) < n) return false;
    std::memcpy(out, b_.data() + at_, n * sizeof(float));
    at_ += n * sizeof(float);
    return true;
  }
  bool Skip(uint64_t bytes) {
    if (b_.size() - at_ < bytes) return false;
    at_ += bytes;
    return true;
  }

 private:
  const std::string& b_;
  size_t at_ = 0;
};

uint32_t Crc(const char* p, size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

}  // namespace

Status SaveCheckpoint(const std::string& path, const CheckpointInfo& info, const NamedTensors& tensors) {
  std::string b(kMagic, sizeof kMagic);
  Put(b, kVersion);
  PutStr(b, info.model);
  Put(b, info.epochs_done);
  Put(b, info.steps_done);
  Put(b, info.step_in_epoch);
  Put(b, info.ranks);
  Put(b, info.batch);
  Put(b, info.wall_s);
  Put<uint32_t>(b, info.history_fields ? info.history_fields : static_cast<uint32_t>(EpochFieldCount()));
  for (const auto* v : {&info.partial, &info.history}) {
    Put<uint32_t>(b, static_cast<uint32_t>(v->size()));
    for (double d : *v) Put(b, d);
  }
  Put<uint32_t>(b, static_cast<uint32_t>(tensors.size()));
  std::vector<float> host;  // a device tensor's values
  for (auto& [name, t] : tensors) {
    PutStr(b, name);
    Put<uint64_t>(b, t->size());
    const float* values = t->ptr();
    if (t->on_device()) {
      t->Download(host);
      values = host.data();
    }
    b.append(reinterpret_cast<const char*>(values), t->size() * sizeof(float));
  }
  Put(b, Crc(b.data(), b.size()));

  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(Code::kInvalidArgument, "checkpoint: cannot create " + tmp, errno);
  size_t done = 0;
  while (done < b.size()) {
    ssize_t w = write(fd, b.data() + done, b.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoStatus(Code::kInternal, "checkpoint: writing " + tmp, err);
    }
    done += static_cast<size_t>(w);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(Code::kInternal, "checkpoint: flushing " + tmp, err);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(Code::kInternal, "checkpoint: renaming " + tmp + " to " + path, err);
  }
  return Status::Ok();
}

Status LoadCheckpoint(const std::string& path, const std::string& model, const NamedTensors& tensors,
                      CheckpointInfo* info, ExtraTensors extra) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(Code::kNotFound, "checkpoint: cannot open " + path, errno);
  std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return InvalidArgument("checkpoint " + path + ": " + why); };
  if (b.size() < sizeof kMagic + 4 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    return bad("not a hoop checkpoint");
  uint32_t stored;
  std::memcpy(&stored, b.data() + b.size() - 4, 4);
  if (Crc(b.data(), b.size() - 4) != stored) return bad("corrupt (checksum mismatch)");
  b.resize(b.size() - 4);
  Reader r(b);
  r.Skip(sizeof kMagic);
  uint32_t version = 0, count = 0;
  if (!r.Get(&version) || version < 1 || version > kVersion)
    return bad("unsupported version " + std::to_string(version));
  if (!r.GetStr(&info->model) || !r.Get(&info->epochs_done) || !r.Get(&info->steps_done))
    return bad("truncated header");
  if (version >= 2) {
    if (!r.Get(&info->step_in_epoch) || !r.Get(&info->ranks) || !r.Get(&info->batch) || !r.Get(&info->wall_s))
      return bad("truncated header");
    info->history_fields = 15;  // version 2: the metrics before the energy fields
    if (version >= 3 && (!r.Get(&info->history_fields) || info->history_fields == 0)) return bad("truncated header");
    for (auto* v : {&info->partial, &info->history}) {
      uint32_t n = 0;
      if (!r.Get(&n) || n > (1u << 20)) return bad("truncated header");
      v->resize(n);
      for (double& d : *v)
        if (!r.Get(&d)) return bad("truncated header");
    }
  }
  if (!r.Get(&count)) return bad("truncated header");
  if (!model.empty() && info->model != model)
    return bad("holds model '" + info->model + "', but this run trains '" + model + "'");
  std::map<std::string, Tensor*> want(tensors.begin(), tensors.end());
  std::set<std::string> loaded;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name;
    uint64_t n;
    if (!r.GetStr(&name) || !r.Get(&n)) return bad("truncated at tensor " + std::to_string(i));
    auto it = want.find(name);
    if (it == want.end() && extra == ExtraTensors::kSkip) {
      if (n > UINT64_MAX / sizeof(float) || !r.Skip(n * sizeof(float)))
        return bad("truncated in tensor '" + name + "'");
      continue;
    }
    if (it == want.end()) return bad("holds tensor '" + name + "', which this model does not have");
    if (n != it->second->size())
      return bad("tensor '" + name + "' has " + std::to_string(n) + " values, the model " +
                 std::to_string(it->second->size()));
    Tensor& t = *it->second;
    std::vector<float> host(t.on_device() ? n : 0);  // a device tensor's values, before they go up
    if (!r.GetFloats(t.on_device() ? host.data() : t.ptr(), n)) return bad("truncated in tensor '" + name + "'");
    if (t.on_device()) t.Upload(host.data(), n);
    if (!loaded.insert(name).second) return bad("holds tensor '" + name + "' twice");
  }
  for (auto& [name, t] : tensors)
    if (!loaded.count(name))
      return bad("lacks tensor '" + name + "' (holds " + std::to_string(loaded.size()) + " of the model's " +
                 std::to_string(want.size()) + ")");
  return Status::Ok();
}

StatusOr<CheckpointInfo> PeekCheckpoint(const std::string& path) {
  CheckpointInfo info;
  HOOP_RETURN_IF_ERROR(LoadCheckpoint(path, "", {}, &info, ExtraTensors::kSkip));
  return info;
}

Status ProbeOutputs(const std::string& metrics, const std::string& checkpoint) {
  for (const std::string* path : {&metrics, &checkpoint}) {
    if (path->empty()) continue;
    const std::string probe = *path + ".tmp." + std::to_string(::getpid());
    std::FILE* f = std::fopen(probe.c_str(), "w");
    if (!f)
      return InvalidArgument(std::string(path == &metrics ? "--metrics " : "--checkpoint ") + *path +
                             ": cannot write there: " + std::strerror(errno));
    std::fclose(f);
    std::remove(probe.c_str());
  }
  return Status::Ok();
}

}  // namespace hoop::train
