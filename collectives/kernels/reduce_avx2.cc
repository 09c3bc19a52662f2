// The reduction kernels for AVX2 with F16C (see reduce_impl.h); built with -mavx2 -mf16c.
#define HOOP_KERNEL_NS avx2
#include "collectives/kernels/reduce_impl.h"
