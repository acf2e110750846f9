// Scratch: wall time of cudaMemAdvise(SetReadMostly) on CPU-written managed memory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
int main(int argc, char** argv) {
  size_t size = (size_t)atoll(argv[1]) << 20;
  int touch = atoi(argv[2]);
  CK(cudaSetDevice(0)); CK(cudaFree(0));
  for (int rep = 0; rep < 3; ++rep) {
    void* b; CK(cudaMallocManaged(&b, size));
    if (touch) memset(b, 1, size);
    cudaMemLocation loc{}; loc.type = cudaMemLocationTypeDevice; loc.id = 0;
    auto t0 = std::chrono::steady_clock::now();
    CK(cudaMemAdvise(b, size, cudaMemAdviseSetReadMostly, loc));
    auto t1 = std::chrono::steady_clock::now();
    CK(cudaMemAdvise(b, size, cudaMemAdviseUnsetReadMostly, loc));
    auto t2 = std::chrono::steady_clock::now();
    printf("{\"size_MiB\":%zu,\"cpu_touched\":%d,\"rep\":%d,\"set_readmostly_ms\":%.3f,\"unset_ms\":%.3f}\n", size >> 20, touch, rep,
           std::chrono::duration<double, std::milli>(t1 - t0).count(), std::chrono::duration<double, std::milli>(t2 - t1).count());
    CK(cudaFree(b));
  }
  return 0;
}
