// simflow calibrate: microbenchmarks of the GPU in hand (simflow/calibrate/measure.py builds and runs them).
// Not a convolution variant: each kernel measures one figure a simulator config needs.

// One thread spins for `cycles` SM clock cycles: against the events' wall time, the SM clock.
extern "C" __global__ void cal_spin(long long cycles, long long *out)
{
  long long start = clock64(), now = start;
  while (now - start < cycles) now = clock64();
  out[0] = now - start;
}

// The chases' timer: clock64 on the GPU. Under GPGPU-Sim (calibrate --check) it is the 32-bit %clock, as the
// simulator aborts on %clock64; a simulated chase takes far fewer than 2^32 cycles.
#ifndef CAL_TIMER
#define CAL_TIMER() clock64()
#endif

// One thread follows a chain of indices (next[i] is the next one) from `first`; the second pass is timed. On a
// chain of `steps` entries the first pass brings it into whatever level holds it, and cycles per step are the
// load-to-use latency of that level; on a longer chain the second pass meets entries no load has touched.
// cg: loads bypass L1 (to time L2 with a chain L1 could partly hold).
template <bool cg>
__device__ void chase(const unsigned *next, unsigned first, int steps, long long *cycles, unsigned *sink)
{
  unsigned j = first;
  for (int i = 0; i < steps; i++) j = cg ? __ldcg(next + j) : next[j];
  long long start = CAL_TIMER();
  for (int i = 0; i < steps; i++) j = cg ? __ldcg(next + j) : next[j];
  long long stop = CAL_TIMER();
  cycles[0] = stop - start;
  sink[0] = j;
}

extern "C" __global__ void cal_chase(const unsigned *next, unsigned start, int steps, long long *cycles,
                                     unsigned *sink)
{
  chase<false>(next, start, steps, cycles, sink);
}

extern "C" __global__ void cal_chase_cg(const unsigned *next, unsigned start, int steps, long long *cycles,
                                        unsigned *sink)
{
  chase<true>(next, start, steps, cycles, sink);
}

// The same chase through shared memory (its chain copied in first): the shared-memory latency.
extern "C" __global__ void cal_chase_shared(const unsigned *next, int n, int steps, long long *cycles,
                                            unsigned *sink)
{
  extern __shared__ unsigned chain[];
  for (int i = 0; i < n; i++) chain[i] = next[i];
  unsigned j = 0;
  for (int i = 0; i < steps; i++) j = chain[j];
  long long start = CAL_TIMER();
  for (int i = 0; i < steps; i++) j = chain[j];
  long long stop = CAL_TIMER();
  cycles[0] = stop - start;
  sink[0] = j;
}

// Every thread reads float4s of a buffer `reps` times, grid-stride, bypassing L1: with a buffer L2 holds, the
// L2 bandwidth; the sum keeps the loads alive.
extern "C" __global__ void cal_read(const float4 *buf, long long n, int reps, float *sink)
{
  float s = 0.f;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (int r = 0; r < reps; r++)
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
      float4 v = __ldcg(buf + i);
      s += v.x + v.y + v.z + v.w;
    }
  if (s == 1.2345f) sink[0] = s;
}

// Eight independent FMA chains a thread: the FMA throughput (2 FLOP each) and the warp-instruction issue rate.
extern "C" __global__ void cal_fma(int iters, float *sink)
{
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.999f, c = 0.001f;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < 16; k++) {
      a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);
      a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);
    }
  }
  float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if (s == 1.2345f) sink[0] = s;
}

// PTX integer streams, the instructions the simulator runs: eight independent chains a thread of add.s32 (in
// Fibonacci pairs: every sum is used, so no add folds into another) or of mad.lo.s32 (x * m + c, m and c
// unknown to the compiler). PTX integer adds or multiply-adds an SM a cycle: what ptx_opcode_initiation_int sets.
#define CAL_ADD(x, y) asm volatile("add.s32 %0, %0, %1;" : "+r"(x) : "r"(y))
#define CAL_MAD(x) asm volatile("mad.lo.s32 %0, %0, %1, %2;" : "+r"(x) : "r"(m), "r"(c))

extern "C" __global__ void cal_int_add(int iters, unsigned *sink)
{
  unsigned a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  unsigned b0 = a0 ^ 1, b1 = a1 ^ 1, b2 = a2 ^ 1, b3 = a3 ^ 1, b4 = a4 ^ 1, b5 = a5 ^ 1, b6 = a6 ^ 1, b7 = a7 ^ 1;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < 8; k++) {
      CAL_ADD(a0, b0); CAL_ADD(a1, b1); CAL_ADD(a2, b2); CAL_ADD(a3, b3);
      CAL_ADD(a4, b4); CAL_ADD(a5, b5); CAL_ADD(a6, b6); CAL_ADD(a7, b7);
      CAL_ADD(b0, a0); CAL_ADD(b1, a1); CAL_ADD(b2, a2); CAL_ADD(b3, a3);
      CAL_ADD(b4, a4); CAL_ADD(b5, a5); CAL_ADD(b6, a6); CAL_ADD(b7, a7);
    }
  }
  unsigned s = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ b0 ^ b1 ^ b2 ^ b3 ^ b4 ^ b5 ^ b6 ^ b7;
  if (s == 12345u) sink[0] = s;
}

extern "C" __global__ void cal_int_mad(int iters, unsigned m, unsigned c, unsigned *sink)
{
  unsigned a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < 16; k++) {
      CAL_MAD(a0); CAL_MAD(a1); CAL_MAD(a2); CAL_MAD(a3); CAL_MAD(a4); CAL_MAD(a5); CAL_MAD(a6); CAL_MAD(a7);
    }
  }
  unsigned s = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
  if (s == 12345u) sink[0] = s;
}

// A shared-memory stream: eight independent volatile 32-bit loads a thread an unrolled step, lane l of a warp at
// word l * ways, so a warp's load needs `ways` wavefronts (ways-way bank conflicts; 1: none). Loads an SM a cycle
// at ways 1 and 4: what the shared-memory pipe delivers and what a conflict costs in it.
#define CAL_SHARED_WORDS (32 * 32 + 8 * 32)
extern "C" __global__ void cal_shared(int iters, int ways, unsigned *sink)
{
  __shared__ unsigned words[CAL_SHARED_WORDS];
  for (int i = threadIdx.x; i < CAL_SHARED_WORDS; i += blockDim.x) words[i] = i;
  __syncthreads();
  const volatile unsigned *w = words + (threadIdx.x & 31) * ways;
  unsigned s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < 16; k++) {  // each load 32 words (the same banks) from the last
      s0 += w[0]; s1 += w[32]; s2 += w[64]; s3 += w[96]; s4 += w[128]; s5 += w[160]; s6 += w[192]; s7 += w[224];
    }
  }
  unsigned s = s0 ^ s1 ^ s2 ^ s3 ^ s4 ^ s5 ^ s6 ^ s7;
  if (s == 12345u) sink[0] = s;
}

// The shared-memory stream again, ten independent FMAs to each load (and one add that consumes it, after them):
// the loads an SM a cycle when the pipe is busy 63 % of the time at 2-way conflicts and issue is near its limit,
// as in a tiled convolution's inner loop. Inline PTX keeps the order as written (the simulator runs it so): a warp
// issues its eight loads, then FMAs that do not wait on them. Conflict-free and 2-way conflicting.
#define CAL_FMA(x) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(m), "f"(c))
#define CAL_MIX_STEPS 4  // steps of 8 loads a pass
extern "C" __global__ void cal_shared_fma(int iters, int ways, unsigned *sink)
{
  __shared__ unsigned words[CAL_SHARED_WORDS];
  for (int i = threadIdx.x; i < CAL_SHARED_WORDS; i += blockDim.x) words[i] = i;
  __syncthreads();
  const volatile unsigned *w = words + (threadIdx.x & 31) * ways;
  unsigned s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.999f, c = 0.001f;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < CAL_MIX_STEPS; k++) {
      unsigned v0 = w[0], v1 = w[32], v2 = w[64], v3 = w[96], v4 = w[128], v5 = w[160], v6 = w[192], v7 = w[224];
#pragma unroll
      for (int f = 0; f < 10; f++) {
        CAL_FMA(a0); CAL_FMA(a1); CAL_FMA(a2); CAL_FMA(a3); CAL_FMA(a4); CAL_FMA(a5); CAL_FMA(a6); CAL_FMA(a7);
      }
      CAL_ADD(s0, v0); CAL_ADD(s1, v1); CAL_ADD(s2, v2); CAL_ADD(s3, v3);
      CAL_ADD(s4, v4); CAL_ADD(s5, v5); CAL_ADD(s6, v6); CAL_ADD(s7, v7);
    }
  }
  unsigned s = s0 ^ s1 ^ s2 ^ s3 ^ s4 ^ s5 ^ s6 ^ s7 ^ __float_as_uint(a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7);
  if (s == 12345u) sink[0] = s;
}

// Nothing at all: timed behind a spinning cal_spin (so the host's enqueue is not timed, as simflow times a run),
// one block of it is the GPU's own cost of a kernel launch; a full wave of blocks, the shortest a one-wave kernel
// can take (a layer's launch floor).
extern "C" __global__ void cal_empty() {}
