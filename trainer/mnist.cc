#include "trainer/mnist.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trainer/cifar.h"

namespace hoop::train {

namespace {

std::string Locate(const std::string& dir, const std::string& base) {
  struct stat st;
  for (std::string p : {dir + "/" + base + ".gz", dir + "/" + base})
    if (stat(p.c_str(), &st) == 0) return p;
  return "";
}

// Reads a whole IDX file of u8 data: its dimensions and its bytes.
Status ReadIdx(const std::string& path, int want_dims, std::vector<uint32_t>* dims, std::vector<uint8_t>* bytes) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return ErrnoStatus(Code::kNotFound, "cannot open " + path, errno);
  auto fail = [&](const std::string& what) {
    int zerr = 0;
    const char* msg = gzerror(f, &zerr);
    std::string cause = zerr < 0 && zerr != Z_ERRNO ? what + " (" + msg + ")" : what;
    gzclose(f);
    return InvalidArgument(path + ": " + cause);
  };
  auto read = [&](void* p, size_t n) -> size_t {
    size_t got = 0;
    while (got < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      int r = gzread(f, static_cast<char*>(p) + got, chunk);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  };
  uint8_t head[4];
  if (read(head, 4) != 4) return fail("too short to be an IDX file");
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != want_dims)
    return fail("not an IDX file of u8 data with " + std::to_string(want_dims) + " dimension(s) (magic " +
                std::to_string(head[2]) + "/" + std::to_string(head[3]) + ")");
  size_t total = 1;
  dims->assign(want_dims, 0);
  for (int i = 0; i < want_dims; ++i) {
    uint8_t b[4];
    if (read(b, 4) != 4) return fail("truncated in its header");
    (*dims)[i] = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    total *= (*dims)[i];
  }
  if (total > (size_t{1} << 34)) return fail("implausible dimensions");
  bytes->resize(total);
  size_t got = read(bytes->data(), total);
  if (got != total)
    return fail("truncated: expected " + std::to_string(total) + " bytes of data, got " + std::to_string(got));
  gzclose(f);
  return Status::Ok();
}

}  // namespace

StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split) {
  const std::string ib = split + "-images-idx3-ubyte", lb = split + "-labels-idx1-ubyte";
  std::string ip = Locate(dir, ib), lp = Locate(dir, lb);
  for (auto [path, base] : {std::pair{ip, ib}, std::pair{lp, lb}})
    if (path.empty())
      return NotFound("no " + base + ".gz (or " + base + ") in " + dir +
                      (dir == kDefaultDataDir ? " (install Debian's dataset-fashion-mnist, or give --data DIR)"
                                              : " (give --data the directory holding Fashion-MNIST's IDX files)"));
  Dataset d;
  std::vector<uint32_t> idims, ldims;
  if (auto s = ReadIdx(ip, 3, &idims, &d.pixels); !s.ok()) return s;
  if (auto s = ReadIdx(lp, 1, &ldims, &d.labels); !s.ok()) return s;
  if (idims[1] != 28 || idims[2] != 28)
    return InvalidArgument(ip + ": images are " + std::to_string(idims[1]) + "x" + std::to_string(idims[2]) +
                           ", expected 28x28");
  if (idims[0] != ldims[0])
    return InvalidArgument(ip + " holds " + std::to_string(idims[0]) + " images but " + lp + " " +
                           std::to_string(ldims[0]) + " labels");
  if (idims[0] == 0) return InvalidArgument(ip + ": no images");
  for (size_t i = 0; i < d.labels.size(); ++i)
    if (d.labels[i] > 9)
      return InvalidArgument(lp + ": label " + std::to_string(d.labels[i]) + " of image " + std::to_string(i) +
                             " is not in 0..9");
  d.count = static_cast<int>(idims[0]);
  return d;
}

void Gather(const Dataset& d, const int64_t* indices, int n, Tensor& out, std::vector<uint8_t>& labels, int pad) {
  const int plane = d.rows * d.cols, h = d.rows + 2 * pad, w = d.cols + 2 * pad;
  out.Resize({n, d.channels, h, w});
  labels.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < d.channels; ++c) {
      const uint8_t* src = d.pixels.data() + (static_cast<size_t>(indices[i]) * d.channels + c) * plane;
      float* dst = out.item(i) + static_cast<size_t>(c) * h * w;
      const float scale = 1.0f / (255.0f * d.stddev[c]), shift = -d.mean[c] / d.stddev[c];
      if (pad > 0) std::fill(dst, dst + static_cast<size_t>(h) * w, shift);  // black, normalised
      for (int y = 0; y < d.rows; ++y)
        for (int x = 0; x < d.cols; ++x) dst[(y + pad) * w + x + pad] = src[y * d.cols + x] * scale + shift;
    }
    labels[i] = d.labels[indices[i]];
  }
}

StatusOr<Dataset> LoadDataset(const std::string& dir, const std::string& split) {
  if (!CifarDir(dir).empty()) return LoadCifar10(dir, split);
  return LoadFashionMnist(dir, split == "test" ? "t10k" : split);
}

}  // namespace hoop::train
