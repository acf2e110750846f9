// uvm_touch: first-touch bandwidth of CUDA managed memory whose pages start
// on the host, by access pattern and advice.
//
// Per point and repetition: allocate size_B of managed memory (refused above
// the safety limit in memory.cuh), fill it on the CPU (every page then lives
// on the host), apply the advice, flush L2, and time one read of every byte
// by the GPU (CUDA events). Then a second read of the same bytes is timed
// (the pages are on the GPU now, except with accessedby), and the buffer is
// freed.
//   advice none        page faults migrate 4 KiB pages (and the driver's
//                      prefetcher may take more)
//   advice readmostly  cudaMemAdviseSetReadMostly: faults make read-only
//                      copies on the GPU
//   advice prefetch    cudaMemPrefetchAsync to the GPU, then the read; the
//                      time includes the prefetch (prefetch_ms alone too)
//   advice accessedby  preferred location host + cudaMemAdviseSetAccessedBy
//                      for the GPU: the pages stay on the host and the SMs
//                      read them remotely
// Patterns: seq (warp w's j-th load covers 128 B block w + j*W), random
// (the 128 B blocks in the order b_j = j * 2654435761 mod n, a permutation
// of all n blocks as the multiplier is a prime above n; each warp takes a
// contiguous run of j) and sparse (one 128 B line every stride_B bytes,
// warp w's j-th load the line at (w + j*W) * stride_B: with a stride of
// 2 MiB, one fault per VA block). Each lane loads 4 B, so one warp load is
// one 128 B line.
// Launches (--launches K, default 1): the timed read is split into K launches,
// launch k reading the lines [k n / K, (k+1) n / K) of the n the pattern touches
// (random: a permutation within each part), each timed on its own (launch_ms),
// so a run's one-off fault cost can be told from a cost per launch that faults.
// --idle-us T waits T microseconds on the host (after the previous launch has
// finished) before each launch after the first; the total then includes the waits.
// Host states (--host-state): fresh (the CPU's first writes placed the pages
// on the host) or returned (after the CPU fill and the advice, the buffer is
// prefetched to the GPU and back to the host, untimed: the state a traversal
// program's timed repetitions find their managed edge list in, see
// reset_residency in common/memory.cuh).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/numa.hpp"
#include "../common/memory.cuh"

constexpr uint64_t kPermMultiplier = 2654435761ull;  // a prime

template <bool RANDOM>
__global__ void touch(const unsigned* buf, uint64_t nblocks, unsigned* sink, uint64_t stride_words = 32) {
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t warp = tid / 32, nwarps = (static_cast<uint64_t>(gridDim.x) * blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  unsigned acc = 0;
  if (!RANDOM) {
    for (uint64_t b = warp; b < nblocks; b += nwarps) acc += buf[b * stride_words + lane];
  } else {
    const uint64_t per = (nblocks + nwarps - 1) / nwarps;
    const uint64_t last = min(nblocks, (warp + 1) * per);
    for (uint64_t j = warp * per; j < last; ++j) acc += buf[((j * kPermMultiplier) % nblocks) * 32 + lane];
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

int main(int argc, char** argv) {
  hl::Args args("uvm_touch", "UVM first-touch bandwidth by pattern and advice");
  args.flag("size-B", "64MiB,256MiB,1GiB", "managed buffer sizes (list)");
  args.flag("pattern", "seq,random", "access pattern: seq, random, sparse (list)");
  args.flag("stride-B", "2MiB", "sparse pattern: bytes between the lines touched (list)");
  args.flag("advice", "none,readmostly,prefetch,accessedby", "advice: none, readmostly, prefetch, accessedby (list)");
  args.flag("host-state", "fresh", "where the pages come from: fresh (first written by the CPU) or returned (moved to the GPU and prefetched back, untimed) (list)");
  args.flag("launches", "1", "launches the timed read is split into, each over its share of the lines (list)");
  args.flag("idle-us", "0", "with --launches > 1: host wait before each later launch, us (list)");
  args.flag("warps", "0", "warps in the grid, 0 = as many as fit on the GPU at once");
  args.flag("reps", "3", "timed repetitions per point");
  args.flag("device", "0", "CUDA device ordinal");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto sizes = args.sizes("size-B");
  auto patterns = args.choices("pattern", {"seq", "random", "sparse"});
  auto strides = args.sizes("stride-B");
  auto advices = args.choices("advice", {"none", "readmostly", "prefetch", "accessedby"});
  auto host_states = args.choices("host-state", {"fresh", "returned"});
  auto launch_counts = args.sizes("launches");
  for (auto k : launch_counts)
    if (k < 1 || k > 4096) hl::fail(hl::kExitUsage, "usage", "--launches: %llu must be 1 to 4096", (unsigned long long)k);
  auto idles = args.sizes("idle-us");
  for (auto t : idles)
    if (t > 10000000) hl::fail(hl::kExitUsage, "usage", "--idle-us: %llu is over 10 s", (unsigned long long)t);
  int64_t warps_req = args.integer("warps");
  int reps = static_cast<int>(args.integer("reps"));
  if (reps < 1 || warps_req < 0) hl::fail(hl::kExitUsage, "usage", "--reps >= 1 and --warps >= 0");
  for (auto s : sizes)
    if (s < 4096 || s % 128) hl::fail(hl::kExitUsage, "usage", "--size-B: %llu must be >= 4 KiB and a multiple of 128", (unsigned long long)s);
  for (auto s : strides)
    if (s < 128 || s % 128) hl::fail(hl::kExitUsage, "usage", "--stride-B: %llu must be >= 128 and a multiple of 128", (unsigned long long)s);

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  hl::start_gate(args, dev.device);
  if (!dev.concurrent_managed_access)
    hl::fail(hl::kExitRefused, "refused", "the GPU has no concurrent managed access; UVM first touch is not measured");
  hl::L2Flusher flusher(dev);
  unsigned* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer total_timer, prefetch_timer, second_timer;

  int occ = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, touch<false>, 256, 0));
  uint64_t warps = warps_req ? static_cast<uint64_t>(warps_req) : static_cast<uint64_t>(occ) * dev.sm_count * 8;
  unsigned grid = static_cast<unsigned>((warps + 7) / 8);
  warps = static_cast<uint64_t>(grid) * 8;

  {  // warm-up: the first managed fault of a context pays one-off setup
    hl::Buffer w = hl::alloc_buffer(hl::MemMode::Uvm, 2 << 20, dev.device);
    std::memset(w.host, 1, w.bytes);
    touch<false><<<grid, 256, 0, stream>>>(static_cast<const unsigned*>(w.dev), w.bytes / 128, sink);
    LAUNCH_CHECK("touch");
    CUDA_CHECK(cudaStreamSynchronize(stream));
    hl::free_buffer(w);
  }

  for (uint64_t size : sizes)
    for (const auto& pattern : patterns)
     for (uint64_t stride : (pattern == "sparse" ? strides : std::vector<uint64_t>{128}))
      for (const auto& advice : advices)
       for (const auto& host_state : host_states)
        for (uint64_t launches : launch_counts)
        for (uint64_t idle_us : (launches > 1 ? idles : std::vector<uint64_t>{0}))
        for (int rep = 0; rep < reps; ++rep) {
          hl::MemMode mode = advice == "readmostly"   ? hl::MemMode::UvmReadMostly
                             : advice == "accessedby" ? hl::MemMode::UvmAccessedBy
                                                      : hl::MemMode::Uvm;
          hl::Buffer b = hl::alloc_buffer(mode, size, dev.device);
          std::memset(b.host, 1, size);  // every page first touched, so resident, on the host
          hl::apply_advice(b);
          const bool returned = host_state == "returned";
          if (returned) {  // to the GPU and back, as a traversal's earlier run leaves it
            CUDA_CHECK(hl::mem_prefetch(b.dev, size, hl::device_location(dev.device), stream));
            CUDA_CHECK(cudaStreamSynchronize(stream));
            hl::reset_residency(b, stream);
          }
          flusher.flush(stream);
          auto kernel = pattern == "random" ? touch<true> : touch<false>;
          const unsigned* p = static_cast<const unsigned*>(b.dev);
          const bool sparse = pattern == "sparse";
          uint64_t nblocks = size / stride;
          const uint64_t stride_words = stride / 4;
          const uint64_t parts = std::min<uint64_t>(launches, nblocks);
          std::vector<hl::EventTimer> part_timers(parts);
          total_timer.start(stream);
          prefetch_timer.start(stream);
          if (advice == "prefetch") CUDA_CHECK(hl::mem_prefetch(b.dev, size, hl::device_location(dev.device), stream));
          prefetch_timer.stop(stream);
          for (uint64_t k = 0; k < parts; ++k) {  // launch k: lines [first, last)
            const uint64_t first = k * nblocks / parts, last = (k + 1) * nblocks / parts;
            if (k > 0 && idle_us > 0) {
              CUDA_CHECK(cudaStreamSynchronize(stream));
              std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
            }
            part_timers[k].start(stream);
            kernel<<<grid, 256, 0, stream>>>(p + first * (sparse ? stride_words : 32), last - first,
                                             sink, stride_words);
            LAUNCH_CHECK("touch");
            part_timers[k].stop(stream);
          }
          total_timer.stop(stream);
          double total_ms = total_timer.ms();
          double prefetch_ms = prefetch_timer.ms();
          std::vector<double> launch_ms;
          for (auto& t : part_timers) launch_ms.push_back(t.ms());
          second_timer.start(stream);
          kernel<<<grid, 256, 0, stream>>>(p, nblocks, sink, stride_words);
          LAUNCH_CHECK("touch");
          second_timer.stop(stream);
          double second_ms = second_timer.ms();
          hl::free_buffer(b);

          hl::Json j;
          j.str("type", "measurement").str("benchmark", "uvm_touch");
          j.begin("params").uinteger("size_B", size).str("pattern", pattern);
          if (sparse) j.uinteger("stride_B", stride);
          j.str("advice", advice);
          if (returned) j.str("host_state", host_state);
          if (launches > 1) j.uinteger("launches", launches);
          if (idle_us > 0) j.uinteger("idle_us", idle_us);
          j.end();
          j.integer("rep", rep);
          j.begin("metrics")
              .num("time_ms", total_ms)
              .num("bw_GBps", size / (total_ms * 1e-3) / 1e9)
              .num("prefetch_ms", prefetch_ms)
              .num("kernel_ms", total_ms - prefetch_ms)
              .num("second_time_ms", second_ms)
              .num("second_bw_GBps", size / (second_ms * 1e-3) / 1e9)
              .uinteger("warps_launched", warps)
              .uinteger("lines_touched", nblocks);
          if (parts > 1) {
            // the first launch, which pays a run's one-off fault cost, and the mean
            // of the later ones (every launch in the detail)
            double later_ms = 0;
            for (uint64_t k = 1; k < parts; ++k) later_ms += launch_ms[k];
            j.num("first_launch_ms", launch_ms[0])
                .num("later_launch_ms", later_ms / static_cast<double>(parts - 1));
          }
          j.end();
          if (parts > 1) {
            j.begin("detail").nums("launch_ms", launch_ms).end();
          }
          j.print();
        }
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(sink));
  hl::print_done("uvm_touch");
  return 0;
}
