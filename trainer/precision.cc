#include "trainer/precision.h"

#include "trainer/layer_factory.h"

namespace hoop::train {

Status CheckPrecision(const Options& o, bool any_cpu, bool any_gpu) {
  if (o.precision == "fp16")
    return InvalidArgument(
        "--precision fp16: oneDNN's CPU convolutions (2.6, Debian's) have no fp16, and GPU ranks do not take "
        "--precision yet; CPU ranks run fp32 or bf16");
  if (o.precision == "fp32") return Status::Ok();
  if (any_gpu)
    return InvalidArgument("--precision " + o.precision +
                           ": GPU ranks do not take --precision yet (their cuDNN/cuBLAS layers are f32, with TF32 "
                           "convolutions: --tf32); CPU ranks run bf16");
  if (any_cpu && o.layers != "onednn")
    return InvalidArgument("--precision bf16 runs the convolutions on oneDNN's bf16 primitives: --layers onednn" +
                           std::string(HaveOneDnn() ? "" : " (this build has no oneDNN)"));
  if (any_cpu) {
    const std::string missing = OneDnnBf16Missing();
    if (!missing.empty()) return InvalidArgument("--precision bf16: " + missing);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Model>> BuildHostModel(const Options& o, const std::string& name, int channels) {
  if (o.layers != "onednn") return BuildModel(name, o.seed, Layers::kNative, channels);
  auto make = OneDnnLayerFactory(o.precision == "bf16");
  if (!make) return BuildModel(name, o.seed, Layers::kOneDnn, channels);  // says oneDNN is missing
  return BuildModel(name, o.seed, *make, channels);
}

std::optional<Compression> GradientWire(const Options& o) {
  if (o.grad_wire == "bf16") return Compression::kBf16;
  return std::nullopt;
}

}  // namespace hoop::train
