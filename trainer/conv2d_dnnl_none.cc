// Without oneDNN (libdnnl-dev was not found when hoop was configured): hoop-train says so when
// asked for --layers onednn.
#include "trainer/conv2d_dnnl.h"

namespace hoop::train {

bool HaveOneDnn() { return false; }
void SetOneDnnThreads(int) {}

}  // namespace hoop::train
