// Zero-copy read kernels and the driver shared by zc_read and zc_warps.
//
// A buffer (in one memory mode, normally pinned host memory) is read by the
// SMs with one of three patterns; each lane loads `bytes_per_lane` (4, 8 or
// 16) bytes per load instruction, so one warp instruction covers
// blk = 32 * bytes_per_lane bytes (128, 256 or 512 B):
//
//   coalesced  warp w's j-th load covers block b = w + j*W (W warps in all),
//              i.e. bytes [offset + b*blk, offset + (b+1)*blk): the lanes of
//              a warp read one contiguous run. offset_B = 0 is 128 B aligned;
//              32, 64 and 96 make every warp straddle two 128 B lines.
//   strided    thread t reads its own chunk of chunk_B bytes, bytes_per_lane
//              at a time, chunks t, t+T, ...: one load instruction touches 32
//              places chunk_B apart (one 32 B sector each).
//   random     warp w's j-th load covers a block chosen by a hash of
//              (seed, w, j) among the region_B / blk blocks of the first
//              region_B bytes: random 128 B lines (for 4 B per lane) over
//              regions from KBs to GBs.
//   scatter    as random, but each lane draws its own word (bytes_per_lane
//              wide) among the region_B / bytes_per_lane words: one load
//              instruction touches up to 32 random lines (a gather of
//              neighbour labels; PageRank's scattered reductions with --op).
//
// `op` (default load) turns the accesses into writes, 4 B per lane: `store`
// writes the word, `red` adds 1 to it with an atomic whose result no thread
// uses (a RED instruction). Writes are not waited for: a warp issues its next
// one at once, so `unroll` has no meaning for them (only 1 is accepted).
// Measurement records carry "op" only when it is not a load.
//
// `unroll` loads are issued before their values are used (independent loads
// in flight per warp). Each measurement moves bytes_B = min(total_B,
// warps * max_per_warp_B) useful bytes, rounded down to whole blocks; the
// reported bandwidth is bytes_B over the kernel time (CUDA events). L2 is
// flushed before each timed repetition. Probe flags: --l2-flush 0 skips the
// flush, and --seed-step S draws repetition r's random lines with seed + (r + 1)
// S (fresh lines each time); records carry them when set.
#pragma once

#include <algorithm>
#include <cstdint>
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

namespace zc {

enum Pattern { kCoalesced = 0, kStrided = 1, kRandom = 2, kScatter = 3 };
enum Op { kLoad = 0, kStore = 1, kRed = 2 };
enum Cache { kDefault = 0, kCg = 1, kCv = 2, kNc = 3 };

using hl::mix64;

template <int BPL>
struct Word;
template <>
struct Word<4> {
  using T = unsigned int;
  __device__ static unsigned fold(T v) { return v; }
};
template <>
struct Word<8> {
  using T = uint2;
  __device__ static unsigned fold(T v) { return v.x ^ v.y; }
};
template <>
struct Word<16> {
  using T = uint4;
  __device__ static unsigned fold(T v) { return v.x ^ v.y ^ v.z ^ v.w; }
};

template <int BPL, int CACHE>
__device__ __forceinline__ typename Word<BPL>::T load(const char* p) {
  using T = typename Word<BPL>::T;
  const T* q = reinterpret_cast<const T*>(p);
  if (CACHE == kCg) return __ldcg(q);
  if (CACHE == kCv) return __ldcv(q);
  if (CACHE == kNc) return __ldg(q);   // ld.global.nc: the read-only data path
  return *q;
}

struct Launch {
  const char* buf;
  uint64_t offset_B;
  uint64_t nblocks;    // coalesced/random: blocks to read in all; strided: chunks
  uint64_t chunk_B;    // strided
  uint64_t region_blocks;  // random
  uint64_t seed;
  unsigned* sink;
};

// One thread per lane; warps are numbered over the whole grid.
template <int BPL, int CACHE, int UNROLL, int PATTERN>
__global__ void read_kernel(Launch L) {
  using W = Word<BPL>;
  const uint64_t blk = 32ull * BPL;
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t nthreads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t warp = tid / 32, nwarps = nthreads / 32;
  const unsigned lane = threadIdx.x % 32;
  unsigned acc = 0;
  if (PATTERN == kCoalesced) {
    const char* base = L.buf + L.offset_B + lane * BPL;
    for (uint64_t b = warp; b < L.nblocks; b += nwarps * UNROLL) {
      typename W::T v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        uint64_t bb = b + u * nwarps;
        if (bb < L.nblocks) v[u] = load<BPL, CACHE>(base + bb * blk);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (b + u * nwarps < L.nblocks) acc += W::fold(v[u]);
    }
  } else if (PATTERN == kStrided) {
    const uint64_t per_chunk = L.chunk_B / BPL;
    for (uint64_t c = tid; c < L.nblocks; c += nthreads) {
      const char* base = L.buf + c * L.chunk_B;
      for (uint64_t j = 0; j < per_chunk; j += UNROLL) {
        typename W::T v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
          if (j + u < per_chunk) v[u] = load<BPL, CACHE>(base + (j + u) * BPL);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
          if (j + u < per_chunk) acc += W::fold(v[u]);
      }
    }
  } else if (PATTERN == kScatter) {
    const uint64_t per_warp = (L.nblocks + nwarps - 1) / nwarps;
    const uint64_t first = warp * per_warp;
    const uint64_t last = min(L.nblocks, first + per_warp);
    const uint64_t words = L.region_blocks * 32;
    for (uint64_t j = first; j < last; j += UNROLL) {
      typename W::T v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (j + u < last) {
          uint64_t word = mix64(L.seed ^ mix64((j + u) * 32 + lane)) % words;
          v[u] = load<BPL, CACHE>(L.buf + word * BPL);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (j + u < last) acc += W::fold(v[u]);
    }
  } else {  // random
    const uint64_t per_warp = (L.nblocks + nwarps - 1) / nwarps;
    const uint64_t first = warp * per_warp;
    const uint64_t last = min(L.nblocks, first + per_warp);
    for (uint64_t j = first; j < last; j += UNROLL) {
      typename W::T v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (j + u < last) {
          uint64_t line = mix64(L.seed ^ mix64(j + u)) % L.region_blocks;
          v[u] = load<BPL, CACHE>(L.buf + line * blk + lane * BPL);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (j + u < last) acc += W::fold(v[u]);
    }
  }
  if (acc == 0x9e3779b9u) L.sink[0] = acc;  // keeps the loads; never true for the fill pattern
}

// The same patterns written, 4 B per lane, one write at a time per thread (the
// addresses of read_kernel<4, *, 1, PATTERN>). A store writes the step's index;
// nothing reads the words back.
template <int OP>
__device__ __forceinline__ void write_word(const char* p, unsigned v) {
  unsigned* q = reinterpret_cast<unsigned*>(const_cast<char*>(p));
  if (OP == kRed)
    atomicAdd(q, 1u);  // result unused: compiled to REDG.E.ADD (sm_90)
  else
    *q = v;
}

template <int OP, int PATTERN>
__global__ void write_kernel(Launch L) {
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t nthreads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t warp = tid / 32, nwarps = nthreads / 32;
  const unsigned lane = threadIdx.x % 32;
  if (PATTERN == kCoalesced) {
    const char* base = L.buf + L.offset_B + lane * 4;
    for (uint64_t b = warp; b < L.nblocks; b += nwarps) write_word<OP>(base + b * 128, static_cast<unsigned>(b));
  } else if (PATTERN == kStrided) {
    const uint64_t per_chunk = L.chunk_B / 4;
    for (uint64_t c = tid; c < L.nblocks; c += nthreads)
      for (uint64_t j = 0; j < per_chunk; ++j) write_word<OP>(L.buf + c * L.chunk_B + j * 4, static_cast<unsigned>(j));
  } else {
    const uint64_t per_warp = (L.nblocks + nwarps - 1) / nwarps;
    const uint64_t first = warp * per_warp;
    const uint64_t last = min(L.nblocks, first + per_warp);
    for (uint64_t j = first; j < last; ++j) {
      if (PATTERN == kScatter) {
        uint64_t word = mix64(L.seed ^ mix64(j * 32 + lane)) % (L.region_blocks * 32);
        write_word<OP>(L.buf + word * 4, static_cast<unsigned>(j));
      } else {
        uint64_t line = mix64(L.seed ^ mix64(j)) % L.region_blocks;
        write_word<OP>(L.buf + line * 128 + lane * 4, static_cast<unsigned>(j));
      }
    }
  }
}

using KernelFn = void (*)(Launch);

template <int BPL, int CACHE, int UNROLL>
KernelFn pick_pattern(int pattern) {
  switch (pattern) {
    case kCoalesced: return read_kernel<BPL, CACHE, UNROLL, kCoalesced>;
    case kStrided: return read_kernel<BPL, CACHE, UNROLL, kStrided>;
    case kScatter: return read_kernel<BPL, CACHE, UNROLL, kScatter>;
    default: return read_kernel<BPL, CACHE, UNROLL, kRandom>;
  }
}
template <int OP>
KernelFn pick_write_pattern(int pattern) {
  switch (pattern) {
    case kCoalesced: return write_kernel<OP, kCoalesced>;
    case kStrided: return write_kernel<OP, kStrided>;
    case kScatter: return write_kernel<OP, kScatter>;
    default: return write_kernel<OP, kRandom>;
  }
}
template <int BPL, int CACHE>
KernelFn pick_unroll(int unroll, int pattern) {
  switch (unroll) {
    case 1: return pick_pattern<BPL, CACHE, 1>(pattern);
    case 2: return pick_pattern<BPL, CACHE, 2>(pattern);
    case 4: return pick_pattern<BPL, CACHE, 4>(pattern);
    default: return pick_pattern<BPL, CACHE, 8>(pattern);
  }
}
template <int BPL>
KernelFn pick_cache(int cache, int unroll, int pattern) {
  switch (cache) {
    case kDefault: return pick_unroll<BPL, kDefault>(unroll, pattern);
    case kCg: return pick_unroll<BPL, kCg>(unroll, pattern);
    case kNc: return pick_unroll<BPL, kNc>(unroll, pattern);
    default: return pick_unroll<BPL, kCv>(unroll, pattern);
  }
}
inline KernelFn pick(int bpl, int cache, int unroll, int pattern, int op) {
  if (op == kStore) return pick_write_pattern<kStore>(pattern);
  if (op == kRed) return pick_write_pattern<kRed>(pattern);
  switch (bpl) {
    case 4: return pick_cache<4>(cache, unroll, pattern);
    case 8: return pick_cache<8>(cache, unroll, pattern);
    default: return pick_cache<16>(cache, unroll, pattern);
  }
}

// Warps per block for a launch of exactly `warps` warps: the largest of
// 8, 4, 2, 1 that divides it and still gives one block per SM or more.
inline int warps_per_block(uint64_t warps, int sm_count) {
  for (int w : {8, 4, 2, 1})
    if (warps % w == 0 && warps / w >= std::min<uint64_t>(warps, sm_count)) return w;
  return 1;
}

struct Defaults {
  const char* pattern;
  const char* warps;
  const char* unroll;
  const char* total_B;
  const char* max_per_warp_B;
};

inline int run(int argc, char** argv, const char* name, const char* summary, const Defaults& def) {
  hl::Args args(name, summary);
  args.flag("pattern", def.pattern, "access patterns: coalesced, strided, random, scatter (list)");
  args.flag("offset-B", "0", "coalesced: start offset from a 128 B boundary (list)");
  args.flag("chunk-B", "4096", "strided: bytes per thread chunk (list)");
  args.flag("region-B", "1GiB", "random, scatter: region the random blocks (words) are drawn from (list)");
  args.flag("op", "load", "what each lane does to its word: load, store, red (4 B atomic add, result unused) (list)");
  args.flag("bytes-per-lane", "4", "bytes each lane loads per instruction: 4, 8, 16 (list)");
  args.flag("memory-mode", "zerocopy", "where the buffer lives: zerocopy, registered, uvm_accessedby, device (list)");
  args.flag("warps", def.warps, "warps in the grid, 0 = as many as fit on the GPU at once (list)");
  args.flag("unroll", def.unroll, "independent loads in flight per thread: 1, 2, 4, 8 (list)");
  args.flag("cache", "default", "load cache operator: default, cg, cv, nc (the read-only path, ld.global.nc) (list)");
  args.flag("total-B", def.total_B, "useful bytes each measurement reads at most");
  args.flag("max-per-warp-B", def.max_per_warp_B, "useful bytes one warp reads at most per measurement");
  args.flag("warps-per-block", "0", "warps per block: 1 to 32; 0 = the largest of 8, 4, 2, 1 that spreads the blocks over every SM (a block larger than its share of warps puts the warps on fewer SMs)");
  args.flag("reps", "5", "timed repetitions per point");
  args.flag("seed", "1", "seed of the random pattern");
  args.flag("l2-flush", "1", "probe: 0 skips the L2 flush before each timed repetition");
  args.flag("seed-step", "0", "probe: repetition r draws with seed + (r + 1) x step (the warm-up with seed): fresh lines each time");
  args.flag("device", "0", "CUDA device ordinal");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto patterns = args.choices("pattern", {"coalesced", "strided", "random", "scatter"});
  auto ops = args.choices("op", {"load", "store", "red"});
  auto offsets = args.sizes("offset-B");
  auto chunks = args.sizes("chunk-B");
  auto regions = args.sizes("region-B");
  auto bpls = args.integers("bytes-per-lane");
  auto modes = args.choices("memory-mode", {"zerocopy", "registered", "uvm_accessedby", "device"});
  auto warps_list = args.integers("warps");
  auto unrolls = args.integers("unroll");
  auto caches = args.choices("cache", {"default", "cg", "cv", "nc"});
  uint64_t total_B = args.size("total-B");
  uint64_t max_per_warp_B = args.size("max-per-warp-B");
  int reps = static_cast<int>(args.integer("reps"));
  const long long wpb_req = args.integer("warps-per-block");
  if (wpb_req < 0 || wpb_req > 32) hl::fail(hl::kExitUsage, "usage", "--warps-per-block: %lld is not 0 (auto) or 1 to 32", wpb_req);
  uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  const long long l2_flush = args.integer("l2-flush"), seed_step = args.integer("seed-step");
  if (l2_flush != 0 && l2_flush != 1) hl::fail(hl::kExitUsage, "usage", "--l2-flush: 0 or 1");
  if (seed_step < 0) hl::fail(hl::kExitUsage, "usage", "--seed-step must be >= 0");
  for (auto b : bpls)
    if (b != 4 && b != 8 && b != 16) hl::fail(hl::kExitUsage, "usage", "--bytes-per-lane: %lld is not 4, 8 or 16", (long long)b);
  for (auto u : unrolls)
    if (u != 1 && u != 2 && u != 4 && u != 8) hl::fail(hl::kExitUsage, "usage", "--unroll: %lld is not 1, 2, 4 or 8", (long long)u);
  for (auto o : offsets)
    if (o % 16 || o >= 4096) hl::fail(hl::kExitUsage, "usage", "--offset-B: %llu must be a multiple of 16 below 4096", (unsigned long long)o);
  for (auto w : warps_list)
    if (w < 0) hl::fail(hl::kExitUsage, "usage", "--warps must be >= 0");
  for (auto c : chunks)
    if (c == 0 || c % 16) hl::fail(hl::kExitUsage, "usage", "--chunk-B: %llu must be a positive multiple of 16", (unsigned long long)c);
  for (auto r : regions)
    if (r < 512) hl::fail(hl::kExitUsage, "usage", "--region-B: %llu is below one 512 B block", (unsigned long long)r);
  for (const auto& o : ops)
    if (o != "load") {
      for (auto b : bpls)
        if (b != 4) hl::fail(hl::kExitUsage, "usage", "--op %s: writes are 4 B per lane, not --bytes-per-lane %lld", o.c_str(), (long long)b);
      for (auto u : unrolls)
        if (u != 1) hl::fail(hl::kExitUsage, "usage", "--op %s: writes are not waited for, so --unroll must be 1, not %lld", o.c_str(), (long long)u);
      for (const auto& c : caches)
        if (c != "default") hl::fail(hl::kExitUsage, "usage", "--op %s: --cache is a load's operator; writes take only default, not %s", o.c_str(), c.c_str());
    }
  if (reps < 1 || total_B < 512 || max_per_warp_B < 512) hl::fail(hl::kExitUsage, "usage", "--reps >= 1, --total-B and --max-per-warp-B >= 512 B");

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::HostBinding bound = hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  bool gated = false;
  hl::L2Flusher flusher(dev);

  // One buffer per memory mode, large enough for every point.
  uint64_t need = total_B + 4096;
  for (const auto& p : patterns)
    if (p == "random" || p == "scatter")
      for (auto r : regions) need = std::max(need, r);
  need = hl::round_up(need, 4096);

  unsigned* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer timer;

  for (const auto& mode_name : modes) {
    hl::MemMode mode = hl::parse_mem_mode(mode_name);
    hl::Buffer buf = hl::alloc_buffer(mode, need, dev.device);
    {
      std::vector<unsigned> fill(1 << 20);
      for (size_t i = 0; i < fill.size(); ++i) fill[i] = static_cast<unsigned>(zc::mix64(i) | 1u) & 0x7fffffffu;
      std::vector<char> staging;
      for (uint64_t off = 0; off < need; off += fill.size() * 4) {
        uint64_t n = std::min<uint64_t>(fill.size() * 4, need - off);
        if (mode == hl::MemMode::Device)
          CUDA_CHECK(cudaMemcpy(static_cast<char*>(buf.dev) + off, fill.data(), n, cudaMemcpyHostToDevice));
        else
          std::memcpy(static_cast<char*>(buf.host) + off, fill.data(), n);
      }
      hl::apply_advice(buf);
    }
    hl::print_buffer_node(mode_name.c_str(), buf.host, bound.node);
    if (!gated) {  // timed work starts with the first mode's buffer filled
      hl::start_gate(args, dev.device);
      gated = true;
    }
    for (const auto& pname : patterns) {
      int pattern = pname == "coalesced" ? kCoalesced : pname == "strided" ? kStrided
                  : pname == "random" ? kRandom : kScatter;
      const std::vector<uint64_t>& knob = pattern == kCoalesced ? offsets : pattern == kStrided ? chunks : regions;
      for (uint64_t k : knob)
        for (auto bpl : bpls)
          for (auto w_req : warps_list)
            for (auto unroll : unrolls)
              for (const auto& cname : caches)
                for (const auto& oname : ops) {
                  int cache = cname == "default" ? kDefault : cname == "cg" ? kCg : cname == "nc" ? kNc : kCv;
                  int op = oname == "load" ? kLoad : oname == "store" ? kStore : kRed;
                  KernelFn fn = pick(static_cast<int>(bpl), cache, static_cast<int>(unroll), pattern, op);
                  int occ_blocks = 0;
                  uint64_t warps = static_cast<uint64_t>(w_req);
                  if (warps == 0) {
                    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_blocks, fn, 256, 0));
                    warps = static_cast<uint64_t>(occ_blocks) * dev.sm_count * 8;
                  }
                  int wpb = wpb_req ? static_cast<int>(wpb_req) : warps_per_block(warps, dev.sm_count);
                  if (warps % wpb) hl::fail(hl::kExitUsage, "usage", "--warps %llu is not a multiple of --warps-per-block %d", (unsigned long long)warps, wpb);
                  uint64_t grid = warps / wpb;
                  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_blocks, fn, wpb * 32, 0));
                  uint64_t resident = std::min<uint64_t>(grid, static_cast<uint64_t>(occ_blocks) * dev.sm_count) * wpb;
                  uint64_t blk = 32ull * bpl;
                  uint64_t bytes = std::min<uint64_t>(total_B, warps * max_per_warp_B);
                  Launch L{};
                  L.buf = static_cast<const char*>(buf.dev);
                  L.sink = sink;
                  L.seed = seed;
                  if (pattern == kCoalesced) {
                    L.offset_B = k;
                    L.nblocks = bytes / blk;
                    bytes = L.nblocks * blk;
                  } else if (pattern == kStrided) {
                    if (k > total_B) hl::fail(hl::kExitUsage, "usage", "--chunk-B %llu exceeds --total-B", (unsigned long long)k);
                    if (k % bpl) hl::fail(hl::kExitUsage, "usage", "--chunk-B %llu is not a multiple of %lld", (unsigned long long)k, (long long)bpl);
                    L.chunk_B = k;
                    L.nblocks = std::max<uint64_t>(1, bytes / k);
                    bytes = L.nblocks * k;
                  } else {
                    L.region_blocks = std::max<uint64_t>(1, k / blk);
                    L.nblocks = bytes / blk;
                    bytes = L.nblocks * blk;
                  }
                  fn<<<static_cast<unsigned>(grid), wpb * 32, 0, stream>>>(L);  // warm-up
                  LAUNCH_CHECK("read_kernel");
                  CUDA_CHECK(cudaStreamSynchronize(stream));
                  for (int rep = 0; rep < reps; ++rep) {
                    L.seed = seed + static_cast<uint64_t>(rep + 1) * static_cast<uint64_t>(seed_step);
                    if (l2_flush) flusher.flush(stream);
                    timer.start(stream);
                    fn<<<static_cast<unsigned>(grid), wpb * 32, 0, stream>>>(L);
                    LAUNCH_CHECK("read_kernel");
                    timer.stop(stream);
                    double ms = timer.ms();
                    hl::Json j;
                    j.str("type", "measurement").str("benchmark", name);
                    j.begin("params").str("pattern", pname);
                    if (pattern == kCoalesced) j.uinteger("offset_B", k);
                    if (pattern == kStrided) j.uinteger("chunk_B", k);
                    if (pattern == kRandom || pattern == kScatter) j.uinteger("region_B", k);
                    j.integer("bytes_per_lane", bpl)
                        .str("memory_mode", mode_name)
                        .integer("warps", w_req)
                        .integer("unroll", unroll)
                        .str("cache", cname);
                    if (op != kLoad) j.str("op", oname);
                    if (!l2_flush) j.integer("l2_flush", 0);
                    if (seed_step) j.integer("seed_step", seed_step);
                    j.end();
                    j.integer("rep", rep);
                    j.begin("metrics")
                        .num("time_ms", ms)
                        .num("bw_GBps", bytes / (ms * 1e-3) / 1e9)
                        .uinteger("bytes_B", bytes)
                        .uinteger("warps_launched", warps)
                        .uinteger("warps_resident", resident)
                        .integer("warps_per_block", wpb)
                        .end();
                    j.print();
                  }
                }
    }
    hl::free_buffer(buf);
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(sink));
  hl::print_done(name);
  return 0;
}

}  // namespace zc
