// EMOGI binary CSR graphs (see gpu_kernels/KERNELS.md, "Data").
//
// PREFIX.bel.col: u64 offsets[V+1]; PREFIX.bel.dst: u64 neighbour ids[E];
// PREFIX.bel.val: u32 weights[E]. Each file starts with a 16 B header: u64
// element count, u64 unused. The loader checks the counts against the file
// sizes, offsets[0] = 0, non-decreasing offsets, offsets[V] = E and every
// neighbour id < V; any violation exits with status 2 and names the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/check.cuh"

namespace hl {

struct HostGraph {
  std::string prefix;
  uint64_t V = 0, E = 0;
  std::vector<uint64_t> offsets;  // V + 1
  std::vector<uint64_t> edges;    // E
  std::vector<uint32_t> weights;  // E, or empty when not loaded
  uint64_t degree(uint64_t v) const { return offsets[v + 1] - offsets[v]; }
};

template <typename T>
std::vector<T> read_bel(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(kExitUsage, "input", "%s: cannot open", path.c_str());
  uint64_t header[2];
  if (std::fread(header, sizeof(uint64_t), 2, f) != 2) {
    std::fclose(f);
    fail(kExitUsage, "input", "%s: shorter than its 16-byte header", path.c_str());
  }
  std::fseek(f, 0, SEEK_END);
  long long size = std::ftell(f);
  std::fseek(f, 16, SEEK_SET);
  uint64_t count = header[0];
  if (static_cast<unsigned long long>(size - 16) != count * sizeof(T)) {
    std::fclose(f);
    fail(kExitUsage, "input", "%s: header says %llu elements of %zu B but the file holds %lld bytes after the header",
         path.c_str(), (unsigned long long)count, sizeof(T), size - 16);
  }
  std::vector<T> out(count);
  size_t got = count ? std::fread(out.data(), sizeof(T), count, f) : 0;
  std::fclose(f);
  if (got != count) fail(kExitUsage, "input", "%s: read %zu of %llu elements", path.c_str(), got, (unsigned long long)count);
  return out;
}

inline HostGraph load_graph(const std::string& prefix, bool with_weights) {
  HostGraph g;
  g.prefix = prefix;
  std::string col = prefix + ".bel.col", dst = prefix + ".bel.dst", val = prefix + ".bel.val";
  g.offsets = read_bel<uint64_t>(col);
  if (g.offsets.size() < 2) fail(kExitUsage, "input", "%s: needs at least 2 offsets (one vertex)", col.c_str());
  g.V = g.offsets.size() - 1;
  g.edges = read_bel<uint64_t>(dst);
  g.E = g.edges.size();
  if (g.offsets[0] != 0) fail(kExitUsage, "input", "%s: offsets[0] is %llu, not 0", col.c_str(), (unsigned long long)g.offsets[0]);
  for (uint64_t v = 0; v < g.V; ++v)
    if (g.offsets[v + 1] < g.offsets[v])
      fail(kExitUsage, "input", "%s: offsets decrease at vertex %llu", col.c_str(), (unsigned long long)v);
  if (g.offsets[g.V] != g.E)
    fail(kExitUsage, "input", "%s: offsets end at %llu but %s holds %llu edges", col.c_str(),
         (unsigned long long)g.offsets[g.V], dst.c_str(), (unsigned long long)g.E);
  for (uint64_t i = 0; i < g.E; ++i)
    if (g.edges[i] >= g.V)
      fail(kExitUsage, "input", "%s: edge %llu names vertex %llu, beyond V = %llu", dst.c_str(), (unsigned long long)i,
           (unsigned long long)g.edges[i], (unsigned long long)g.V);
  if (with_weights) {
    g.weights = read_bel<uint32_t>(val);
    if (g.weights.size() != g.E)
      fail(kExitUsage, "input", "%s: %zu weights for %llu edges", val.c_str(), g.weights.size(), (unsigned long long)g.E);
  }
  return g;
}

}  // namespace hl
