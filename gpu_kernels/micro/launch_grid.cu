// launch_grid: the time of one kernel launch against its grid size, as a pair
// of CUDA events around the launch measures it (the way the traversal
// programs time each level).
//
// work "empty": the kernel does nothing; what is left is the launch itself
// and the dispatch of its CTAs. work "label": every warp loads one 4 B word
// of a device array (all lanes the same address, the word of its global warp
// id, as a warp-per-vertex traversal tests its vertex's label) and stores
// only if it equals a value the array never holds, so the launch costs its
// CTAs' dispatch plus one device load per warp, like a traversal level in
// which no vertex is active. Each point: one untimed launch, then `reps`
// launches, each between its own two events and followed by a
// synchronisation.
#include <algorithm>
#include <cstdint>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"

__global__ void empty_kernel() {}

__global__ void label_test(const uint32_t* __restrict__ label, uint32_t level, uint32_t* out) {
  const uint64_t warp = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (label[warp] == level) out[warp] = level;
}

int main(int argc, char** argv) {
  hl::Args args("launch_grid", "kernel launch time against the number of CTAs");
  args.flag("ctas", "1,8,64,132,1056,4096,16384,65536,262144,1048576,2097152", "CTAs per launch (list)");
  args.flag("threads-per-cta", "256", "threads per CTA (a multiple of 32)");
  args.flag("work", "empty,label", "what each warp does: empty, label (list)");
  args.flag("reps", "10", "timed launches per point");
  args.flag("device", "0", "CUDA device ordinal");
  args.parse(argc, argv);

  auto ctas_list = args.sizes("ctas");
  auto works = args.choices("work", {"empty", "label"});
  const uint64_t threads = static_cast<uint64_t>(args.integer("threads-per-cta"));
  const int reps = static_cast<int>(args.integer("reps"));
  if (reps < 1) hl::fail(hl::kExitUsage, "usage", "--reps must be >= 1");
  if (threads < 32 || threads > 1024 || threads % 32)
    hl::fail(hl::kExitUsage, "usage", "--threads-per-cta: %llu must be a multiple of 32 in 32..1024",
             (unsigned long long)threads);
  for (auto c : ctas_list)
    if (c < 1 || c > 0x7fffffffULL)
      hl::fail(hl::kExitUsage, "usage", "--ctas: %llu is outside 1..2^31-1", (unsigned long long)c);

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);

  const uint64_t max_ctas = *std::max_element(ctas_list.begin(), ctas_list.end());
  const uint64_t max_warps = max_ctas * (threads / 32);
  uint32_t *label = nullptr, *out = nullptr;
  CUDA_CHECK(cudaMalloc(&label, max_warps * sizeof(uint32_t)));
  CUDA_CHECK(cudaMalloc(&out, max_warps * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemset(label, 0, max_warps * sizeof(uint32_t)));

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer timer;
  for (const auto& work : works) {
    const bool empty = work == "empty";
    for (uint64_t ctas : ctas_list) {
      auto launch = [&]() {
        if (empty)
          empty_kernel<<<static_cast<unsigned>(ctas), static_cast<unsigned>(threads), 0, stream>>>();
        else
          label_test<<<static_cast<unsigned>(ctas), static_cast<unsigned>(threads), 0, stream>>>(label, 1u, out);
        CUDA_CHECK(cudaGetLastError());
      };
      launch();  // warm-up
      CUDA_CHECK(cudaStreamSynchronize(stream));
      for (int rep = 0; rep < reps; ++rep) {
        timer.start(stream);
        launch();
        timer.stop(stream);
        const double ms = timer.ms();
        hl::Json j;
        j.str("type", "measurement").str("benchmark", "launch");
        j.begin("params")
            .uinteger("ctas", ctas)
            .uinteger("threads_per_cta", threads)
            .str("work", work)
            .end();
        j.integer("rep", rep);
        j.begin("metrics")
            .num("time_ms", ms)
            .num("time_us", ms * 1e3)
            .num("ns_per_cta", ms * 1e6 / static_cast<double>(ctas))
            .end();
        j.print();
      }
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(label));
  CUDA_CHECK(cudaFree(out));
  hl::print_done("launch_grid");
  return 0;
}
