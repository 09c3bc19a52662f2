#include "trainer/cifar.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

namespace hoop::train {

namespace {

constexpr int kRecord = 1 + 3 * 32 * 32;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Appends one batch file's records to `d`.
Status ReadBatch(const std::string& path, Dataset& d) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return ErrnoStatus(Code::kNotFound, "cannot open " + path, errno);
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + got);
  const bool error = std::ferror(f);
  std::fclose(f);
  if (error) return InvalidArgument(path + ": read error");
  if (bytes.empty() || bytes.size() % kRecord != 0)
    return InvalidArgument(path + ": " + std::to_string(bytes.size()) +
                           " bytes, not a whole number of CIFAR-10 records (" + std::to_string(kRecord) +
                           " bytes each: a label, then 32x32x3 pixels)");
  const size_t n = bytes.size() / kRecord;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* r = bytes.data() + i * kRecord;
    if (r[0] > 9)
      return InvalidArgument(path + ": label " + std::to_string(r[0]) + " of record " + std::to_string(i) +
                             " is not in 0..9");
    d.labels.push_back(r[0]);
    d.pixels.insert(d.pixels.end(), r + 1, r + kRecord);
  }
  d.count += static_cast<int>(n);
  return Status::Ok();
}

}  // namespace

std::string CifarDir(const std::string& dir) {
  for (const std::string& d : {dir, dir + "/cifar-10-batches-bin"})
    if (Exists(d + "/data_batch_1.bin") || Exists(d + "/test_batch.bin")) return d;
  return "";
}

StatusOr<Dataset> LoadCifar10(const std::string& dir, const std::string& split) {
  const std::string at = CifarDir(dir);
  if (at.empty()) return NotFound("no CIFAR-10 binary files (data_batch_1.bin, test_batch.bin) in " + dir);
  Dataset d;
  d.name = "cifar-10";
  d.channels = 3;
  d.rows = d.cols = 32;
  // The training set's per-channel mean and standard deviation (pixels in [0, 1]).
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, stddev[3] = {0.2470f, 0.2435f, 0.2616f};
  for (int c = 0; c < 3; ++c) d.mean[c] = mean[c], d.stddev[c] = stddev[c];
  std::vector<std::string> files;
  if (split == "test") {
    files = {at + "/test_batch.bin"};
  } else {
    for (int i = 1; i <= 5; ++i) files.push_back(at + "/data_batch_" + std::to_string(i) + ".bin");
  }
  for (const std::string& f : files)
    if (auto s = ReadBatch(f, d); !s.ok()) return s;
  return d;
}

}  // namespace hoop::train
