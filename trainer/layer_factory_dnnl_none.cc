// Without oneDNN (libdnnl-dev was not found when hoop was configured): no oneDNN factory, and
// hoop-train says so when asked for --layers onednn.
#include "trainer/layer_factory.h"

namespace hoop::train {

std::unique_ptr<LayerFactory> OneDnnLayerFactory(bool) { return nullptr; }
std::string OneDnnBf16Missing() {
  return "this build has no oneDNN (libdnnl-dev was not found when hoop was configured)";
}
bool HaveOneDnn() { return false; }
void SetOneDnnThreads(int) {}

}  // namespace hoop::train
