// The reduction and wire codec kernels for AVX-512 (F, BW, VL) with F16C (see reduce_impl.h, wire_impl.h).
#define HOOP_KERNEL_NS avx512
#include "collectives/kernels/reduce_impl.h"
#include "collectives/kernels/wire_impl.h"
