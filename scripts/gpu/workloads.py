#!/usr/bin/env python3
"""Small real workloads of known size for ncuroof's own fixtures (issue 5), one per subcommand.

Each prints the sizes the ground-truth tests need (FLOPs = 2*M*N*K for GEMMs, bytes moved for the
elementwise op). Run under ncu through scripts/gpu/collect_fixtures.sh on a GPU machine with
PyTorch and CuPy:

    python3 scripts/gpu/workloads.py gemm_fp16 | sgemm | dgemm_cupy | elementwise |
    transformer | naive | tiled
"""

from __future__ import annotations

import sys

M, N, K = 4096, 4096, 4096  # tensor-core GEMM
SM, SN, SK = 2048, 2048, 2048  # FP32 SGEMM (TF32 off)
DM = 1024  # FP64 GEMM through CuPy
ELEMS = 1 << 26  # elementwise: fp32 y = a * x + y over 2^26 elements
TILE_N = 1024  # naive vs tiled matrix multiply (CuPy raw kernels)


def torch_sync():
    import torch

    torch.cuda.synchronize()


def gemm_fp16():
    import torch

    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    (a @ b)
    torch_sync()
    print(f"gemm_fp16 M={M} N={N} K={K} flop={2 * M * N * K}")


def sgemm():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(SM, SK, device="cuda", dtype=torch.float32)
    b = torch.randn(SK, SN, device="cuda", dtype=torch.float32)
    (a @ b)
    torch_sync()
    print(f"sgemm M={SM} N={SN} K={SK} flop={2 * SM * SN * SK}")


def dgemm_cupy():
    import cupy as cp

    a = cp.random.rand(DM, DM)
    b = cp.random.rand(DM, DM)
    (a @ b)
    cp.cuda.Device().synchronize()
    print(f"dgemm M=N=K={DM} flop={2 * DM**3}")


def elementwise():
    import torch

    x = torch.randn(ELEMS, device="cuda")
    y = torch.randn(ELEMS, device="cuda")
    torch_sync()
    y.add_(x, alpha=2.0)  # reads x and y, writes y: 12 bytes per element
    torch_sync()
    print(f"elementwise n={ELEMS} bytes={12 * ELEMS} flop={2 * ELEMS}")


def transformer():
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    b, s, h, d = 8, 1024, 16, 64
    x = torch.randn(b, s, h * d, device="cuda", dtype=torch.bfloat16)
    ln = torch.nn.LayerNorm(h * d, device="cuda", dtype=torch.bfloat16)
    qkv = torch.nn.Linear(h * d, 3 * h * d, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        y = ln(x)
        q, k, v = qkv(y).view(b, s, 3, h, d).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.softmax(o.float(), dim=-1)
    torch_sync()
    print(f"transformer b={b} s={s} heads={h} head_dim={d}")


_MATMUL = r"""
extern "C" __global__ void naive(const float* A, const float* B, float* C, int n) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n && c < n) { float s = 0.f; for (int k = 0; k < n; ++k) s += A[r * n + k] * B[k * n + c]; C[r * n + c] = s; }
}
extern "C" __global__ void tiled(const float* A, const float* B, float* C, int n) {
  __shared__ float As[32][32], Bs[32][32];
  int r = blockIdx.y * 32 + threadIdx.y, c = blockIdx.x * 32 + threadIdx.x; float s = 0.f;
  for (int t = 0; t < n; t += 32) {
    As[threadIdx.y][threadIdx.x] = A[r * n + t + threadIdx.x]; Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + c];
    __syncthreads();
    for (int k = 0; k < 32; ++k) s += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[r * n + c] = s;
}
"""  # noqa: E501


def _matmul(name):
    import cupy as cp

    n = TILE_N
    mod = cp.RawModule(code=_MATMUL)
    a, b = cp.random.rand(n, n, dtype=cp.float32), cp.random.rand(n, n, dtype=cp.float32)
    c = cp.empty_like(a)
    mod.get_function(name)((n // 32, n // 32), (32, 32), (a, b, c, cp.int32(n)))
    cp.cuda.Device().synchronize()
    print(f"{name} matmul n={n} flop={2 * n**3}")


def naive():
    _matmul("naive")


def tiled():
    _matmul("tiled")


if __name__ == "__main__":
    globals()[sys.argv[1]]()
