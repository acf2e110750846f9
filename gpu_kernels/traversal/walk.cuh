// The edge walk every traversal kernel shares: how the warps of one launch
// read the neighbour lists of the active vertices (gpu_kernels/KERNELS.md,
// "Launch geometry" and "Variants"; balanced in traversal/README.md).
//
// A walk kernel is `walk<Id, VARIANT, TRACE, Algo>`: Id is the neighbour id
// type (4 or 8 bytes), VARIANT one of the five variants, TRACE whether the
// launch only counts its edge-load instructions (kCount: no loads, no state
// changes), records them (kRecord: does the work and appends one record per
// load instruction) or neither (kNoTrace). Algo supplies, per vertex,
// active(v) and value(v), and per loaded neighbour visit(value, u, weight).
//
// Every loop over trips is uniform across the warp (its bounds are the same
// in all 32 lanes), so each trip is one warp-wide load instruction whose
// active lanes are the lanes with `pred` set; a trip with no lane set issues
// no load and records nothing.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "trace_format.hpp"

namespace hl {

enum Variant { kNaive = 0, kMerged = 1, kMergedAligned = 2, kChunked = 3, kBalanced = 4 };
enum TraceMode { kNoTrace = 0, kCount = 1, kRecord = 2 };

constexpr int kBlock = 256;        // threads per block, every kernel
constexpr int kChunkVertices = 8;  // vertices per warp for chunked and balanced
constexpr unsigned kFull = 0xffffffffu;

struct TraceSink {
  unsigned long long* counter = nullptr;  // records counted or appended
  TraceRecord* records = nullptr;
  unsigned long long capacity = 0;
};

template <int TRACE>
__device__ __forceinline__ void trace_load(const TraceSink& t, bool pred, const void* addr, uint32_t kind) {
  if (TRACE == kNoTrace) return;
  const unsigned mask = __ballot_sync(kFull, pred);
  if (mask == 0) return;
  const unsigned lane = threadIdx.x & 31;
  unsigned long long slot = 0;
  if (lane == 0) slot = atomicAdd(t.counter, 1ull);
  if (TRACE == kCount) return;
  slot = __shfl_sync(kFull, slot, 0);
  if (slot >= t.capacity) return;  // the host sees counter > capacity and fails
  TraceRecord& r = t.records[slot];
  r.addr[lane] = pred ? reinterpret_cast<uint64_t>(addr) : 0ull;
  if (lane == 0) {
    r.cta = blockIdx.x;
    r.warp = threadIdx.x / 32;
    r.mask = mask;
    r.kind = kind;
  }
}

template <typename Id>
struct GraphView {
  const uint64_t* offsets;  // device memory, V + 1
  const Id* edges;          // where the memory mode puts it
  const uint32_t* weights;  // same, or nullptr
  uint64_t V;
};

// Elements per 128 B line: the alignment unit of merged_aligned.
template <typename Id>
__host__ __device__ constexpr uint64_t align_elems() {
  return 128 / sizeof(Id);
}

template <typename Id, int TRACE, class Algo>
struct Trip {
  // One warp-wide trip: lanes with pred load edges[i] (and weights[i]) and visit.
  __device__ __forceinline__ static void run(const GraphView<Id>& g, const Algo& algo, const TraceSink& t, bool pred,
                                             uint64_t i, typename Algo::Value val, unsigned& loaded) {
    trace_load<TRACE>(t, pred, g.edges + i, kLoadEdges);
    Id u = 0;
    if (TRACE != kCount && pred) u = g.edges[i];
    uint32_t w = 0;
    if (Algo::kWeighted) {
      trace_load<TRACE>(t, pred, g.weights + i, kLoadWeights);
      if (TRACE != kCount && pred) w = g.weights[i];
    }
    if (TRACE != kCount && pred) {
      algo.visit(val, static_cast<uint64_t>(u), w);
      ++loaded;
    }
  }
};

// merged_aligned over one vertex's list [s, e), by the whole warp.
template <typename Id, int TRACE, class Algo>
__device__ __forceinline__ void walk_aligned(const GraphView<Id>& g, const Algo& algo, const TraceSink& t, uint64_t s,
                                             uint64_t e, typename Algo::Value val, unsigned lane, unsigned& loaded) {
  const uint64_t a = s - (s % align_elems<Id>());
  for (uint64_t base = a; base < e; base += 32) {
    const uint64_t i = base + lane;
    Trip<Id, TRACE, Algo>::run(g, algo, t, i >= s && i < e, i, val, loaded);
  }
}

template <typename Id, int VARIANT, int TRACE, class Algo>
__global__ void __launch_bounds__(kBlock) walk(GraphView<Id> g, Algo algo, TraceSink trace,
                                               unsigned long long* edges_loaded) {
  using Value = typename Algo::Value;
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * kBlock + threadIdx.x;
  const uint64_t warp = tid / 32;
  const unsigned lane = threadIdx.x & 31;
  unsigned loaded = 0;

  if (VARIANT == kNaive) {
    const uint64_t v = tid;
    const bool act = v < g.V && algo.active(v);
    uint64_t s = 0;
    uint32_t deg = 0;
    Value val{};
    if (act) {
      s = g.offsets[v];
      deg = static_cast<uint32_t>(g.offsets[v + 1] - s);
      val = algo.value(v);
    }
    const uint32_t trips = __reduce_max_sync(kFull, deg);
    for (uint32_t k = 0; k < trips; ++k) Trip<Id, TRACE, Algo>::run(g, algo, trace, k < deg, s + k, val, loaded);
  } else if (VARIANT == kMerged || VARIANT == kMergedAligned) {
    const uint64_t v = warp;
    if (v < g.V && algo.active(v)) {  // the same in every lane
      const uint64_t s = g.offsets[v], e = g.offsets[v + 1];
      const Value val = algo.value(v);
      if (VARIANT == kMerged) {
        for (uint64_t base = s; base < e; base += 32) {
          const uint64_t i = base + lane;
          Trip<Id, TRACE, Algo>::run(g, algo, trace, i < e, i, val, loaded);
        }
      } else {
        walk_aligned<Id, TRACE, Algo>(g, algo, trace, s, e, val, lane, loaded);
      }
    }
  } else if (VARIANT == kChunked) {
    const uint64_t first = warp * kChunkVertices;
    for (int j = 0; j < kChunkVertices; ++j) {
      const uint64_t v = first + j;
      if (v < g.V && algo.active(v)) {
        const uint64_t s = g.offsets[v], e = g.offsets[v + 1];
        walk_aligned<Id, TRACE, Algo>(g, algo, trace, s, e, algo.value(v), lane, loaded);
      }
    }
  } else {  // kBalanced: see traversal/README.md
    const uint64_t first = warp * kChunkVertices;
    if (first < g.V) {
      const int nvert = static_cast<int>(g.V - first < kChunkVertices ? g.V - first : kChunkVertices);
      // lanes 0..nvert-1 hold one vertex each
      uint64_t my_s = 0, my_e = 0;
      bool my_act = false;
      Value my_val{};
      if (lane < static_cast<unsigned>(nvert)) {
        const uint64_t v = first + lane;
        my_s = g.offsets[v];
        my_e = g.offsets[v + 1];
        my_act = my_e > my_s && algo.active(v);
        if (my_act) my_val = algo.value(v);
      }
      const unsigned amask = __ballot_sync(kFull, my_act);
      if (amask) {
        // o[j] = start of vertex j's list (lanes past nvert are never used)
        uint64_t o[kChunkVertices];
#pragma unroll
        for (int j = 0; j < kChunkVertices; ++j) o[j] = __shfl_sync(kFull, my_s, j);
        const uint64_t last_end = __shfl_sync(kFull, my_e, nvert - 1);
        const uint64_t A = align_elems<Id>();
        // the first window: the line-aligned start of the first active list
        uint64_t cand = my_act ? my_s - my_s % A : ~0ull;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) cand = min(cand, __shfl_xor_sync(kFull, cand, d));
        uint64_t b = cand;
        while (b != ~0ull) {
          const uint64_t i = b + lane;
          int owner = 0;  // the last vertex whose list starts at or before i
#pragma unroll
          for (int j = 1; j < kChunkVertices; ++j)
            if (j < nvert && o[j] <= i) owner = j;
          const bool pred = i >= o[0] && i < last_end && ((amask >> owner) & 1u);
          const Value val = __shfl_sync(kFull, my_val, owner);
          Trip<Id, TRACE, Algo>::run(g, algo, trace, pred, i, val, loaded);
          // next window: the first window at or after b + 32 that holds an
          // element of an active list
          const uint64_t after = b + 32;
          cand = ~0ull;
          if (my_act && my_e > after) cand = my_s <= after ? after : my_s - my_s % A;
#pragma unroll
          for (int d = 16; d > 0; d >>= 1) cand = min(cand, __shfl_xor_sync(kFull, cand, d));
          b = cand;
        }
      }
    }
  }

  if (TRACE != kCount) {
    const unsigned warp_loaded = __reduce_add_sync(kFull, loaded);
    if (lane == 0 && warp_loaded) atomicAdd(edges_loaded, static_cast<unsigned long long>(warp_loaded));
  }
}

// Threads of a launch for each variant (KERNELS.md "Launch geometry").
inline uint64_t walk_threads(int variant, uint64_t V) {
  switch (variant) {
    case kNaive: return V;
    case kMerged:
    case kMergedAligned: return 32 * V;
    default: return 32 * ((V + kChunkVertices - 1) / kChunkVertices);
  }
}

inline unsigned walk_grid(int variant, uint64_t V) {
  return static_cast<unsigned>((walk_threads(variant, V) + kBlock - 1) / kBlock);
}

}  // namespace hl
