// gather: a GNN's feature gather, M rows of F bytes from a table of N rows,
// in every memory mode, plus the CPU-gather-plus-copy baseline.
//
// The kernel (the emulator's twin: hostlink.traces.gather): warp w of W copies
// rows w, w + W, ... of the id list into a device buffer; each lane moves
// lane_B (4, 8 or 16) bytes per load, so one warp load covers 32 * lane_B
// bytes, and a warp issues UNROLL = 4 loads before it stores them.
//   naive    the warp starts at the row's first byte
//   aligned  the warp starts at the 128 B line at or below the row's start and
//            masks the lanes outside the row (the "circular shift" of Min's
//            dissertation, 2022, ch. 3.3.2, Listing 3.2)
// Row ids: uniform  row i = mix64(seed << 32 | i) mod N (splitmix64)
//          sampled  vertex ids of neighbour sampling read from --ids-file
//                   (u64 count V, u64 count n, then n u64 ids; written by the
//                   harness, hostlink.validation.gather_ids), row = v * (N / V)
// Memory modes: device, zerocopy, registered, uvm_accessedby, uvm (first touch:
// the table's pages go back to the host before every rep), uvm_warm (managed,
// one untimed pass first), cpu_gather (a malloc'd table: --threads host threads
// memcpy the rows into a pinned staging buffer, then one cudaMemcpy).
//
// The table's 4 B word k holds (uint32) mix64(k ^ kTableSalt)
// (common/table_words.cuh). Every rep checks the
// output against the table: the sum of the output's words (a GPU reduction)
// must equal the sum the CPU computes from the ids (check_pass). Reported:
// time_ms (kernel, or gather + copy), bw_GBps (M * F bytes over it); cpu_gather
// adds gather_ms and copy_ms. The table is allocated once per (mode, table_B);
// the L2 is flushed before each timed kernel (every rep gathers the same rows).
// Points whose rows are not a multiple of lane_B (a lane's load must be aligned)
// or whose table holds fewer rows than the sampled graph has vertices are skipped.
//
// Probe flags (validation/experiments/gather_walks/): --store fold keeps the rows
// in registers instead of writing the output (each thread adds its words and one
// atomic per thread totals them; the total is checked against the ids' sum), and
// --id-source hash computes uniform ids in the kernel instead of loading them,
// and --load ca reads the table with ld.global.ca instead of the read-only path
// (ld.global.nc, which the const __restrict__ table gives gather_kernel).
// Either runs a separate kernel (gather_probe_kernel); the records then carry
// "store" and "id_source" among their params. The defaults run gather_kernel.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/memory.cuh"
#include "../common/numa.hpp"
#include "../common/table_words.cuh"

namespace {

constexpr int kUnroll = 4;
constexpr int kThreadsPerCta = 256;
using hl::mix64;
using hl::word_of;

template <int BPL> struct Vec;
template <> struct Vec<4> { using T = unsigned int; };
template <> struct Vec<8> { using T = uint2; };
template <> struct Vec<16> { using T = uint4; };

template <int BPL, bool ALIGNED>
__global__ void gather_kernel(const char* __restrict__ table, char* __restrict__ out,
                              const uint64_t* __restrict__ ids, uint64_t rows, uint64_t row_B) {
  using T = typename Vec<BPL>::T;
  constexpr uint64_t blk = 32 * BPL;
  const uint64_t lane = threadIdx.x & 31;
  const uint64_t warps = (static_cast<uint64_t>(gridDim.x) * blockDim.x) >> 5;
  for (uint64_t i = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < rows;
       i += warps) {
    const uint64_t src = ids[i] * row_B, end = src + row_B, dst = i * row_B;
    const uint64_t start = ALIGNED ? (src & ~127ULL) : src;
    for (uint64_t base = start; base < end; base += kUnroll * blk) {
      T v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint64_t a = base + u * blk + lane * BPL;
        if (a >= src && a < end) v[u] = *reinterpret_cast<const T*>(table + a);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint64_t a = base + u * blk + lane * BPL;
        if (a >= src && a < end) *reinterpret_cast<T*>(out + dst + (a - src)) = v[u];
      }
    }
  }
}

template <int BPL> __device__ __forceinline__ unsigned long long fold(typename Vec<BPL>::T v);
template <> __device__ __forceinline__ unsigned long long fold<4>(unsigned int v) { return v; }
template <> __device__ __forceinline__ unsigned long long fold<8>(uint2 v) {
  return static_cast<unsigned long long>(v.x) + v.y;
}
template <> __device__ __forceinline__ unsigned long long fold<16>(uint4 v) {
  return static_cast<unsigned long long>(v.x) + v.y + v.z + v.w;
}

// gather_kernel's loads with its stores or its id loads taken out (the probe flags):
// STORE false folds the loaded words into a per-thread sum (one atomic per thread at
// the end); HASH true computes row i's id as mix64(seed << 32 | i) % n_rows; CA true
// loads the table with ld.global.ca (else ld.global.nc, as gather_kernel). It repeats
// gather_kernel's loop on purpose: the measured kernel's code stays as it was.
template <int BPL, bool ALIGNED, bool STORE, bool HASH, bool CA>
__global__ void gather_probe_kernel(const char* __restrict__ table, char* __restrict__ out,
                                    const uint64_t* __restrict__ ids, uint64_t rows, uint64_t row_B,
                                    uint64_t seed, uint64_t n_rows, unsigned long long* total) {
  using T = typename Vec<BPL>::T;
  constexpr uint64_t blk = 32 * BPL;
  const uint64_t lane = threadIdx.x & 31;
  const uint64_t warps = (static_cast<uint64_t>(gridDim.x) * blockDim.x) >> 5;
  unsigned long long acc = 0;
  for (uint64_t i = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < rows;
       i += warps) {
    const uint64_t id = HASH ? mix64((seed << 32) | i) % n_rows : ids[i];
    const uint64_t src = id * row_B, end = src + row_B, dst = i * row_B;
    const uint64_t start = ALIGNED ? (src & ~127ULL) : src;
    for (uint64_t base = start; base < end; base += kUnroll * blk) {
      T v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint64_t a = base + u * blk + lane * BPL;
        if (a >= src && a < end)
          v[u] = CA ? __ldca(reinterpret_cast<const T*>(table + a)) : *reinterpret_cast<const T*>(table + a);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint64_t a = base + u * blk + lane * BPL;
        if (a >= src && a < end) {
          if (STORE) *reinterpret_cast<T*>(out + dst + (a - src)) = v[u];
          else acc += fold<BPL>(v[u]);
        }
      }
    }
  }
  if (!STORE) atomicAdd(total, acc);
}

__global__ void fill_kernel(uint32_t* words, uint64_t n) {
  for (uint64_t k = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    words[k] = word_of(k);
}

__global__ void sum_kernel(const uint32_t* words, uint64_t n, unsigned long long* total) {
  unsigned long long s = 0;
  for (uint64_t k = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    s += words[k];
  atomicAdd(total, s);
}

unsigned long long expected_sum(const std::vector<uint64_t>& ids, uint64_t row_B, int threads) {
  std::vector<unsigned long long> part(threads, 0);
  std::vector<std::thread> pool;
  const uint64_t n = ids.size(), words = row_B / 4;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      unsigned long long s = 0;
      for (uint64_t i = n * t / threads; i < n * (t + 1) / threads; ++i)
        for (uint64_t w = 0; w < words; ++w) s += word_of(ids[i] * words + w);
      part[t] = s;
    });
  for (auto& th : pool) th.join();
  unsigned long long s = 0;
  for (auto p : part) s += p;
  return s;
}

unsigned long long device_sum(const void* out, uint64_t bytes, int sms) {
  unsigned long long* d_total = nullptr;
  CUDA_CHECK(cudaMalloc(&d_total, sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemset(d_total, 0, sizeof(unsigned long long)));
  sum_kernel<<<sms * 8, 256>>>(static_cast<const uint32_t*>(out), bytes / 4, d_total);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long total = 0;
  CUDA_CHECK(cudaMemcpy(&total, d_total, sizeof(total), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_total));
  return total;
}

void launch(int lane_B, bool aligned, int ctas, const char* table, char* out, const uint64_t* ids,
            uint64_t rows, uint64_t row_B, cudaStream_t s) {
#define HL_GATHER(B, A) gather_kernel<B, A><<<ctas, kThreadsPerCta, 0, s>>>(table, out, ids, rows, row_B)
  if (lane_B == 4) { if (aligned) HL_GATHER(4, true); else HL_GATHER(4, false); }
  else if (lane_B == 8) { if (aligned) HL_GATHER(8, true); else HL_GATHER(8, false); }
  else { if (aligned) HL_GATHER(16, true); else HL_GATHER(16, false); }
#undef HL_GATHER
  CUDA_CHECK(cudaGetLastError());
}

void launch_probe(int lane_B, bool aligned, bool store, bool hash, bool ca, int ctas, const char* table,
                  char* out, const uint64_t* ids, uint64_t rows, uint64_t row_B, uint64_t seed,
                  uint64_t n_rows, unsigned long long* total, cudaStream_t s) {
#define HL_PROBE(B, A, S, H)                                                                   \
  if (ca) gather_probe_kernel<B, A, S, H, true><<<ctas, kThreadsPerCta, 0, s>>>(                \
      table, out, ids, rows, row_B, seed, n_rows, total);                                     \
  else gather_probe_kernel<B, A, S, H, false><<<ctas, kThreadsPerCta, 0, s>>>(                 \
      table, out, ids, rows, row_B, seed, n_rows, total)
#define HL_PROBE_SH(B, A)                                  \
  if (store) { if (hash) { HL_PROBE(B, A, true, true); } else { HL_PROBE(B, A, true, false); } } \
  else { if (hash) { HL_PROBE(B, A, false, true); } else { HL_PROBE(B, A, false, false); } }
  if (lane_B == 4) { if (aligned) { HL_PROBE_SH(4, true) } else { HL_PROBE_SH(4, false) } }
  else if (lane_B == 8) { if (aligned) { HL_PROBE_SH(8, true) } else { HL_PROBE_SH(8, false) } }
  else { if (aligned) { HL_PROBE_SH(16, true) } else { HL_PROBE_SH(16, false) } }
#undef HL_PROBE_SH
#undef HL_PROBE
  CUDA_CHECK(cudaGetLastError());
}

struct SampledIds {
  uint64_t vertices = 0;
  std::vector<uint64_t> ids;
};

SampledIds read_ids_file(const std::string& path) {
  SampledIds s;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) hl::fail(hl::kExitUsage, "usage", "--ids-file %s: cannot open", path.c_str());
  uint64_t head[2] = {0, 0};
  if (std::fread(head, 8, 2, f) != 2) hl::fail(hl::kExitUsage, "usage", "--ids-file %s: no header", path.c_str());
  s.vertices = head[0];
  s.ids.resize(head[1]);
  if (std::fread(s.ids.data(), 8, head[1], f) != head[1])
    hl::fail(hl::kExitUsage, "usage", "--ids-file %s: shorter than its header says", path.c_str());
  std::fclose(f);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  hl::Args args("gather", "GNN feature gather: rows of a host table by zero-copy, UVM, device or CPU + copy");
  args.flag("ids", "uniform", "row ids: uniform, sampled (list)");
  args.flag("table-B", "1GiB", "table sizes (list)");
  args.flag("row-B", "512", "row sizes, multiples of 4 B (list)");
  args.flag("variant", "aligned", "naive, aligned (list)");
  args.flag("lane-B", "4", "bytes per lane: 4, 8, 16 (list)");
  args.flag("memory-mode", "zerocopy",
            "device, zerocopy, registered, uvm_accessedby, uvm, uvm_warm, cpu_gather (list)");
  args.flag("rows", "1048576", "rows gathered per rep");
  args.flag("graph-scale", "20", "sampled ids: the kron graph's scale (recorded)");
  args.flag("fanouts", "10,25", "sampled ids: fan-outs (recorded)");
  args.flag("batch", "1024", "sampled ids: seed vertices per minibatch (recorded)");
  args.flag("ids-file", "", "sampled ids: the vertex id file the harness wrote");
  args.flag("threads", "16", "host threads of cpu_gather (and of the table's fill and checks)");
  args.flag("reps", "5", "timed repetitions per point");
  args.flag("seed", "1", "seed of the uniform ids");
  args.flag("device", "0", "CUDA device ordinal");
  args.flag("store", "out", "probe: out (write the rows) or fold (keep them in registers)");
  args.flag("id-source", "array", "probe: array (load the ids) or hash (uniform ids computed in the kernel)");
  args.flag("load", "nc", "probe: nc (the table through the read-only path, as the kernel) or ca (ld.global.ca)");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto id_kinds = args.choices("ids", {"uniform", "sampled"});
  auto tables = args.sizes("table-B");
  auto row_sizes = args.sizes("row-B");
  auto variants = args.choices("variant", {"naive", "aligned"});
  auto lanes = args.integers("lane-B");
  auto modes = args.choices("memory-mode", {"device", "zerocopy", "registered", "uvm_accessedby", "uvm",
                                            "uvm_warm", "cpu_gather"});
  const uint64_t rows = static_cast<uint64_t>(args.integer("rows"));
  const int threads = static_cast<int>(args.integer("threads"));
  const int reps = static_cast<int>(args.integer("reps"));
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  const std::string store = args.str("store"), id_source = args.str("id-source"), load = args.str("load");
  if (store != "out" && store != "fold") hl::fail(hl::kExitUsage, "usage", "--store: out or fold");
  if (id_source != "array" && id_source != "hash") hl::fail(hl::kExitUsage, "usage", "--id-source: array or hash");
  if (load != "nc" && load != "ca") hl::fail(hl::kExitUsage, "usage", "--load: nc or ca");
  const bool probe = store != "out" || id_source != "array" || load != "nc";
  if (id_source == "hash" && (id_kinds.size() != 1 || id_kinds[0] != "uniform"))
    hl::fail(hl::kExitUsage, "usage", "--id-source hash: uniform ids only");
  if (rows < 1 || threads < 1 || reps < 1) hl::fail(hl::kExitUsage, "usage", "--rows, --threads and --reps must be >= 1");
  for (auto l : lanes)
    if (l != 4 && l != 8 && l != 16) hl::fail(hl::kExitUsage, "usage", "--lane-B: 4, 8 or 16");
  SampledIds sampled;
  if (std::find(id_kinds.begin(), id_kinds.end(), "sampled") != id_kinds.end()) {
    sampled = read_ids_file(args.str("ids-file"));
    if (sampled.ids.size() < rows) hl::fail(hl::kExitUsage, "usage", "--ids-file holds fewer than --rows ids");
  }

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::HostBinding bound = hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  const int ctas = dev.sm_count * std::max(1, dev.max_threads_per_sm / kThreadsPerCta);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer timer;
  hl::L2Flusher flusher(dev);
  uint64_t* d_ids = nullptr;
  CUDA_CHECK(cudaMalloc(&d_ids, rows * sizeof(uint64_t)));
  unsigned long long* d_total = nullptr;
  CUDA_CHECK(cudaMalloc(&d_total, sizeof(unsigned long long)));
  int failures = 0;
  hl::start_gate(args, dev.device);

  for (const auto& mode : modes) {
    const bool cpu = mode == "cpu_gather", warm = mode == "uvm_warm";
    const hl::MemMode mm = cpu ? hl::MemMode::Registered : hl::parse_mem_mode(warm ? "uvm" : mode);
    for (uint64_t table_B : tables) {
      hl::Buffer table;
      uint32_t* cpu_table = nullptr;
      const uint64_t words = table_B / 4;
      if (cpu) {
        cpu_table = static_cast<uint32_t*>(std::aligned_alloc(4096, hl::round_up(table_B, 4096)));
        if (!cpu_table) hl::fail(hl::kExitCudaError, "host", "aligned_alloc of the table failed");
        hl::fill_words(cpu_table, words, threads);
        hl::print_buffer_node("table", cpu_table, bound.node);
      } else {
        table = hl::alloc_buffer(mm, table_B, dev.device);
        if (mm == hl::MemMode::Device) {
          fill_kernel<<<dev.sm_count * 8, 256>>>(static_cast<uint32_t*>(table.dev), words);
          CUDA_CHECK(cudaDeviceSynchronize());
        } else {
          hl::fill_words(static_cast<uint32_t*>(table.host), words, threads);
          hl::print_buffer_node("table", table.host, bound.node);
        }
        hl::apply_advice(table);
      }
      for (const auto& kind : id_kinds) {
        for (uint64_t row_B : row_sizes) {
          const uint64_t n_rows = table_B / row_B;
          if (row_B % 4 || n_rows < 1) continue;
          if (kind == "sampled" && sampled.vertices > n_rows) continue;
          std::vector<uint64_t> ids(rows);
          for (uint64_t i = 0; i < rows; ++i)
            ids[i] = kind == "uniform" ? mix64((seed << 32) | i) % n_rows
                                       : sampled.ids[i] * (n_rows / sampled.vertices);
          CUDA_CHECK(cudaMemcpy(d_ids, ids.data(), rows * sizeof(uint64_t), cudaMemcpyHostToDevice));
          const unsigned long long want = expected_sum(ids, row_B, threads);
          const uint64_t bytes = rows * row_B;
          char* d_out = nullptr;
          CUDA_CHECK(cudaMalloc(&d_out, bytes));
          for (const auto& variant : (cpu ? std::vector<std::string>{"-"} : variants)) {
            for (int64_t lane_B : (cpu ? std::vector<int64_t>{4} : lanes)) {
              if (row_B % lane_B) continue;
              const bool aligned = variant == "aligned";
              auto run_kernel = [&] {
                if (probe) {
                  CUDA_CHECK(cudaMemsetAsync(d_total, 0, sizeof(unsigned long long), stream));
                  launch_probe(static_cast<int>(lane_B), aligned, store == "out", id_source == "hash",
                               load == "ca", ctas, static_cast<const char*>(table.dev), d_out, d_ids, rows,
                               row_B, seed, n_rows, d_total, stream);
                } else {
                  launch(static_cast<int>(lane_B), aligned, ctas, static_cast<const char*>(table.dev), d_out,
                         d_ids, rows, row_B, stream);
                }
              };
              if (!cpu && mm != hl::MemMode::Uvm) { run_kernel(); CUDA_CHECK(cudaStreamSynchronize(stream)); }
              char* staging = nullptr;
              if (cpu) CUDA_CHECK(cudaHostAlloc(&staging, bytes, cudaHostAllocDefault));
              if (warm) { run_kernel(); CUDA_CHECK(cudaStreamSynchronize(stream)); }
              for (int rep = 0; rep < reps; ++rep) {
                CUDA_CHECK(cudaMemset(d_out, 0, bytes));
                double time_ms = 0, gather_ms = 0, copy_ms = 0;
                if (cpu) {
                  auto t0 = std::chrono::steady_clock::now();
                  std::vector<std::thread> pool;
                  for (int t = 0; t < threads; ++t)
                    pool.emplace_back([&, t] {
                      for (uint64_t i = rows * t / threads; i < rows * (t + 1) / threads; ++i)
                        std::memcpy(staging + i * row_B, reinterpret_cast<const char*>(cpu_table) + ids[i] * row_B,
                                    row_B);
                    });
                  for (auto& th : pool) th.join();
                  auto t1 = std::chrono::steady_clock::now();
                  CUDA_CHECK(cudaMemcpyAsync(d_out, staging, bytes, cudaMemcpyHostToDevice, stream));
                  CUDA_CHECK(cudaStreamSynchronize(stream));
                  auto t2 = std::chrono::steady_clock::now();
                  gather_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
                  copy_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
                  time_ms = gather_ms + copy_ms;
                } else {
                  if (mm == hl::MemMode::Uvm && !warm) hl::reset_residency(table, stream);
                  flusher.flush(stream);
                  timer.start(stream);
                  run_kernel();
                  timer.stop(stream);
                  time_ms = timer.ms();
                }
                unsigned long long got = 0;
                if (store == "fold" && !cpu)
                  CUDA_CHECK(cudaMemcpy(&got, d_total, sizeof(got), cudaMemcpyDeviceToHost));
                else
                  got = device_sum(d_out, bytes, dev.sm_count);
                const bool pass = got == want;
                failures += pass ? 0 : 1;
                hl::Json j;
                j.str("type", "measurement").str("benchmark", "gather");
                j.begin("params").str("ids", kind).uinteger("table_B", table_B).uinteger("row_B", row_B);
                if (!cpu) j.str("variant", variant).integer("lane_B", lane_B);
                j.str("memory_mode", mode);
                if (probe && !cpu) j.str("store", store).str("id_source", id_source).str("load", load);
                j.end();
                j.integer("rep", rep);
                j.begin("metrics").num("time_ms", time_ms).num("bw_GBps", bytes / (time_ms * 1e-3) / 1e9);
                if (cpu) j.num("gather_ms", gather_ms).num("copy_ms", copy_ms);
                j.integer("check_pass", pass ? 1 : 0).uinteger("rows", rows).end();
                j.print();
              }
              if (staging) CUDA_CHECK(cudaFreeHost(staging));
            }
          }
          CUDA_CHECK(cudaFree(d_out));
        }
      }
      if (cpu) std::free(cpu_table);
      else hl::free_buffer(table);
    }
  }
  CUDA_CHECK(cudaFree(d_ids));
  CUDA_CHECK(cudaFree(d_total));
  CUDA_CHECK(cudaStreamDestroy(stream));
  hl::Json done;
  done.str("type", "done").str("program", "gather").integer("check_failures", failures).print();
  return failures ? hl::kExitCheckFailed : 0;
}
