// Without the CUDA layers (hoop built without CUDA, or cuDNN or cuBLAS not found when it was
// configured): no factory, and hoop-train says so when asked for --device cuda.
#include "trainer/layer_factory.h"

namespace hoop::train {

bool HaveCudaLayers() { return false; }

StatusOr<std::unique_ptr<LayerFactory>> CudaLayerFactory(int, bool, bool, bool) {
  return Unimplemented(
      "this hoop-train was built without the cuDNN/cuBLAS layers (configure hoop with CUDA, cuDNN and "
      "cuBLAS found)");
}

}  // namespace hoop::train
