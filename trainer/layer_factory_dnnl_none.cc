// Without oneDNN (libdnnl-dev was not found when hoop was configured): no oneDNN factory, and
// hoop-train says so when asked for --layers onednn.
#include "trainer/layer_factory.h"

namespace hoop::train {

std::unique_ptr<LayerFactory> OneDnnLayerFactory() { return nullptr; }
bool HaveOneDnn() { return false; }
void SetOneDnnThreads(int) {}

}  // namespace hoop::train
