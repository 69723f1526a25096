// simflow calibrate --check: calibrate.cu's own kernels, run under GPGPU-Sim (simflow/calibrate/check.py appends
// this host program to calibrate.cu and builds both with CUDA 11.x). Each chase prints one line,
//   simflow-calibrate: <figure> <cycles a step>
// and the bandwidth and stream kernels' cycles are the simulator's own (their launches in the log). Sizes are smaller
// than on the GPU, where a simulated cycle costs far more than a real one; each still times what it names.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

constexpr int READ_REPS = 5;
constexpr int STREAM_ITERS[2] = {2, 10};  // each stream kernel launched twice: its rate from the difference
// one block of 32 warps on one SM (with 8, two a scheduler, the simulated FMA stream reached 0.78 of the rate 32
// give: each warp waits on its chains' latency), and the operations an iteration a thread
constexpr int STREAM_THREADS = 1024, STREAM_OPS = 128, MIX_LOADS = 32;  // MIX_LOADS: cal_shared_fma's loads a pass

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
  printf("simflow-calibrate: error %s at %s\n", cudaGetErrorString(e_), #call); return 1; } } while (0)

// A random cycle through n entries `stride` indices apart (calibrate's _chain, with a fixed xorshift seed).
static unsigned *make_chain(unsigned n, unsigned stride)
{
  unsigned *order = (unsigned *)malloc(n * sizeof(unsigned));
  unsigned *chain = (unsigned *)calloc((size_t)n * stride, sizeof(unsigned));
  unsigned long long s = 0x9e3779b97f4a7c15ull;
  for (unsigned i = 0; i < n; i++) order[i] = i;
  for (unsigned i = n - 1; i > 0; i--) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    unsigned j = (unsigned)(s % (i + 1)), t = order[i];
    order[i] = order[j]; order[j] = t;
  }
  for (unsigned i = 0; i < n; i++) chain[(size_t)order[i] * stride] = order[(i + 1) % n] * stride;
  free(order);
  return chain;
}

enum Through { CACHED, PAST_L1, SHARED };  // cal_chase, cal_chase_cg, cal_chase_shared

// One chase over a chain of n entries `stride` indices apart, `steps` steps a pass; prints cycles a step.
static int chase(const char *figure, Through through, unsigned n, unsigned stride, int steps)
{
  unsigned *host = make_chain(n, stride), *chain, *sink;
  long long *took, cycles = 0;
  size_t bytes = (size_t)n * stride * sizeof(unsigned);
  CHECK(cudaMalloc(&chain, bytes));
  CHECK(cudaMalloc(&took, sizeof(long long)));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemcpy(chain, host, bytes, cudaMemcpyHostToDevice));
  if (through == SHARED) cal_chase_shared<<<1, 1, bytes>>>(chain, (int)(n * stride), steps, took, sink);
  else if (through == PAST_L1) cal_chase_cg<<<1, 1>>>(chain, 0u, steps, took, sink);
  else cal_chase<<<1, 1>>>(chain, 0u, steps, took, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&cycles, took, sizeof(long long), cudaMemcpyDeviceToHost));
  printf("simflow-calibrate: %s %.3f\n", figure, (double)cycles / steps);
  CHECK(cudaFree(chain));
  CHECK(cudaFree(took));
  CHECK(cudaFree(sink));
  free(host);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc != 4) {
    printf("usage: %s SMS L2_BYTES READ_BYTES\n", argv[0]);
    return 2;
  }
  const int sms = atoi(argv[1]);
  const long long l2_bytes = atoll(argv[2]), read_bytes = atoll(argv[3]);
  // FMA, PTX integer and shared-memory rates first (a log cut short then lacks the chases too): one block of each
  // stream kernel on one SM, 2 and 10 iterations; ops over the two launches' difference in cycles is the rate
  unsigned *isink;
  float *fsink;
  CHECK(cudaMalloc(&isink, sizeof(unsigned)));
  CHECK(cudaMalloc(&fsink, sizeof(float)));
  for (int launch = 0; launch < 2; launch++) {
    cal_fma<<<1, STREAM_THREADS>>>(STREAM_ITERS[launch], fsink);
    CHECK(cudaDeviceSynchronize());
  }
  for (int launch = 0; launch < 2; launch++) {
    cal_int_add<<<1, STREAM_THREADS>>>(STREAM_ITERS[launch], isink);
    CHECK(cudaDeviceSynchronize());
  }
  for (int launch = 0; launch < 2; launch++) {
    cal_int_mad<<<1, STREAM_THREADS>>>(STREAM_ITERS[launch], 3u, 1u, isink);
    CHECK(cudaDeviceSynchronize());
  }
  const long long stream_ops = (long long)STREAM_THREADS * STREAM_OPS * (STREAM_ITERS[1] - STREAM_ITERS[0]);
  printf("simflow-calibrate: stream_ops %lld\n", stream_ops);
  // the shared-memory stream the same way, its loads conflict-free and then 4-way conflicting
  for (int ways = 1; ways <= 4; ways += 3)
    for (int launch = 0; launch < 2; launch++) {
      cal_shared<<<1, STREAM_THREADS>>>(STREAM_ITERS[launch], ways, isink);
      CHECK(cudaDeviceSynchronize());
    }
  printf("simflow-calibrate: shared_ops %lld\n", stream_ops);
  // and among ten FMAs a load, conflict-free and 2-way (32 loads a pass a thread)
  for (int ways = 1; ways <= 2; ways++)
    for (int launch = 0; launch < 2; launch++) {
      cal_shared_fma<<<1, STREAM_THREADS>>>(STREAM_ITERS[launch], ways, isink);
      CHECK(cudaDeviceSynchronize());
    }
  printf("simflow-calibrate: mix_loads %lld\n", stream_ops / STREAM_OPS * MIX_LOADS);
  CHECK(cudaFree(isink));
  CHECK(cudaFree(fsink));
  // The run's config copies nothing into the simulated L2 (gpgpu_perf_sim_memcpy 0): a chain's first pass
  // meets DRAM. L1: a 16 KB chain of 128-byte lines, each pass 512 steps (the GPU's: 4096; a simulated step
  // takes the same cycles every time); shared memory: 4 KB (one thread copies the chain in first)
  if (chase("l1_latency_cycles", CACHED, 128, 32, 512)) return 1;
  if (chase("shared_latency_cycles", SHARED, 32, 32, 512)) return 1;
  // L2: 256 lines (32 KB) past L1; the first pass brings them from DRAM, the timed second hits L2
  if (chase("l2_latency_cycles", PAST_L1, 256, 32, 256)) return 1;
  // DRAM: lines 1 KB apart, the timed second pass on 256 entries no load has touched
  if (chase("dram_latency_cycles", PAST_L1, 4096, 256, 256)) return 1;
  // L2 bandwidth: cal_read over a buffer the L2 holds, once to fill it, then timed reading it once and
  // READ_REPS times (the difference of their cycles in the log: no launch, ramp or tail in it)
  long long n = (read_bytes < l2_bytes / 4 ? read_bytes : l2_bytes / 4) / 16;
  float4 *buf;
  float *sink;
  CHECK(cudaMalloc(&buf, n * 16));
  CHECK(cudaMalloc(&sink, sizeof(float)));
  CHECK(cudaMemset(buf, 1, n * 16));
  const int reps[3] = {1, 1, READ_REPS};
  for (int launch = 0; launch < 3; launch++) {
    cal_read<<<4 * sms, 512>>>(buf, n, reps[launch], sink);
    CHECK(cudaDeviceSynchronize());
  }
  printf("simflow-calibrate: l2_read_bytes %lld\n", n * 16 * (READ_REPS - 1));
  CHECK(cudaFree(buf));
  CHECK(cudaFree(sink));
  return 0;
}
