#include "trainer/tensor.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/device.h"

namespace hoop::train {

namespace {
void Check(const Status& s, const char* what) {
  if (!s.ok()) throw DeviceError(std::string(what) + ": " + s.message());
}
}  // namespace

std::string Shape::str() const {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

DeviceFloats::DeviceFloats(const DeviceFloats& o) { *this = o; }

DeviceFloats& DeviceFloats::operator=(const DeviceFloats& o) {
  if (this == &o) return *this;
  Reserve(o.device_, o.used);  // on o's device, even when empty
  if (o.used == 0) {
    used = 0;
    return *this;
  }
  Check(CopyMem(p_, MemKind::kCuda, o.p_, MemKind::kCuda, o.used * sizeof(float), nullptr), "copying a device tensor");
  used = o.used;
  return *this;
}

DeviceFloats::~DeviceFloats() {
  if (p_) CudaFree(p_, MemKind::kCuda);
}

void DeviceFloats::Swap(DeviceFloats& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(cap_, o.cap_);
  std::swap(device_, o.device_);
  std::swap(used, o.used);
}

void DeviceFloats::Reserve(int device, size_t n) {
  if (p_ && device == device_ && n <= cap_) return;
  if (p_) CudaFree(p_, MemKind::kCuda);
  p_ = nullptr;
  cap_ = 0;
  used = 0;
  device_ = device;
  if (n == 0) return;
  StatusOr<void*> got = CudaAlloc(device, n * sizeof(float));
  if (!got.ok())
    throw DeviceError("allocating " + std::to_string(n * sizeof(float)) + " bytes on CUDA device " +
                      std::to_string(device) + ": " + got.status().message());
  p_ = static_cast<float*>(*got);
  cap_ = n;
}

Tensor::Tensor(const Tensor& o) { *this = o; }

Tensor& Tensor::operator=(const Tensor& o) {
  if (this == &o) return *this;
  shape = o.shape;
  kind = o.kind;
  block = o.block;
  external = nullptr;
  external_device = -1;
  if (!o.external) {
    data = o.data;
    dev = o.dev;
    return *this;
  }
  // A copy of a view owns its values.
  if (o.on_device()) {
    std::vector<float>().swap(data);
    dev.Reserve(o.external_device, o.size());
    dev.used = o.size();
    if (o.size() > 0)
      Check(CopyMem(dev.get(), MemKind::kCuda, o.external, MemKind::kCuda, o.size() * sizeof(float), nullptr),
            "copying a device tensor");
  } else {
    dev = DeviceFloats();
    data.assign(o.external, o.external + o.size());
  }
  return *this;
}

void Tensor::BindExternal(float* p) {
  const size_t n = shape.size();
  if (n > 0 && p != ptr())
    Check(CopyMem(p, kind, ptr(), kind, n * sizeof(float), nullptr), "moving a tensor into its arena");
  external_device = device();
  external = p;
  std::vector<float>().swap(data);
  dev = DeviceFloats();
}

void Tensor::Resize(Shape s, bool zero) {
  if (external) {  // a view keeps its place and size
    if (s.size() != shape.size())
      throw std::logic_error("a tensor held in an arena cannot change its size (" + shape.str() + " to " + s.str() +
                             ")");
    shape = s;
    block = 0;
    if (zero) Zero();
    return;
  }
  shape = s;
  block = 0;
  if (on_device()) {
    dev.Reserve(dev.device(), s.size());
    dev.used = s.size();
  } else {
    data.resize(s.size());
  }
  if (zero) Zero();
}

void Tensor::Zero() {
  if (!on_device()) {
    std::fill(ptr(), ptr() + size(), 0.0f);
    return;
  }
  if (size() > 0) Check(CudaMemset(ptr(), 0, size() * sizeof(float), nullptr), "zeroing a device tensor");
}

void Tensor::Place(int device) {
  if (external) {
    if (device == this->device()) return;
    throw std::logic_error("a tensor held in an arena cannot move to another device");
  }
  if (device < 0) {
    if (!on_device()) return;
    kind = MemKind::kHost;
    dev = DeviceFloats();
    data.resize(shape.size());
    return;
  }
  if (on_device() && dev.device() == device) return;
  kind = MemKind::kCuda;
  std::vector<float>().swap(data);
  dev.Reserve(device, shape.size());
  dev.used = shape.size();
}

void Tensor::ResizeLike(const Tensor& other, Shape s, bool zero) {
  Place(other.device());
  Resize(s, zero);
}

void Tensor::Upload(const float* values, size_t n) {
  if (!on_device()) {
    std::memcpy(ptr(), values, n * sizeof(float));
    return;
  }
  Check(CopyMem(ptr(), MemKind::kCuda, values, MemKind::kHost, n * sizeof(float), nullptr), "copying to the device");
  // A pageable source is read before the copy returns; the sync keeps `values` free to change.
  Check(CudaStreamSync(nullptr), "copying to the device");
}

void Tensor::Download(std::vector<float>& out) const {
  out.resize(size());
  if (!on_device()) {
    std::copy(ptr(), ptr() + size(), out.begin());
    return;
  }
  if (out.empty()) return;
  Check(CopyMem(out.data(), MemKind::kHost, ptr(), MemKind::kCuda, out.size() * sizeof(float), nullptr),
        "copying from the device");
  Check(CudaStreamSync(nullptr), "copying from the device");
}

}  // namespace hoop::train
