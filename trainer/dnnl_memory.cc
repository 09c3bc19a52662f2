#include "trainer/dnnl_memory.h"

namespace hoop::train {

using dnnl::memory;

memory::desc DescOf(const Shape& s, int block) {
  const auto tag = block == 16  ? memory::format_tag::nChw16c
                   : block == 8 ? memory::format_tag::nChw8c
                                : memory::format_tag::nchw;
  return memory::desc({s.n, s.c, s.h, s.w}, memory::data_type::f32, tag);
}

int BlockOf(const memory::desc& desc, const Shape& shape) {
  for (int b : {0, 16, 8})
    if ((b == 0 || shape.c % b == 0) && desc == DescOf(shape, b)) return b;
  return -1;
}

void Slot::Make(const memory::desc& chosen, const memory::desc& user_desc, const dnnl::engine& eng) {
  user = user_desc;
  want = chosen;
  if (chosen != user) own = memory(chosen, eng);
}

memory Slot::In(const float* data, const dnnl::engine& eng, dnnl::stream& s) {
  memory mine(user, eng, const_cast<float*>(data));
  if (!own) return mine;
  dnnl::reorder(mine, own).execute(s, mine, own);
  return own;
}

memory Slot::Target(float* data, const dnnl::engine& eng) { return own ? own : memory(user, eng, data); }

void Slot::Out(float* data, const dnnl::engine& eng, dnnl::stream& s) {
  if (!own) return;
  memory mine(user, eng, data);
  dnnl::reorder(own, mine).execute(s, own, mine);
}

}  // namespace hoop::train
