// Memory modes: where a large read-only array (a graph's edges and weights, a
// microbenchmark's buffer) lives, and how the GPU reaches it.
//
//   device          cudaMalloc, filled with cudaMemcpy before timing
//   zerocopy        cudaHostAlloc(cudaHostAllocMapped): pinned host memory
//                   the SMs read over PCIe
//   registered      page-aligned malloc'd memory pinned by
//                   cudaHostRegister(cudaHostRegisterMapped)
//   uvm_accessedby  cudaMallocManaged, preferred location the host and
//                   cudaMemAdviseSetAccessedBy for the GPU (the public EMOGI
//                   code's "zero-copy"): the GPU maps the host pages remotely
//   uvm             cudaMallocManaged, no advice: pages migrate on GPU faults
//   uvm_readmostly  cudaMallocManaged with cudaMemAdviseSetReadMostly: faults
//                   create read-only copies on the GPU
//
// Safety: managed memory is never allocated beyond kManagedFractionOfFree of
// the GPU's free memory (cudaMemGetInfo, counting every managed allocation
// this process holds); a request above it is refused with exit status 3 and
// never attempted. The fraction is a safety margin chosen here, not a
// hardware limit.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "check.cuh"

namespace hl {

constexpr double kManagedFractionOfFree = 0.25;

enum class MemMode { Device, ZeroCopy, Registered, UvmAccessedBy, Uvm, UvmReadMostly };

inline const std::vector<std::string>& mem_mode_names() {
  static const std::vector<std::string> names = {"device", "zerocopy", "registered",
                                                 "uvm_accessedby", "uvm", "uvm_readmostly"};
  return names;
}

inline const char* mem_mode_name(MemMode m) { return mem_mode_names()[static_cast<int>(m)].c_str(); }

inline MemMode parse_mem_mode(const std::string& s) {
  const auto& names = mem_mode_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == s) return static_cast<MemMode>(i);
  fail(kExitUsage, "usage", "unknown memory mode '%s'", s.c_str());
}

inline bool is_managed(MemMode m) {
  return m == MemMode::UvmAccessedBy || m == MemMode::Uvm || m == MemMode::UvmReadMostly;
}
inline bool is_host_resident(MemMode m) { return m != MemMode::Device; }

inline cudaMemLocation host_location() {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeHost;
  loc.id = 0;
  return loc;
}
inline cudaMemLocation device_location(int dev) {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = dev;
  return loc;
}

// cudaMemAdvise and cudaMemPrefetchAsync take a cudaMemLocation from CUDA 13
// on; before it they take a device ordinal (cudaCpuDeviceId for the host).
inline cudaError_t mem_advise(const void* p, size_t bytes, cudaMemoryAdvise advice, cudaMemLocation loc) {
#if CUDART_VERSION >= 13000
  return cudaMemAdvise(p, bytes, advice, loc);
#else
  return cudaMemAdvise(p, bytes, advice, loc.type == cudaMemLocationTypeDevice ? loc.id : cudaCpuDeviceId);
#endif
}
inline cudaError_t mem_prefetch(const void* p, size_t bytes, cudaMemLocation loc, cudaStream_t s) {
#if CUDART_VERSION >= 13000
  return cudaMemPrefetchAsync(p, bytes, loc, 0, s);
#else
  return cudaMemPrefetchAsync(p, bytes, loc.type == cudaMemLocationTypeDevice ? loc.id : cudaCpuDeviceId, s);
#endif
}

// Managed bytes this process holds; checked before every managed allocation.
inline size_t& managed_bytes_held() {
  static size_t held = 0;
  return held;
}

inline void check_managed_request(size_t bytes) {
  size_t free_B = 0, total_B = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_B, &total_B));
  double limit = kManagedFractionOfFree * static_cast<double>(free_B);
  double want = static_cast<double>(managed_bytes_held() + bytes);
  if (want > limit) {
    fail(kExitRefused, "refused",
         "refusing to allocate %.3f GiB of managed memory (%.3f GiB held already): the limit is %.0f%% "
         "of the GPU's free memory, %.3f GiB of %.3f GiB free",
         bytes / 1073741824.0, managed_bytes_held() / 1073741824.0, 100 * kManagedFractionOfFree,
         limit / 1073741824.0, free_B / 1073741824.0);
  }
}

inline void* managed_alloc(size_t bytes) {
  check_managed_request(bytes);
  void* p = nullptr;
  CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
  managed_bytes_held() += bytes;
  return p;
}

inline void managed_free(void* p, size_t bytes) {
  if (!p) return;
  CUDA_CHECK(cudaFree(p));
  managed_bytes_held() -= bytes;
}

// One array in a memory mode. `host` is a CPU-writable pointer to fill it
// (nullptr for device mode, which is filled by upload()); `dev` is the
// pointer kernels use.
struct Buffer {
  MemMode mode = MemMode::Device;
  size_t bytes = 0;
  void* host = nullptr;
  void* dev = nullptr;
  int device = 0;
};

inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

inline Buffer alloc_buffer(MemMode mode, size_t bytes, int device = 0) {
  Buffer b;
  b.mode = mode;
  b.bytes = bytes;
  b.device = device;
  size_t alloc = bytes ? bytes : 1;
  switch (mode) {
    case MemMode::Device:
      CUDA_CHECK(cudaMalloc(&b.dev, alloc));
      break;
    case MemMode::ZeroCopy:
      CUDA_CHECK(cudaHostAlloc(&b.host, alloc, cudaHostAllocMapped));
      CUDA_CHECK(cudaHostGetDevicePointer(&b.dev, b.host, 0));
      break;
    case MemMode::Registered: {
      size_t padded = round_up(alloc, 4096);
      b.host = std::aligned_alloc(4096, padded);
      if (!b.host) fail(kExitCudaError, "host", "aligned_alloc of %zu bytes failed", padded);
      std::memset(b.host, 0, padded);  // back every page before pinning
      CUDA_CHECK(cudaHostRegister(b.host, padded, cudaHostRegisterMapped));
      CUDA_CHECK(cudaHostGetDevicePointer(&b.dev, b.host, 0));
      break;
    }
    case MemMode::UvmAccessedBy:
    case MemMode::Uvm:
    case MemMode::UvmReadMostly:
      b.host = b.dev = managed_alloc(alloc);
      break;
  }
  return b;
}

// Copies `bytes` from a CPU array into the buffer (CPU stores for the host
// modes, so managed pages start resident on the host).
inline void upload(Buffer& b, const void* src, size_t bytes) {
  if (bytes > b.bytes) fail(kExitUsage, "usage", "upload of %zu bytes into a %zu-byte buffer", bytes, b.bytes);
  if (b.mode == MemMode::Device) {
    CUDA_CHECK(cudaMemcpy(b.dev, src, bytes, cudaMemcpyHostToDevice));
  } else {
    std::memcpy(b.host, src, bytes);
  }
}

// The advice of the buffer's mode; call after the CPU has filled it.
inline void apply_advice(Buffer& b) {
  if (b.bytes == 0) return;
  switch (b.mode) {
    case MemMode::UvmAccessedBy:
      CUDA_CHECK(mem_advise(b.dev, b.bytes, cudaMemAdviseSetPreferredLocation, host_location()));
      CUDA_CHECK(mem_advise(b.dev, b.bytes, cudaMemAdviseSetAccessedBy, device_location(b.device)));
      break;
    case MemMode::UvmReadMostly:
      CUDA_CHECK(mem_advise(b.dev, b.bytes, cudaMemAdviseSetReadMostly, device_location(b.device)));
      break;
    default:
      break;
  }
}

// Puts a managed buffer's pages back on the host (dropping GPU copies), so
// that each timed run starts with nothing resident on the GPU. No-op for the
// other modes.
inline void reset_residency(Buffer& b, cudaStream_t stream) {
  if (!is_managed(b.mode) || b.bytes == 0) return;
  if (b.mode == MemMode::UvmReadMostly)
    CUDA_CHECK(mem_advise(b.dev, b.bytes, cudaMemAdviseUnsetReadMostly, device_location(b.device)));
  CUDA_CHECK(mem_prefetch(b.dev, b.bytes, host_location(), stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (b.mode == MemMode::UvmReadMostly)
    CUDA_CHECK(mem_advise(b.dev, b.bytes, cudaMemAdviseSetReadMostly, device_location(b.device)));
}

inline void free_buffer(Buffer& b) {
  switch (b.mode) {
    case MemMode::Device:
      if (b.dev) CUDA_CHECK(cudaFree(b.dev));
      break;
    case MemMode::ZeroCopy:
      if (b.host) CUDA_CHECK(cudaFreeHost(b.host));
      break;
    case MemMode::Registered:
      if (b.host) {
        CUDA_CHECK(cudaHostUnregister(b.host));
        std::free(b.host);
      }
      break;
    default:
      managed_free(b.dev, b.bytes ? b.bytes : 1);
      break;
  }
  b = Buffer{};
}

}  // namespace hl
