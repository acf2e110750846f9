// Writing a self-trace as an Accel-Sim trace folder (plain C++, no CUDA, so
// the format can be tested without a GPU).
//
//   kernelslist.g    MemcpyHtoD lines for the arrays copied to the GPU before
//                    the first launch, then one kernel-N.traceg line a launch
//   kernel-N.traceg  the header of Accel-Sim tracer version 4, then, per CTA
//                    with at least one record, all its warps with their load
//                    instructions in address mode 0 (one hex address per
//                    active lane); CTAs with no record are left out
//   regions.json     {"regions": [{"name", "start", "size_B", "location"}]}
//                    for every array the kernels touch (location host or
//                    device), the layout hostlink.traces uses
// Instruction lines: `PC mask 1 R4 OPCODE 1 R2 width 0 addresses`, with PC
// 0080 for the edge load and 0090 for the weight load, OPCODE LDG.E.64 for
// 8-byte and LDG.E for 4-byte elements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace hl {

// Load sites, recorded with each trace record.
enum LoadKind { kLoadEdges = 0, kLoadWeights = 1 };

// One warp load instruction, as the kernel records it.
struct TraceRecord {
  uint32_t cta;
  uint32_t warp;  // warp within its CTA
  uint32_t mask;  // active lanes
  uint32_t kind;  // LoadKind
  uint64_t addr[32];  // 0 for inactive lanes
};

struct TraceHeader {
  std::string kernel_name;
  int kernel_id = 1;
  unsigned grid = 1;
  int block = 256;
  int nregs = 0;
  unsigned long long shmem_base = 0, local_base = 0;
  int elem_bytes = 8;  // bytes per edge element
};

// Writes kernel-N.traceg from records in any order: a stable sort by (cta,
// warp) keeps each warp's records in the order they were appended, which is
// its program order. Returns false if the file cannot be written.
inline bool write_traceg(const std::string& path, const TraceHeader& h, const std::vector<TraceRecord>& recs) {
  std::vector<size_t> order(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (recs[a].cta != recs[b].cta) return recs[a].cta < recs[b].cta;
    return recs[a].warp < recs[b].warp;
  });
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "-kernel name = %s\n-kernel id = %d\n-grid dim = (%u,1,1)\n-block dim = (%d,1,1)\n",
               h.kernel_name.c_str(), h.kernel_id, h.grid, h.block);
  std::fprintf(f, "-shmem = 0\n-nregs = %d\n-binary version = 90\n-cuda stream id = 0\n", h.nregs);
  std::fprintf(f, "-shmem base_addr = 0x%016llx\n-local mem base_addr = 0x%016llx\n", h.shmem_base, h.local_base);
  std::fprintf(f, "-nvbit version = hostlink-self-trace\n-accelsim tracer version = 4\n-enable lineinfo = 0\n");
  std::fprintf(f, "\n#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
                  "[adrrescompress?] [mem_addresses]\n\n");
  const int warps_per_cta = h.block / 32;
  size_t k = 0, n = recs.size();
  while (k < n) {
    const uint32_t cta = recs[order[k]].cta;
    size_t end = k;
    while (end < n && recs[order[end]].cta == cta) ++end;
    std::fprintf(f, "\n#BEGIN_TB\n\nthread block = %u,0,0\n", cta);
    size_t p = k;
    for (int w = 0; w < warps_per_cta; ++w) {
      size_t q = p;
      while (q < end && recs[order[q]].warp == static_cast<uint32_t>(w)) ++q;
      std::fprintf(f, "\nwarp = %d\ninsts = %llu\n", w, static_cast<unsigned long long>(q - p));
      for (size_t r = p; r < q; ++r) {
        const TraceRecord& rec = recs[order[r]];
        const bool weights = rec.kind == kLoadWeights;
        const int width = weights ? 4 : h.elem_bytes;
        std::fprintf(f, "%04x %08x 1 R4 %s 1 R2 %d 0", weights ? 0x90 : 0x80, rec.mask,
                     width == 8 ? "LDG.E.64" : "LDG.E", width);
        for (int l = 0; l < 32; ++l)
          if (rec.mask >> l & 1u) std::fprintf(f, " 0x%llx", static_cast<unsigned long long>(rec.addr[l]));
        std::fputc('\n', f);
      }
      p = q;
    }
    std::fprintf(f, "\n#END_TB\n");
    k = end;
  }
  return std::fclose(f) == 0;
}

struct TraceRegion {
  std::string name;
  uint64_t start, size_B;
  bool host;
};

inline bool write_kernelslist(const std::string& path, const std::vector<std::pair<uint64_t, uint64_t>>& memcpys,
                              const std::vector<std::string>& kernels) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  for (const auto& m : memcpys)
    std::fprintf(f, "MemcpyHtoD,0x%016llx,%llu\n", static_cast<unsigned long long>(m.first),
                 static_cast<unsigned long long>(m.second));
  for (const auto& k : kernels) std::fprintf(f, "%s\n", k.c_str());
  return std::fclose(f) == 0;
}

inline bool write_regions_json(const std::string& path, const std::vector<TraceRegion>& regions) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "{\"regions\": [\n");
  for (size_t i = 0; i < regions.size(); ++i) {
    const auto& r = regions[i];
    std::fprintf(f, " {\"name\": \"%s\", \"start\": %llu, \"size_B\": %llu, \"location\": \"%s\"}%s\n", r.name.c_str(),
                 static_cast<unsigned long long>(r.start), static_cast<unsigned long long>(r.size_B),
                 r.host ? "host" : "device", i + 1 < regions.size() ? "," : "");
  }
  std::fprintf(f, "]}\n");
  return std::fclose(f) == 0;
}

}  // namespace hl
