// ptr_chase: load-to-use latency of one thread chasing pointers through a
// buffer in host memory (zero-copy) or device memory.
//
// The buffer holds n = footprint_B / stride_B nodes, node i at byte
// i * stride_B; each node stores the element index of the next node. The
// order is sequential (i -> i+1, wrapping) or one random cycle over all
// nodes (Sattolo's shuffle, seeded). One thread follows `steps` links from
// node 0 (untimed: it loads the module and warms the TLB's upper levels),
// L2 is flushed, and a second launch follows the next `steps` links, with
// %globaltimer around its loop: lat_ns = elapsed / steps. Each load depends
// on the last, so one request is outstanding at a time. When the chain has
// at least 2 x steps nodes the timed links visit nodes never loaded before
// (revisits = 0): every load misses the caches. Smaller chains (revisits = 1)
// measure what the caches keep within one launch (L1 is not kept across
// launches). --cache atomic follows each link with an atomicMin that leaves
// the word as it is (the atomic SSSP and CC wait on), in device memory;
// --lanes N runs N threads of one warp, each on its own chain position;
// --warps W runs W such warps in one CTA (one SM), every lane on a node of
// its own, warp 0 timed.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/numa.hpp"
#include "../common/memory.cuh"

template <int CACHE>
__device__ __forceinline__ uint64_t next_of(const uint64_t* p) {
  if (CACHE == 1) return __ldcg(p);
  if (CACHE == 2) return __ldcv(p);
  if (CACHE == 3)  // an atomic that returns the node's word (SSSP's and CC's atomicMin)
    return atomicMin(reinterpret_cast<unsigned long long*>(const_cast<uint64_t*>(p)), ~0ull);
  return *p;
}

template <int CACHE>
__global__ void chase(const uint64_t* buf, uint64_t start, uint64_t steps, uint64_t* out, uint64_t lane_step,
                      unsigned lanes) {
  // the first `lanes` lanes of each warp chase; lane l of warp w starts at node
  // w * lanes + l (its own place on the cycle); thread 0 is the chain checked and
  // timed (a warp's loads go in lockstep)
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane >= lanes) return;
  uint64_t idx = threadIdx.x == 0 ? start : (warp * lanes + lane) * lane_step;
  uint64_t t0 = hl::global_ns();
  for (uint64_t s = 0; s < steps; ++s) idx = next_of<CACHE>(buf + idx);
  uint64_t t1 = hl::global_ns();
  if (threadIdx.x == 0) {
    out[0] = idx;
    out[1] = t1 - t0;
  } else if (idx == ~0ull) {
    out[2] = idx;  // keeps the other lanes' chains
  }
}

int main(int argc, char** argv) {
  hl::Args args("ptr_chase", "pointer-chase latency to host and device memory");
  args.flag("memory-mode", "zerocopy,device", "where the chain lives: zerocopy, registered, uvm_accessedby, device (list)");
  args.flag("stride-B", "128,4096,65536,2MiB", "bytes between consecutive nodes (list)");
  args.flag("footprint-B", "64MiB", "bytes the chain spans (list)");
  args.flag("order", "random", "node order: seq, random (list)");
  args.flag("cache", "default", "load cache operator: default, cg, cv, or atomic (atomicMin that leaves the word as it is; device memory only) (list)");
  args.flag("steps", "2000", "links followed per timed run");
  args.flag("lanes", "1", "threads of the one warp chasing at once, each from its own node (1..32) (list)");
  args.flag("warps", "1", "warps of one CTA (one SM) chasing at once, each with --lanes lanes (1..32) (list)");
  args.flag("reps", "3", "timed repetitions per point");
  args.flag("seed", "1", "seed of the random order");
  args.flag("device", "0", "CUDA device ordinal");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  auto modes = args.choices("memory-mode", {"zerocopy", "registered", "uvm_accessedby", "device"});
  auto strides = args.sizes("stride-B");
  auto footprints = args.sizes("footprint-B");
  auto orders = args.choices("order", {"seq", "random"});
  auto caches = args.choices("cache", {"default", "cg", "cv", "atomic"});
  if (std::find(caches.begin(), caches.end(), "atomic") != caches.end())
    for (const auto& m : modes)
      if (m != "device") hl::fail(hl::kExitUsage, "usage", "--cache atomic chases device memory only, not %s", m.c_str());
  uint64_t steps = static_cast<uint64_t>(args.integer("steps"));
  int reps = static_cast<int>(args.integer("reps"));
  uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  if (steps < 1 || reps < 1) hl::fail(hl::kExitUsage, "usage", "--steps and --reps must be >= 1");
  const auto lane_counts = args.integers("lanes");
  const auto warp_counts = args.integers("warps");
  for (auto w : warp_counts)
    if (w < 1 || w > 32) hl::fail(hl::kExitUsage, "usage", "--warps: %lld must be in 1..32", (long long)w);
  for (auto l : lane_counts)
    if (l < 1 || l > 32) hl::fail(hl::kExitUsage, "usage", "--lanes: %lld must be in 1..32", (long long)l);
  for (auto s : strides)
    if (s < 8 || s % 8) hl::fail(hl::kExitUsage, "usage", "--stride-B: %llu must be a multiple of 8", (unsigned long long)s);

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  hl::start_gate(args, dev.device);
  hl::L2Flusher flusher(dev);
  uint64_t* out = nullptr;
  CUDA_CHECK(cudaMalloc(&out, 3 * sizeof(uint64_t)));

  for (const auto& mode_name : modes) {
    hl::MemMode mode = hl::parse_mem_mode(mode_name);
    for (uint64_t footprint : footprints) {
      hl::Buffer buf = hl::alloc_buffer(mode, footprint, dev.device);
      std::vector<uint64_t> staging;
      uint64_t* words = nullptr;
      if (mode == hl::MemMode::Device) {
        staging.assign(footprint / 8, 0);
        words = staging.data();
      } else {
        words = static_cast<uint64_t*>(buf.host);
      }
      bool advised = false;
      for (uint64_t stride : strides) {
        uint64_t n = footprint / stride;
        if (n < 2) hl::fail(hl::kExitUsage, "usage", "footprint %llu B holds fewer than 2 nodes of stride %llu B",
                            (unsigned long long)footprint, (unsigned long long)stride);
        uint64_t step_elems = stride / 8;
        for (const auto& order : orders) {
          std::vector<uint64_t> perm(n);
          std::iota(perm.begin(), perm.end(), 0);
          if (order == "random") {  // Sattolo: one cycle through all nodes
            std::mt19937_64 rng(seed);
            for (uint64_t i = n - 1; i > 0; --i) {
              uint64_t j = rng() % i;
              std::swap(perm[i], perm[j]);
            }
          }
          // node i's successor: seq -> i+1; random -> perm[i] (a single cycle)
          for (uint64_t i = 0; i < n; ++i) {
            uint64_t nxt = order == "seq" ? (i + 1) % n : perm[i];
            words[i * step_elems] = nxt * step_elems;
          }
          if (mode == hl::MemMode::Device)
            CUDA_CHECK(cudaMemcpy(buf.dev, staging.data(), footprint, cudaMemcpyHostToDevice));
          if (!advised) {
            hl::apply_advice(buf);
            advised = true;
          }
          for (const auto& cname : caches) {
            auto fn = cname == "cg" ? chase<1> : cname == "cv" ? chase<2> : cname == "atomic" ? chase<3> : chase<0>;
            for (int64_t lane_count : lane_counts) {
              for (int64_t warp_count : warp_counts) {
                const uint64_t warps = static_cast<uint64_t>(warp_count);
                const uint64_t lanes = std::min<uint64_t>(static_cast<uint64_t>(lane_count), n / warps);
                if (lanes < 1)
                  hl::fail(hl::kExitUsage, "usage", "%llu warps need at least as many nodes, the chain has %llu",
                           (unsigned long long)warps, (unsigned long long)n);
                for (int rep = 0; rep < reps; ++rep) {
                  flusher.flush();
                  const unsigned threads = static_cast<unsigned>(warps == 1 ? lanes : 32 * warps);
                  const unsigned active = static_cast<unsigned>(lanes);
                  fn<<<1, threads>>>(static_cast<const uint64_t*>(buf.dev), 0, steps, out, step_elems, active);  // untimed pass
                  LAUNCH_SYNC_CHECK("chase");
                  uint64_t res[2];
                  CUDA_CHECK(cudaMemcpy(res, out, sizeof res, cudaMemcpyDeviceToHost));
                  flusher.flush();
                  fn<<<1, threads>>>(static_cast<const uint64_t*>(buf.dev), res[0], steps, out, step_elems, active);
                  LAUNCH_SYNC_CHECK("chase");
                  CUDA_CHECK(cudaMemcpy(res, out, sizeof res, cudaMemcpyDeviceToHost));
                  // the end of the walk must be the node 2 x steps links from 0
                  uint64_t expect = 0;
                  if (order == "seq") {
                    expect = ((2 * steps) % n) * step_elems;
                  } else {
                    uint64_t node = 0;
                    for (uint64_t s = 0; s < 2 * steps; ++s) node = perm[node];
                    expect = node * step_elems;
                  }
                  if (res[0] != expect)
                    hl::fail(hl::kExitCheckFailed, "check", "pointer chase ended at element %llu, expected %llu",
                             (unsigned long long)res[0], (unsigned long long)expect);
                  hl::Json j;
                  j.str("type", "measurement").str("benchmark", "ptr_chase");
                  j.begin("params")
                      .str("memory_mode", mode_name)
                      .uinteger("stride_B", stride)
                      .uinteger("footprint_B", footprint)
                      .str("order", order)
                      .str("cache", cname);
                  if (lanes > 1) j.uinteger("lanes", lanes);
                  if (warps > 1) j.uinteger("warps", warps);
                  j.end();
                  j.integer("rep", rep);
                  j.begin("metrics")
                      .num("lat_ns", static_cast<double>(res[1]) / steps)
                      .num("time_ms", res[1] / 1e6)
                      .uinteger("steps", steps)
                      .uinteger("nodes", n)
                      .integer("revisits", 2 * steps > n ? 1 : 0)
                      .end();
                  j.print();
                }
              }
            }
          }
        }
      }
      hl::free_buffer(buf);
    }
  }
  CUDA_CHECK(cudaFree(out));
  hl::print_done("ptr_chase");
  return 0;
}
