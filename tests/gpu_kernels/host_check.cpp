// Host-only driver for tests/gpu_kernels: runs the CPU parts of the
// traversal programs (graph loader, references, trace writer) without a GPU.
//   host_check ref PREFIX bfs|sssp|cc|pagerank SOURCE   results, one a line
//   host_check trace DIR SEED                          writes a synthetic trace
//   host_check numa BUSID [--host-node N] [--start-gate DIR]
//                                                      resolves the NUMA flags (no binding)
//   host_check cpulist TEXT                            the CPUs of a sysfs cpulist
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/numa.hpp"
#include "traversal/graph.hpp"
#include "traversal/reference.hpp"
#include "traversal/trace_format.hpp"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string mode = argv[1];
  if (mode == "ref" && argc == 5) {
    std::string kernel = argv[3];
    hl::HostGraph g = hl::load_graph(argv[2], kernel == "sssp");
    uint64_t source = std::strtoull(argv[4], nullptr, 10);
    if (kernel == "bfs") {
      for (auto d : hl::bfs_reference(g, source)) std::printf("%u\n", d);
    } else if (kernel == "sssp") {
      for (auto d : hl::sssp_reference(g, source)) std::printf("%u\n", d);
    } else if (kernel == "cc") {
      for (auto c : hl::cc_reference(g)) std::printf("%u\n", c);
    } else {
      for (auto r : hl::pagerank_reference(g, 10)) std::printf("%.17g\n", r);
    }
    return 0;
  }
  if (mode == "trace" && argc == 4) {
    std::string dir = argv[2];
    std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));
    std::vector<hl::TraceRecord> recs;
    // 3 CTAs, records appended in a scrambled CTA order but in program order per warp
    for (int i = 0; i < 40; ++i) {
      hl::TraceRecord r{};
      r.cta = static_cast<uint32_t>(rng() % 3) * 5;
      r.warp = static_cast<uint32_t>(rng() % 8);
      r.kind = rng() % 4 == 0 ? hl::kLoadWeights : hl::kLoadEdges;
      r.mask = static_cast<uint32_t>(rng()) | 1u;
      uint64_t base = 0x7f0000000000ull + (rng() % 100000) * 128;
      for (int l = 0; l < 32; ++l) r.addr[l] = (r.mask >> l & 1u) ? base + 8ull * l : 0;
      recs.push_back(r);
    }
    hl::TraceHeader h;
    h.kernel_name = "bfs_merged_aligned_u64";
    h.grid = 16;
    h.nregs = 30;
    h.shmem_base = 0x00007f0000000000ull - (1ull << 32);
    h.local_base = 0x00007f0000000000ull - (2ull << 32);
    h.elem_bytes = 8;
    if (!hl::write_traceg(dir + "/kernel-1.traceg", h, recs)) return 1;
    if (!hl::write_kernelslist(dir + "/kernelslist.g", {{0x7e0000000000ull, 4096}}, {"kernel-1.traceg"})) return 1;
    if (!hl::write_regions_json(dir + "/regions.json", {{"edges", 0x7f0000000000ull, 100000ull * 128 + 256, true},
                                                        {"offsets", 0x7e0000000000ull, 4096, false}}))
      return 1;
    // the records in append order, for the test to compare
    for (const auto& r : recs) {
      std::printf("%u %u %u %u", r.cta, r.warp, r.kind, r.mask);
      for (int l = 0; l < 32; ++l) std::printf(" %llu", static_cast<unsigned long long>(r.addr[l]));
      std::printf("\n");
    }
    return 0;
  }
  if (mode == "numa") {
    hl::Args args("host_check numa", "NUMA flags");
    hl::declare_host_flags(args);
    args.parse(argc - 2, argv + 2);
    hl::check_host_flags(args);
    hl::bind_host(args, argv[2], /*apply=*/false);
    return 0;
  }
  if (mode == "cpulist" && argc == 3) {
    for (int c : hl::parse_cpulist(argv[2], "cpulist")) std::printf("%d\n", c);
    return 0;
  }
  return 2;
}
