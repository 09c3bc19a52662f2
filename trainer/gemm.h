// The one matrix product the layers use: row-major C = alpha * op(A) * op(B) + beta * C through
// OpenBLAS's sgemm, always single-threaded (the trainer parallelises over images itself, see
// parallel.h), so BLAS threads never fight the ranks' own.
#pragma once

namespace hoop::train {

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are the row strides as stored.
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc);

// Call once before any Gemm: pins OpenBLAS to one thread.
void InitBlas();

}  // namespace hoop::train
