// CPU references the traversal results are checked against
// (gpu_kernels/KERNELS.md, "Results checked on every run").
//   BFS       depths by a level-synchronous queue (INF = 0xFFFFFFFF)
//   SSSP      Dijkstra with a bucket queue (Dial's algorithm): exact for the
//             integer weights; buckets are indexed by distance mod
//             (max weight + 1), the usual circular layout
//   CC        union-find (union by smaller root id, path halving); each
//             vertex's label is the smallest vertex id in its component,
//             treating every edge as undirected
//   PageRank  the push formulation of KERNELS.md in float64
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "graph.hpp"

namespace hl {

constexpr uint32_t kInf = 0xFFFFFFFFu;

inline std::vector<uint32_t> bfs_reference(const HostGraph& g, uint64_t source) {
  std::vector<uint32_t> depth(g.V, kInf);
  std::vector<uint64_t> frontier{source}, next;
  depth[source] = 0;
  uint32_t level = 0;
  while (!frontier.empty()) {
    next.clear();
    for (uint64_t v : frontier)
      for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
        uint64_t u = g.edges[i];
        if (depth[u] == kInf) {
          depth[u] = level + 1;
          next.push_back(u);
        }
      }
    frontier.swap(next);
    ++level;
  }
  return depth;
}

inline std::vector<uint32_t> sssp_reference(const HostGraph& g, uint64_t source) {
  uint32_t max_w = 0;
  for (uint32_t w : g.weights) max_w = std::max(max_w, w);
  const uint64_t nb = static_cast<uint64_t>(max_w) + 1;
  std::vector<uint32_t> dist(g.V, kInf);
  std::vector<std::vector<uint32_t>> buckets(nb);  // vertex ids < 2^32 (checked by the caller)
  dist[source] = 0;
  buckets[0].push_back(static_cast<uint32_t>(source));
  uint64_t pending = 1;
  for (uint64_t d = 0; pending > 0; ++d) {
    auto& bucket = buckets[d % nb];
    // entries may be appended to this bucket while it is scanned (weight 0)
    for (size_t k = 0; k < bucket.size(); ++k) {
      uint32_t v = bucket[k];
      --pending;
      if (dist[v] != d) continue;  // stale entry
      for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
        uint64_t u = g.edges[i];
        uint64_t nd = d + g.weights[i];
        if (nd < dist[u]) {
          dist[u] = static_cast<uint32_t>(nd);
          buckets[nd % nb].push_back(static_cast<uint32_t>(u));
          ++pending;
        }
      }
    }
    bucket.clear();
  }
  return dist;
}

inline std::vector<uint32_t> cc_reference(const HostGraph& g) {
  std::vector<uint64_t> parent(g.V);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](uint64_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };
  for (uint64_t v = 0; v < g.V; ++v)
    for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      uint64_t a = find(v), b = find(g.edges[i]);
      if (a == b) continue;
      if (a < b)
        parent[b] = a;
      else
        parent[a] = b;
    }
  std::vector<uint32_t> comp(g.V);
  for (uint64_t v = 0; v < g.V; ++v) comp[v] = static_cast<uint32_t>(find(v));
  return comp;
}

inline std::vector<double> pagerank_reference(const HostGraph& g, int iterations, double damping = 0.85) {
  const double V = static_cast<double>(g.V);
  std::vector<double> rank(g.V, 1.0 / V), next(g.V);
  for (int it = 0; it < iterations; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    for (uint64_t v = 0; v < g.V; ++v) {
      uint64_t deg = g.degree(v);
      if (!deg) continue;
      double c = damping * rank[v] / static_cast<double>(deg);
      for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) next[g.edges[i]] += c;
    }
    for (uint64_t v = 0; v < g.V; ++v) rank[v] = (1.0 - damping) / V + next[v];
  }
  return rank;
}

}  // namespace hl
