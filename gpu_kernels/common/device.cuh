// The GPU a program runs on, timing with CUDA events and the GPU's global timer,
// and an L2 flush.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "check.cuh"
#include "json.hpp"

namespace hl {

// The GPU's global timer (ns, wall-clock whatever the SM clock), read in a kernel.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct DeviceInfo {
  int device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int l2_B = 0;
  size_t global_mem_B = 0;
  int clock_kHz = 0;
  int mem_clock_kHz = 0;
  int concurrent_managed_access = 0;
  int pageable_memory_access = 0;
  int can_map_host_memory = 0;
  int pci_bus = 0, pci_device = 0, pci_domain = 0;
  int driver_version = 0, runtime_version = 0;
};

inline DeviceInfo query_device(int dev = 0) {
  DeviceInfo d;
  d.device = dev;
  CUDA_CHECK(cudaSetDevice(dev));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.l2_B = p.l2CacheSize;
  d.global_mem_B = p.totalGlobalMem;
  d.pci_bus = p.pciBusID;
  d.pci_device = p.pciDeviceID;
  d.pci_domain = p.pciDomainID;
  CUDA_CHECK(cudaDeviceGetAttribute(&d.max_blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.clock_kHz, cudaDevAttrClockRate, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.mem_clock_kHz, cudaDevAttrMemoryClockRate, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.concurrent_managed_access, cudaDevAttrConcurrentManagedAccess, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.pageable_memory_access, cudaDevAttrPageableMemoryAccess, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.can_map_host_memory, cudaDevAttrCanMapHostMemory, dev));
  CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

inline void print_device(const DeviceInfo& d) {
  size_t free_B = 0, total_B = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_B, &total_B));
  char bus[32];
  std::snprintf(bus, sizeof bus, "%04x:%02x:%02x", d.pci_domain, d.pci_bus, d.pci_device);
  Json j;
  j.str("type", "device")
      .integer("device", d.device)
      .str("name", d.name)
      .str("compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor))
      .integer("sm_count", d.sm_count)
      .integer("max_threads_per_sm", d.max_threads_per_sm)
      .integer("max_blocks_per_sm", d.max_blocks_per_sm)
      .integer("l2_B", d.l2_B)
      .uinteger("global_mem_B", d.global_mem_B)
      .uinteger("free_mem_B", free_B)
      .num("sm_clock_MHz", d.clock_kHz / 1e3)
      .num("mem_clock_MHz", d.mem_clock_kHz / 1e3)
      .integer("concurrent_managed_access", d.concurrent_managed_access)
      .integer("pageable_memory_access", d.pageable_memory_access)
      .integer("can_map_host_memory", d.can_map_host_memory)
      .str("pci_bus_id", bus)
      .integer("driver_version", d.driver_version)
      .integer("runtime_version", d.runtime_version)
      .print();
}

// A pair of events around work on one stream; ms() waits for the end.
class EventTimer {
 public:
  EventTimer() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t s = 0) { CUDA_CHECK(cudaEventRecord(start_, s)); }
  void stop(cudaStream_t s = 0) { CUDA_CHECK(cudaEventRecord(stop_, s)); }
  float ms() {
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
    return t;
  }

 private:
  cudaEvent_t start_, stop_;
};

// Writes a device buffer four times the L2 size, so that no line of earlier
// data stays in L2 before a timed run.
class L2Flusher {
 public:
  explicit L2Flusher(const DeviceInfo& d) : bytes_(static_cast<size_t>(std::max(d.l2_B, 1 << 20)) * 4) {
    CUDA_CHECK(cudaMalloc(&buf_, bytes_));
  }
  ~L2Flusher() { cudaFree(buf_); }
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cudaStream_t s = 0) {
    CUDA_CHECK(cudaMemsetAsync(buf_, ++value_ & 0xff, bytes_, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }

 private:
  size_t bytes_;
  void* buf_ = nullptr;
  int value_ = 0;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace hl
