// Self-trace: the traversal kernel records the addresses of its edge (and
// weight) loads, and the host writes them as an Accel-Sim trace folder
// (format in trace_format.hpp).
//
// Per walk launch: a counting launch (TRACE = kCount: no loads, no state
// changes) gives the number of load instructions; the record buffer grows to
// fit; the real launch (TRACE = kRecord) does the work and appends one
// TraceRecord per warp load instruction. Records of one warp are appended in
// its program order (its slots increase), so a stable sort by (cta, warp)
// restores each warp's order. The recording launch must append exactly as
// many records as the counting launch counted, or the program fails.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "../common/check.cuh"
#include "trace_format.hpp"
#include "walk.cuh"

namespace hl {

// The generic addresses of the shared and local windows, for the trace header.
__global__ void window_bases(unsigned long long* out) {
  out[0] = reinterpret_cast<unsigned long long>(__cvta_shared_to_generic(0));
  out[1] = reinterpret_cast<unsigned long long>(__cvta_local_to_generic(0));
}

class SelfTrace {
 public:
  explicit SelfTrace(std::string dir) : dir_(std::move(dir)) {
    ::mkdir(dir_.c_str(), 0775);
    struct stat st;
    if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      fail(kExitUsage, "usage", "--self-trace: cannot create directory %s", dir_.c_str());
    CUDA_CHECK(cudaMalloc(&counter_, sizeof(unsigned long long)));
    unsigned long long* d = nullptr;
    CUDA_CHECK(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
    window_bases<<<1, 1>>>(d);
    LAUNCH_SYNC_CHECK("window_bases");
    CUDA_CHECK(cudaMemcpy(bases_, d, sizeof bases_, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d));
  }
  ~SelfTrace() {
    cudaFree(counter_);
    if (records_) cudaFree(records_);
  }
  SelfTrace(const SelfTrace&) = delete;
  SelfTrace& operator=(const SelfTrace&) = delete;

  void add_region(const std::string& name, const void* start, uint64_t size_B, bool host) {
    regions_.push_back({name, reinterpret_cast<uint64_t>(start), size_B, host});
  }
  void add_memcpy(const void* dst, uint64_t bytes) { memcpys_.push_back({reinterpret_cast<uint64_t>(dst), bytes}); }

  TraceSink sink_for_count() {
    CUDA_CHECK(cudaMemset(counter_, 0, sizeof(unsigned long long)));
    TraceSink t;
    t.counter = counter_;
    return t;
  }
  unsigned long long counted() {
    unsigned long long n = 0;
    CUDA_CHECK(cudaMemcpy(&n, counter_, sizeof n, cudaMemcpyDeviceToHost));
    return n;
  }
  TraceSink sink_for_record(unsigned long long n) {
    if (n > capacity_) {
      if (records_) CUDA_CHECK(cudaFree(records_));
      capacity_ = std::max<unsigned long long>(n, 1024);
      CUDA_CHECK(cudaMalloc(&records_, capacity_ * sizeof(TraceRecord)));
    }
    CUDA_CHECK(cudaMemset(counter_, 0, sizeof(unsigned long long)));
    TraceSink t;
    t.counter = counter_;
    t.records = records_;
    t.capacity = capacity_;
    return t;
  }

  // After the recording launch finished: fetch its records and write kernel-N.traceg.
  void write_launch(const std::string& kernel_name, unsigned grid, int nregs, int elem_bytes, unsigned long long expected) {
    unsigned long long n = counted();
    if (n != expected)
      fail(kExitCudaError, "trace", "launch %d recorded %llu load instructions but its counting pass found %llu",
           launches_ + 1, n, expected);
    std::vector<TraceRecord> recs(n);
    if (n) CUDA_CHECK(cudaMemcpy(recs.data(), records_, n * sizeof(TraceRecord), cudaMemcpyDeviceToHost));
    ++launches_;
    records_total_ += n;
    TraceHeader h;
    h.kernel_name = kernel_name;
    h.kernel_id = launches_;
    h.grid = grid;
    h.block = kBlock;
    h.nregs = nregs;
    h.shmem_base = bases_[0];
    h.local_base = bases_[1];
    h.elem_bytes = elem_bytes;
    std::string name = "kernel-" + std::to_string(launches_) + ".traceg";
    if (!write_traceg(dir_ + "/" + name, h, recs)) fail(kExitCudaError, "trace", "cannot write %s/%s", dir_.c_str(), name.c_str());
    kernels_.push_back(name);
  }

  void finish() {
    if (!write_kernelslist(dir_ + "/kernelslist.g", memcpys_, kernels_))
      fail(kExitCudaError, "trace", "cannot write %s/kernelslist.g", dir_.c_str());
    if (!write_regions_json(dir_ + "/regions.json", regions_))
      fail(kExitCudaError, "trace", "cannot write %s/regions.json", dir_.c_str());
  }

  int launches() const { return launches_; }
  unsigned long long records_total() const { return records_total_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  unsigned long long* counter_ = nullptr;
  TraceRecord* records_ = nullptr;
  unsigned long long capacity_ = 0;
  unsigned long long bases_[2] = {0, 0};
  int launches_ = 0;
  unsigned long long records_total_ = 0;
  std::vector<TraceRegion> regions_;
  std::vector<std::pair<uint64_t, uint64_t>> memcpys_;
  std::vector<std::string> kernels_;
};

}  // namespace hl
