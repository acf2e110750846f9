// host_read: host threads reading random rows of a host table, the CPU side of a
// GNN's CPU gather measured alone (no staging buffer unless --op copy, no copy
// to the GPU).
//
// --threads T host threads split --rows row reads evenly; thread t reads rows
// i = rows*t/T .. rows*(t+1)/T - 1, row i at id mix64(seed << 32 | i) mod N
// (splitmix64, the gather program's uniform ids) of a table of N = region_B /
// row_B rows. Ops:
//   sum   add the row's 4 B words into the thread's total (loads only)
//   copy  memcpy the row to slot i of a staging buffer (what cpu_gather does,
//         into a malloc'd buffer instead of a pinned one)
// The table is an aligned_alloc'd buffer (as cpu_gather's), written by T
// threads before the first rep; its 4 B word k holds (uint32)
// mix64(k ^ kTableSalt) (common/table_words.cuh).
// Each rep checks itself: the threads' totals (sum) or the staging buffer's word
// sum (copy) must equal the sum computed from the ids (check_pass).
// Reported per rep: time_ms, bw_GBps (rows * row_B bytes over it).
// The GPU is only queried for its PCI address, so that --host-node local binds
// the threads and the table to the GPU's NUMA node as the gather program does.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/memory.cuh"
#include "../common/numa.hpp"
#include "../common/table_words.cuh"

namespace {

using hl::mix64;
using hl::on_threads;
using hl::word_of;

uint64_t row_id(uint64_t seed, uint64_t i, uint64_t n_rows) { return mix64((seed << 32) | i) % n_rows; }

// The sum of the words of every row read, from the table's formula.
unsigned long long expected_sum(uint64_t rows, uint64_t row_B, uint64_t n_rows, uint64_t seed, int threads) {
  std::vector<unsigned long long> part(threads, 0);
  const uint64_t words = row_B / 4;
  on_threads(threads, [&](int t) {
    unsigned long long s = 0;
    for (uint64_t i = rows * t / threads; i < rows * (t + 1) / threads; ++i) {
      const uint64_t first = row_id(seed, i, n_rows) * words;
      for (uint64_t w = 0; w < words; ++w) s += word_of(first + w);
    }
    part[t] = s;
  });
  unsigned long long s = 0;
  for (auto p : part) s += p;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  hl::Args args("host_read", "host threads reading random rows of a host table (the CPU gather's reads)");
  args.flag("region-B", "1GiB", "table sizes (list)");
  args.flag("row-B", "64", "row sizes, multiples of 4 B (list)");
  args.flag("threads", "16", "host threads (list)");
  args.flag("op", "sum", "sum (loads only), copy (memcpy into a staging buffer) (list)");
  args.flag("rows", "262144", "rows read per rep");
  args.flag("reps", "5", "timed repetitions per point");
  args.flag("seed", "1", "seed of the row ids");
  args.flag("device", "0", "CUDA device ordinal (for the NUMA binding only)");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto regions = args.sizes("region-B");
  auto row_sizes = args.sizes("row-B");
  auto thread_counts = args.integers("threads");
  auto ops = args.choices("op", {"sum", "copy"});
  const uint64_t rows = static_cast<uint64_t>(args.integer("rows"));
  const int reps = static_cast<int>(args.integer("reps"));
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  if (rows < 1 || reps < 1) hl::fail(hl::kExitUsage, "usage", "--rows and --reps must be >= 1");
  int max_threads = 1;
  for (auto t : thread_counts) {
    if (t < 1 || t > 4096) hl::fail(hl::kExitUsage, "usage", "--threads: 1 to 4096");
    max_threads = std::max<int>(max_threads, static_cast<int>(t));
  }
  for (auto r : row_sizes)
    if (r < 4 || r % 4) hl::fail(hl::kExitUsage, "usage", "--row-B: a multiple of 4 B");

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::HostBinding bound = hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  int failures = 0;
  hl::start_gate(args, dev.device);

  for (uint64_t region_B : regions) {
    const uint64_t words = region_B / 4;
    auto* table = static_cast<uint32_t*>(std::aligned_alloc(4096, hl::round_up(region_B, 4096)));
    if (!table) hl::fail(hl::kExitCudaError, "host", "aligned_alloc of the table failed");
    hl::fill_words(table, words, max_threads);
    hl::print_buffer_node("table", table, bound.node);
    const char* bytes = reinterpret_cast<const char*>(table);
    for (uint64_t row_B : row_sizes) {
      const uint64_t n_rows = region_B / row_B;
      if (n_rows < 1) continue;
      const unsigned long long want = expected_sum(rows, row_B, n_rows, seed, max_threads);
      for (const auto& op : ops) {
        const bool copy = op == "copy";
        char* staging = nullptr;
        if (copy) {
          staging = static_cast<char*>(std::aligned_alloc(4096, hl::round_up(rows * row_B, 4096)));
          if (!staging) hl::fail(hl::kExitCudaError, "host", "aligned_alloc of the staging buffer failed");
          std::memset(staging, 0, rows * row_B);
        }
        for (int64_t threads : thread_counts) {
          const int T = static_cast<int>(threads);
          for (int rep = 0; rep < reps; ++rep) {
            std::vector<unsigned long long> part(T, 0);
            auto t0 = std::chrono::steady_clock::now();
            on_threads(T, [&](int t) {
              unsigned long long s = 0;
              for (uint64_t i = rows * t / T; i < rows * (t + 1) / T; ++i) {
                const uint64_t src = row_id(seed, i, n_rows) * row_B;
                if (copy) {
                  std::memcpy(staging + i * row_B, bytes + src, row_B);
                } else {
                  const uint32_t* w = reinterpret_cast<const uint32_t*>(bytes + src);
                  for (uint64_t k = 0; k < row_B / 4; ++k) s += w[k];
                }
              }
              part[t] = s;
            });
            auto t1 = std::chrono::steady_clock::now();
            unsigned long long got = 0;
            if (copy) {
              std::vector<unsigned long long> sums(max_threads, 0);
              const uint64_t n = rows * row_B / 4;
              const uint32_t* w = reinterpret_cast<const uint32_t*>(staging);
              on_threads(max_threads, [&](int t) {
                unsigned long long s = 0;
                for (uint64_t k = n * t / max_threads; k < n * (t + 1) / max_threads; ++k) s += w[k];
                sums[t] = s;
              });
              for (auto s : sums) got += s;
              std::memset(staging, 0, rows * row_B);
            } else {
              for (auto p : part) got += p;
            }
            const bool pass = got == want;
            failures += pass ? 0 : 1;
            const double time_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
            hl::Json j;
            j.str("type", "measurement").str("benchmark", "host_read");
            j.begin("params").uinteger("region_B", region_B).uinteger("row_B", row_B).integer("threads", threads)
                .str("op", op).end();
            j.integer("rep", rep);
            j.begin("metrics").num("time_ms", time_ms).num("bw_GBps", rows * row_B / (time_ms * 1e-3) / 1e9)
                .integer("check_pass", pass ? 1 : 0).uinteger("rows", rows).end();
            j.print();
          }
        }
        std::free(staging);
      }
    }
    std::free(table);
  }
  hl::Json done;
  done.str("type", "done").str("program", "host_read").integer("check_failures", failures).print();
  return failures ? hl::kExitCheckFailed : 0;
}
