// The edge walk every traversal kernel shares: how the warps of one launch
// read the neighbour lists of the active vertices (gpu_kernels/KERNELS.md,
// "Launch geometry" and "Variants"; balanced in traversal/README.md).
//
// A walk kernel is `walk<Id, VARIANT, TRACE, AHEAD, Algo>`: Id is the neighbour id
// type (4 or 8 bytes), VARIANT one of the five variants, TRACE whether the
// launch only counts its edge-load instructions (kCount: no loads, no state
// changes), records them (kRecord: does the work and appends one record per
// load instruction) or neither (kNoTrace); AHEAD is the load-ahead depth
// (trips issued before their visits). Algo supplies, per vertex,
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

// The loads of one trip: lanes with pred load edges[i] (and weights[i]).
template <typename Id, int TRACE, class Algo>
__device__ __forceinline__ void issue(const GraphView<Id>& g, const TraceSink& t, bool pred, uint64_t i, Id& u,
                                      uint32_t& w) {
  trace_load<TRACE>(t, pred, g.edges + i, kLoadEdges);
  u = 0;
  if (TRACE != kCount && pred) u = g.edges[i];
  w = 0;
  if (Algo::kWeighted) {
    trace_load<TRACE>(t, pred, g.weights + i, kLoadWeights);
    if (TRACE != kCount && pred) w = g.weights[i];
  }
}

// The visits of one trip, after its loads.
template <typename Id, int TRACE, class Algo>
__device__ __forceinline__ void consume(const Algo& algo, bool pred, typename Algo::Value val, Id u, uint32_t w,
                                        unsigned& loaded) {
  if (TRACE != kCount && pred) {
    algo.visit(val, static_cast<uint64_t>(u), w);
    ++loaded;
  }
}

// One list [s, e) read by the whole warp in trips of 32 indices starting at
// `start` (s for merged, the 128 B boundary at or below s for
// merged_aligned): trip k covers start + 32k + lane and runs while
// start + 32k < e. Groups of AHEAD trips issue all their loads before the
// first visit.
template <typename Id, int TRACE, int AHEAD, class Algo>
__device__ __forceinline__ void walk_list(const GraphView<Id>& g, const Algo& algo, const TraceSink& t, uint64_t start,
                                          uint64_t s, uint64_t e, typename Algo::Value val, unsigned lane,
                                          unsigned& loaded) {
  for (uint64_t base = start; base < e; base += 32 * AHEAD) {
    Id u[AHEAD];
    uint32_t w[AHEAD];
    bool p[AHEAD];
#pragma unroll
    for (int d = 0; d < AHEAD; ++d) {
      const uint64_t i = base + 32 * d + lane;
      p[d] = i >= s && i < e;  // false in every lane once base + 32d >= e: no load, no record
      issue<Id, TRACE, Algo>(g, t, p[d], i, u[d], w[d]);
    }
#pragma unroll
    for (int d = 0; d < AHEAD; ++d) consume<Id, TRACE, Algo>(algo, p[d], val, u[d], w[d], loaded);
  }
}

// The next balanced window at or after `after` (a multiple of the alignment
// unit) holding an element of a live list; ~0 when none. Warp-wide.
__device__ __forceinline__ uint64_t next_window(bool live, uint64_t s, uint64_t e, uint64_t after, uint64_t A) {
  uint64_t cand = ~0ull;
  if (live && e > after) cand = s <= after ? after : s - s % A;
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) cand = min(cand, __shfl_xor_sync(kFull, cand, d));
  return cand;
}

// AHEAD: trips whose loads a warp issues before it uses the first of them
// (loads in flight per warp; see traversal/README.md). The order of the load
// instructions, and so the trace, does not depend on it.
template <typename Id, int VARIANT, int TRACE, int AHEAD, class Algo>
__global__ void __launch_bounds__(kBlock) walk(GraphView<Id> g, Algo algo, TraceSink trace,
                                               unsigned long long* edges_loaded) {
  using Value = typename Algo::Value;
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * kBlock + threadIdx.x;
  const uint64_t warp = tid / 32;
  const unsigned lane = threadIdx.x & 31;
  const uint64_t A = align_elems<Id>();
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
    for (uint32_t k = 0; k < trips; k += AHEAD) {
      Id u[AHEAD];
      uint32_t w[AHEAD];
      bool p[AHEAD];
#pragma unroll
      for (int d = 0; d < AHEAD; ++d) {
        p[d] = k + d < deg;
        issue<Id, TRACE, Algo>(g, trace, p[d], s + k + d, u[d], w[d]);
      }
#pragma unroll
      for (int d = 0; d < AHEAD; ++d) consume<Id, TRACE, Algo>(algo, p[d], val, u[d], w[d], loaded);
    }
  } else if (VARIANT == kMerged || VARIANT == kMergedAligned) {
    const uint64_t v = warp;
    if (v < g.V && algo.active(v)) {  // the same in every lane
      const uint64_t s = g.offsets[v], e = g.offsets[v + 1];
      const uint64_t start = VARIANT == kMerged ? s : s - s % A;
      walk_list<Id, TRACE, AHEAD, Algo>(g, algo, trace, start, s, e, algo.value(v), lane, loaded);
    }
  } else if (VARIANT == kChunked) {
    const uint64_t first = warp * kChunkVertices;
    for (int j = 0; j < kChunkVertices; ++j) {
      const uint64_t v = first + j;
      if (v < g.V && algo.active(v)) {
        const uint64_t s = g.offsets[v], e = g.offsets[v + 1];
        walk_list<Id, TRACE, AHEAD, Algo>(g, algo, trace, s - s % A, s, e, algo.value(v), lane, loaded);
      }
    }
  } else {  // kBalanced: see traversal/README.md
    const uint64_t first = warp * kChunkVertices;
    if (first < g.V) {
      const int nvert = static_cast<int>(g.V - first < kChunkVertices ? g.V - first : kChunkVertices);
      // lanes 0..nvert-1 hold one vertex each
      uint64_t my_s = 0, my_e = 0;
      bool my_live = false;
      Value my_val{};
      if (lane < static_cast<unsigned>(nvert)) {
        const uint64_t v = first + lane;
        my_s = g.offsets[v];
        my_e = g.offsets[v + 1];
        my_live = my_e > my_s && algo.active(v);
        if (my_live) my_val = algo.value(v);
      }
      const unsigned live = __ballot_sync(kFull, my_live);
      if (live) {
        // o[j] = start of vertex j's list (lanes past nvert are never used)
        uint64_t o[kChunkVertices];
#pragma unroll
        for (int j = 0; j < kChunkVertices; ++j) o[j] = __shfl_sync(kFull, my_s, j);
        const uint64_t last_end = __shfl_sync(kFull, my_e, nvert - 1);
        // the first window: the aligned start of the first live list
        uint64_t b = next_window(my_live, my_s, my_e, 0, A);
        while (b != ~0ull) {
          uint64_t bs[AHEAD];
          bs[0] = b;
#pragma unroll
          for (int d = 1; d < AHEAD; ++d) bs[d] = bs[d - 1] == ~0ull ? ~0ull : next_window(my_live, my_s, my_e, bs[d - 1] + 32, A);
          b = bs[AHEAD - 1] == ~0ull ? ~0ull : next_window(my_live, my_s, my_e, bs[AHEAD - 1] + 32, A);
          Id u[AHEAD];
          uint32_t w[AHEAD];
          bool p[AHEAD];
          Value vals[AHEAD];
#pragma unroll
          for (int d = 0; d < AHEAD; ++d) {
            const uint64_t i = bs[d] + lane;
            int owner = 0;  // the last vertex whose list starts at or before i
#pragma unroll
            for (int j = 1; j < kChunkVertices; ++j)
              if (j < nvert && o[j] <= i) owner = j;
            p[d] = bs[d] != ~0ull && i >= o[0] && i < last_end && ((live >> owner) & 1u);
            vals[d] = __shfl_sync(kFull, my_val, owner);
            issue<Id, TRACE, Algo>(g, trace, p[d], i, u[d], w[d]);
          }
#pragma unroll
          for (int d = 0; d < AHEAD; ++d) consume<Id, TRACE, Algo>(algo, p[d], vals[d], u[d], w[d], loaded);
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
