// The reduction and wire codec kernels for the build's baseline instruction set (see reduce_impl.h, wire_impl.h).
#define HOOP_KERNEL_NS generic
#include "collectives/kernels/reduce_impl.h"
#include "collectives/kernels/wire_impl.h"
