// memcpy_bw: copy-engine bandwidth of cudaMemcpy between pinned host memory
// (cudaHostAlloc) and device memory, by direction and size.
//
// Each measurement times `copies` back-to-back copies of one size between
// two events (enough copies to move at least --min-bytes-B, so small copies
// are not lost in the event resolution) and reports the time of one copy.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/numa.hpp"

int main(int argc, char** argv) {
  hl::Args args("memcpy_bw", "pinned cudaMemcpy H2D/D2H bandwidth by size");
  args.flag("direction", "h2d,d2h", "copy directions: h2d, d2h (list)");
  args.flag("size-B", "4KiB,64KiB,1MiB,16MiB,256MiB,1GiB", "copy sizes (list)");
  args.flag("reps", "5", "timed repetitions per point");
  args.flag("min-bytes-B", "256MiB", "bytes each timed repetition moves at least");
  args.flag("device", "0", "CUDA device ordinal");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto dirs = args.choices("direction", {"h2d", "d2h"});
  auto sizes = args.sizes("size-B");
  int reps = static_cast<int>(args.integer("reps"));
  uint64_t min_bytes = args.size("min-bytes-B");
  if (reps < 1) hl::fail(hl::kExitUsage, "usage", "--reps must be >= 1");
  for (auto s : sizes)
    if (s == 0) hl::fail(hl::kExitUsage, "usage", "--size-B: sizes must be > 0");

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::HostBinding bound = hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));

  uint64_t max_size = *std::max_element(sizes.begin(), sizes.end());
  void *host = nullptr, *dbuf = nullptr;
  CUDA_CHECK(cudaHostAlloc(&host, max_size, cudaHostAllocDefault));
  CUDA_CHECK(cudaMalloc(&dbuf, max_size));
  std::memset(host, 0x5a, max_size);
  CUDA_CHECK(cudaMemset(dbuf, 0xa5, max_size));
  hl::print_buffer_node("host", host, bound.node);
  hl::start_gate(args, dev.device);

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer timer;
  for (const auto& dir : dirs) {
    bool h2d = dir == "h2d";
    for (uint64_t size : sizes) {
      uint64_t copies = std::max<uint64_t>(1, std::min<uint64_t>(4096, (min_bytes + size - 1) / size));
      auto copy = [&]() {
        if (h2d)
          CUDA_CHECK(cudaMemcpyAsync(dbuf, host, size, cudaMemcpyHostToDevice, stream));
        else
          CUDA_CHECK(cudaMemcpyAsync(host, dbuf, size, cudaMemcpyDeviceToHost, stream));
      };
      copy();  // warm-up
      CUDA_CHECK(cudaStreamSynchronize(stream));
      for (int rep = 0; rep < reps; ++rep) {
        timer.start(stream);
        for (uint64_t c = 0; c < copies; ++c) copy();
        timer.stop(stream);
        double ms = timer.ms() / static_cast<double>(copies);
        hl::Json j;
        j.str("type", "measurement").str("benchmark", "memcpy");
        j.begin("params").str("direction", dir).uinteger("size_B", size).end();
        j.integer("rep", rep);
        j.begin("metrics")
            .num("time_ms", ms)
            .num("bw_GBps", size / (ms * 1e-3) / 1e9)
            .uinteger("copies", copies)
            .end();
        j.print();
      }
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFreeHost(host));
  CUDA_CHECK(cudaFree(dbuf));
  hl::print_done("memcpy_bw");
  return 0;
}
