// The reduction kernels for the build's baseline instruction set (see reduce_impl.h).
#define HOOP_KERNEL_NS generic
#include "collectives/kernels/reduce_impl.h"
