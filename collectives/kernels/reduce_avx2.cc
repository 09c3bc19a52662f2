// The reduction and wire codec kernels for AVX2 with F16C (see reduce_impl.h, wire_impl.h); built with -mavx2 -mf16c.
#define HOOP_KERNEL_NS avx2
#include "collectives/kernels/reduce_impl.h"
#include "collectives/kernels/wire_impl.h"
