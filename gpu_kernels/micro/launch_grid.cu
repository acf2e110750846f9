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
// which no vertex is active. work "spin": in every CTA the first
// `live-warps` warps spin for `spin-us` of the GPU's global timer and the
// others exit at once, as a traversal level's CTAs hold a few active vertices
// among many inactive ones. Every CTA records its SM and its spin's start and
// end: the CTAs an SM holds spinning at once tell whether a warp that exits
// frees its slot for another CTA before its CTA's other warps finish. work
// "flag": `writers` warps spread evenly over the grid each write one word from
// lane 0 and exit, the others exit at once, as a traversal level's active
// warps add their edge count to one counter and set the run's `changed` flag
// (write "red": an atomicAdd whose result is unused, a reduction, to one
// counter; "store": a 4 B store to one flag; "both": the two; "red_apart" and
// "store_apart": the same to a 128 B line of the warp's own, which tells what
// one shared address costs beyond the writes themselves). Each point: one
// untimed launch, then `reps` launches, each between its own two events and
// followed by a synchronisation.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/numa.hpp"

__global__ void empty_kernel() {}

// The first `live` warps of each CTA spin for `ns` of the GPU's global timer
// (wall-clock time, whatever the SM clock), sleeping between its reads; the
// others exit at once. Lane 0 of warp 0 records the CTA's SM and its spin's
// start and end (ns).
__global__ void spin_kernel(unsigned long long ns, unsigned live, unsigned long long* rec) {
  if ((threadIdx.x >> 5) >= live) return;
  const unsigned long long t0 = hl::global_ns();
  unsigned long long t = t0;
  while (t - t0 < ns) {  // sleeps between reads: the warps do not contend for issue
    __nanosleep(256);
    t = hl::global_ns();
  }
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    rec[3ull * blockIdx.x] = sm;
    rec[3ull * blockIdx.x + 1] = t0;
    rec[3ull * blockIdx.x + 2] = t;
  }
}

// From the records of a spin launch: per SM the most CTAs spinning at once
// (start/end sweep), and how many CTAs each SM ran.
struct Residency {
  double median_concurrent = 0, max_concurrent = 0, max_ctas_on_sm = 0, sms = 0;
};

Residency residency(const std::vector<unsigned long long>& rec, uint64_t ctas) {
  std::map<unsigned long long, std::vector<std::pair<unsigned long long, int>>> per_sm;
  for (uint64_t c = 0; c < ctas; ++c) {
    per_sm[rec[3 * c]].push_back({rec[3 * c + 1], +1});
    per_sm[rec[3 * c]].push_back({rec[3 * c + 2], -1});
  }
  std::vector<double> conc;
  Residency r;
  for (auto& kv : per_sm) {
    auto& ev = kv.second;
    std::sort(ev.begin(), ev.end());  // an end before a start at the same time
    int now = 0, most = 0;
    for (auto& e : ev) most = std::max(most, now += e.second);
    conc.push_back(most);
    r.max_ctas_on_sm = std::max(r.max_ctas_on_sm, static_cast<double>(ev.size() / 2));
  }
  std::sort(conc.begin(), conc.end());
  r.sms = static_cast<double>(conc.size());
  r.median_concurrent = conc[conc.size() / 2];
  r.max_concurrent = conc.back();
  return r;
}

__global__ void label_test(const uint32_t* __restrict__ label, uint32_t level, uint32_t* out) {
  const uint64_t warp = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (label[warp] == level) out[warp] = level;
}

enum FlagWrite { kRed = 0, kStore = 1, kBoth = 2, kRedApart = 3, kStoreApart = 4 };
const char* const kFlagWrites[] = {"red", "store", "both", "red_apart", "store_apart"};

uint64_t flag_write_of(const std::string& name) {
  for (uint64_t k = 0; k < sizeof kFlagWrites / sizeof kFlagWrites[0]; ++k)
    if (name == kFlagWrites[k]) return k;
  return 0;  // --write is checked against the names
}

// Lane 0 of every `stride`-th warp of the grid, the first `writers` of them,
// writes as `op` says (see the file's notes); every other thread exits at once.
__global__ void flag_write(uint64_t stride, uint64_t writers, int op, unsigned long long* count,
                           int* flag, unsigned long long* apart) {
  const uint64_t warp = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if ((threadIdx.x & 31) || warp % stride || warp / stride >= writers) return;
  if (op == kRed || op == kBoth) atomicAdd(count, 1ull);
  if (op == kStore || op == kBoth) *flag = 1;
  if (op == kRedApart) atomicAdd(apart + warp * 16, 1ull);
  if (op == kStoreApart) *reinterpret_cast<int*>(apart + warp * 16) = 1;
}

int main(int argc, char** argv) {
  hl::Args args("launch_grid", "kernel launch time against the number of CTAs");
  args.flag("ctas", "1,8,64,132,1056,4096,16384,65536,262144,1048576,2097152", "CTAs per launch (list)");
  args.flag("threads-per-cta", "256", "threads per CTA (a multiple of 32)");
  args.flag("work", "empty,label", "what each warp does: empty, label, spin, flag (list)");
  args.flag("writers", "0,4096", "work flag: warps that write, spread evenly over the grid (list)");
  args.flag("write", "red,store", "work flag: red, store, both, red_apart, store_apart (list)");
  args.flag("live-warps", "1", "work spin: warps per CTA that spin, the others exit at once (list)");
  args.flag("spin-us", "20", "work spin: how long a live warp spins, us (the GPU's global timer)");
  args.flag("reps", "10", "timed launches per point");
  args.flag("device", "0", "CUDA device ordinal");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto ctas_list = args.sizes("ctas");
  auto works = args.choices("work", {"empty", "label", "spin", "flag"});
  const auto writers_list = args.sizes("writers");
  const auto writes = args.choices("write", {"red", "store", "both", "red_apart", "store_apart"});
  const auto lives = args.sizes("live-warps");
  const double spin_us = args.real("spin-us");
  const uint64_t threads = static_cast<uint64_t>(args.integer("threads-per-cta"));
  const int reps = static_cast<int>(args.integer("reps"));
  if (reps < 1) hl::fail(hl::kExitUsage, "usage", "--reps must be >= 1");
  if (threads < 32 || threads > 1024 || threads % 32)
    hl::fail(hl::kExitUsage, "usage", "--threads-per-cta: %llu must be a multiple of 32 in 32..1024",
             (unsigned long long)threads);
  for (auto l : lives)
    if (l < 1 || l > threads / 32)
      hl::fail(hl::kExitUsage, "usage", "--live-warps: %llu is outside 1..%llu (warps per CTA)",
               (unsigned long long)l, (unsigned long long)(threads / 32));
  if (!(spin_us > 0 && spin_us <= 1e6)) hl::fail(hl::kExitUsage, "usage", "--spin-us must be in (0, 1e6]");
  for (auto c : ctas_list)
    if (c < 1 || c > 0x7fffffffULL)
      hl::fail(hl::kExitUsage, "usage", "--ctas: %llu is outside 1..2^31-1", (unsigned long long)c);

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  hl::start_gate(args, dev.device);

  const uint64_t max_ctas = *std::max_element(ctas_list.begin(), ctas_list.end());
  const uint64_t max_warps = max_ctas * (threads / 32);
  const bool flags = std::find(works.begin(), works.end(), "flag") != works.end();
  if (flags) {
    for (auto c : ctas_list)
      for (auto w : writers_list)
        if (w > c * (threads / 32))
          hl::fail(hl::kExitUsage, "usage", "--writers: %llu is more than the %llu warps of %llu CTAs",
                   (unsigned long long)w, (unsigned long long)(c * (threads / 32)),
                   (unsigned long long)c);
    if (max_warps > (1ull << 25))
      hl::fail(hl::kExitUsage, "usage", "work flag: at most 2^25 warps a launch (a 128 B line each)");
  }
  unsigned long long *count = nullptr, *apart = nullptr;  // work flag
  int* flag = nullptr;
  if (flags) {
    CUDA_CHECK(cudaMalloc(&count, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&apart, max_warps * 128));
    CUDA_CHECK(cudaMemset(count, 0, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemset(flag, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(apart, 0, max_warps * 128));
  }
  uint32_t *label = nullptr, *out = nullptr;
  unsigned long long* rec = nullptr;  // work spin: three words per CTA
  if (std::find(works.begin(), works.end(), "spin") != works.end())
    CUDA_CHECK(cudaMalloc(&rec, max_ctas * 3 * sizeof(unsigned long long)));
  CUDA_CHECK(cudaMalloc(&label, max_warps * sizeof(uint32_t)));
  CUDA_CHECK(cudaMalloc(&out, max_warps * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemset(label, 0, max_warps * sizeof(uint32_t)));

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer timer;
  const unsigned long long spin_ns = static_cast<unsigned long long>(spin_us * 1e3);
  for (const auto& work : works) {
    // work spin runs once per --live-warps value, work flag once per --write and
    // --writers value; the others once (live unused)
    std::vector<std::pair<uint64_t, uint64_t>> points;  // (live or write, writers)
    if (work == "spin")
      for (uint64_t live : lives) points.push_back({live, 0});
    else if (work == "flag")
      for (const auto& w : writes)
        for (uint64_t n : writers_list)
          points.push_back({flag_write_of(w), n});
    else
      points.push_back({0, 0});
    for (const auto& point : points) {
      const uint64_t live = point.first, writers = point.second;
      for (uint64_t ctas : ctas_list) {
        const uint64_t warps = ctas * (threads / 32);
        const uint64_t stride = writers ? warps / writers : 1;
        auto launch = [&]() {
          const unsigned grid = static_cast<unsigned>(ctas), block = static_cast<unsigned>(threads);
          if (work == "empty")
            empty_kernel<<<grid, block, 0, stream>>>();
          else if (work == "label")
            label_test<<<grid, block, 0, stream>>>(label, 1u, out);
          else if (work == "flag")
            flag_write<<<grid, block, 0, stream>>>(stride, writers, static_cast<int>(live), count, flag,
                                                   apart);
          else
            spin_kernel<<<grid, block, 0, stream>>>(spin_ns, static_cast<unsigned>(live), rec);
          CUDA_CHECK(cudaGetLastError());
        };
        launch();  // warm-up
        CUDA_CHECK(cudaStreamSynchronize(stream));
        for (int rep = 0; rep < reps; ++rep) {
          timer.start(stream);
          launch();
          timer.stop(stream);
          const double ms = timer.ms();
          Residency res;
          if (work == "spin") {
            std::vector<unsigned long long> h(ctas * 3);
            CUDA_CHECK(cudaMemcpy(h.data(), rec, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
            res = residency(h, ctas);
          }
          hl::Json j;
          j.str("type", "measurement").str("benchmark", "launch");
          j.begin("params")
              .uinteger("ctas", ctas)
              .uinteger("threads_per_cta", threads)
              .str("work", work);
          if (work == "spin") j.uinteger("live_warps", live).num("spin_us", spin_us);
          if (work == "flag") j.uinteger("writers", writers).str("write", kFlagWrites[live]);
          j.end();
          j.integer("rep", rep);
          j.begin("metrics")
              .num("time_ms", ms)
              .num("time_us", ms * 1e3)
              .num("ns_per_cta", ms * 1e6 / static_cast<double>(ctas));
          if (work == "spin")
            j.num("sms_used", res.sms)
                .num("concurrent_ctas_median_sm", res.median_concurrent)
                .num("concurrent_ctas_max_sm", res.max_concurrent)
                .num("ctas_on_busiest_sm", res.max_ctas_on_sm);
          j.end();
          j.print();
        }
      }
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(label));
  CUDA_CHECK(cudaFree(out));
  if (rec) CUDA_CHECK(cudaFree(rec));
  if (flags) {
    CUDA_CHECK(cudaFree(count));
    CUDA_CHECK(cudaFree(flag));
    CUDA_CHECK(cudaFree(apart));
  }
  hl::print_done("launch_grid");
  return 0;
}
