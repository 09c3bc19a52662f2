// A trainer tensor: a contiguous f32 array with a shape (N, C, H, W; missing trailing
// dimensions are 1, so a linear layer's N x F is {N, F, 1, 1}). Its memory is host memory (the
// `data` vector) or, once Place()d on a CUDA device, device memory of that device (`dev`), as
// the cuDNN/cuBLAS layers (layer_factory.h, Layers::kCuda) keep every activation, parameter and
// gradient. ptr() is the array in whichever memory it is; host code that reads `data` must
// only be given host tensors (Download() copies a device tensor's values out).
//
// A tensor may instead be a view (`external`): its values live in memory something else owns
// (a GradientArena: gradient_arena.h), host or device, and it keeps its size; a copy of a view
// owns its values.
//
// Device memory comes through hoop's device seam (common/device.h), so this file builds without
// CUDA. All device work of the trainer is queued on CUDA's legacy default stream: copies here,
// the layers' cuDNN and cuBLAS calls, and hoop's plain (non-stream) collectives order themselves
// after it. A device call that fails throws DeviceError (the trainer's layers return no
// Status): hoop-train reports it as the rank's error.
#pragma once
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace hoop::train {

struct Shape {
  int n = 0, c = 1, h = 1, w = 1;
  size_t size() const { return static_cast<size_t>(n) * c * h * w; }
  size_t per_item() const { return static_cast<size_t>(c) * h * w; }
  bool operator==(const Shape&) const = default;
  std::string str() const;
};

// A failed CUDA, cuDNN or cuBLAS call of the trainer, with the call's name and the library's words.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Device memory for floats on one device, grown on demand; copying copies the contents.
class DeviceFloats {
 public:
  DeviceFloats() = default;
  DeviceFloats(const DeviceFloats& o);
  DeviceFloats& operator=(const DeviceFloats& o);
  DeviceFloats(DeviceFloats&& o) noexcept { Swap(o); }
  DeviceFloats& operator=(DeviceFloats&& o) noexcept {
    Swap(o);
    return *this;
  }
  ~DeviceFloats();
  // Room for n floats on `device`: keeps the allocation when it is on that device and large
  // enough (contents then kept), else a new one (contents unspecified).
  void Reserve(int device, size_t n);
  float* get() const { return p_; }
  int device() const { return device_; }
  size_t capacity() const { return cap_; }
  size_t used = 0;  // floats that hold values (what a copy copies)

 private:
  void Swap(DeviceFloats& o) noexcept;
  float* p_ = nullptr;
  size_t cap_ = 0;
  int device_ = -1;
};

struct Tensor {
  Shape shape;
  std::vector<float> data;  // host memory (kind kHost)
  MemKind kind = MemKind::kHost;
  DeviceFloats dev;  // device memory (kind kCuda)
  // Channels per block when the data is in oneDNN's blocked layout nChw{block}c (N, C/block,
  // H, W, block; C a multiple of block), which its fastest kernels read and write; 0 for plain
  // NCHW. Only layers that say they take blocked tensors (Layer::TakesBlocked) ever see one;
  // the chain converts for the others (layout.h). Resize makes a tensor plain.
  int block = 0;
  // A view's values (BindExternal), on `external_device` (-1: host memory); `data`/`dev` unused.
  float* external = nullptr;
  int external_device = -1;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(s), data(s.size()) {}
  Tensor(const Tensor& o);
  Tensor& operator=(const Tensor& o);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  // Makes this tensor a view of shape.size() floats at `p` in this tensor's own memory (host, or
  // its device), its values copied there first; its own storage is freed.
  void BindExternal(float* p);
  // Reshapes (plain layout), reusing the allocation in the tensor's memory; contents are
  // unspecified unless `zero`.
  void Resize(Shape s, bool zero = false);
  void Zero();
  // Moves the tensor to device `device` (>= 0: CUDA device memory) or to host memory (-1),
  // keeping its shape; contents unspecified unless it was there already.
  void Place(int device);
  // Shape and memory of `other` (its device, or the host), contents unspecified unless `zero`.
  void ResizeLike(const Tensor& other, Shape s, bool zero = false);
  bool on_device() const { return kind == MemKind::kCuda; }
  int device() const { return on_device() ? (external ? external_device : dev.device()) : -1; }
  // Host values in, device or host; host values out (waits for the device's queued work).
  void Upload(const float* values, size_t n);
  void Download(std::vector<float>& out) const;
  float* ptr() { return external ? external : on_device() ? dev.get() : data.data(); }
  const float* ptr() const { return external ? external : on_device() ? dev.get() : data.data(); }
  float* item(int i) { return ptr() + i * shape.per_item(); }
  const float* item(int i) const { return ptr() + i * shape.per_item(); }
  size_t size() const { return external || on_device() ? shape.size() : data.size(); }
};

}  // namespace hoop::train
