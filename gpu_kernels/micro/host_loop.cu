// host_loop: the time a traversal program spends between its walk launches,
// the host's loop around them, with the walk replaced by a kernel of known
// length.
//
// A loop is a sequence of stream items repeated --iterations times:
//   walk        the timed launch (an event pair around it, as the traversal
//               programs time each walk): --walk-ctas CTAs of 256 threads
//               whose first warp sleeps --walk-us of the GPU's global timer
//               (0: none does), each thread first setting a byte of a V-byte
//               buffer with --walk-writes 1
//   memset:N    cudaMemsetAsync of N bytes of device memory
//   d2h:N       cudaMemcpyAsync of N bytes to pinned host memory
//   kernel:C    an untimed empty kernel of C CTAs of 256 threads
//   sync        cudaStreamSynchronize, then the host reads the copied flag
// N and C are numbers or V (the --vertices count) or V/256. A run is one event
// pair around the loop (time_ms) and ends with a synchronisation: where the
// loop's last item is not `sync`, one follows the loop, as PageRank's program
// does. gap_us is (time_ms - kernel_time_ms) / iterations: what each
// iteration costs outside its walk's events.
//
// The named loops are those of the traversal programs (bfs.cu, sssp.cu, cc.cu,
// pagerank.cu: their run() in this order) and parts of them for calibration;
// hostlink.model.host_loop holds the same table (tests/gpu_kernels check that
// the two, and the programs, agree).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/numa.hpp"

namespace {

// name -> sequence; keep in step with hostlink.model.host_loop.LOOPS
const std::vector<std::pair<std::string, std::string>> kLoops = {
    {"bfs", "memset:4,walk,d2h:4,sync"},
    {"sssp", "memset:4,walk,d2h:4,memset:V,sync"},
    {"cc", "memset:4,walk,d2h:4,memset:V,sync"},
    {"pagerank", "walk,kernel:V/256"},
    {"walk", "walk"},
    {"walk_sync", "walk,sync"},
    {"walk_copy_sync", "walk,d2h:4,sync"},
    {"walk_copy_memset_v", "walk,d2h:4,memset:V"},
    {"walk_memset", "memset:4,walk"},
    {"walk_memset_v", "memset:V,walk"},
    {"walk_kernel", "walk,kernel:1"},
    {"walk_kernel_v", "walk,kernel:V/256"},
};

enum class Op { kWalk, kMemset, kD2H, kKernel, kSync };
struct Item {
  Op op;
  uint64_t n;  // bytes (memset, d2h) or CTAs (kernel)
};

std::vector<std::string> loop_names() {
  std::vector<std::string> out;
  for (const auto& kv : kLoops) out.push_back(kv.first);
  return out;
}

uint64_t amount(const std::string& s, uint64_t vertices, const std::string& loop) {
  if (s == "V") return vertices;
  if (s == "V/256") return (vertices + 255) / 256;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end)
    hl::fail(hl::kExitUsage, "usage", "loop %s: '%s' is not a number, V or V/256", loop.c_str(), s.c_str());
  return v;
}

std::vector<Item> parse_loop(const std::string& name, uint64_t vertices) {
  std::string seq;
  for (const auto& kv : kLoops)
    if (kv.first == name) seq = kv.second;
  std::vector<Item> out;
  size_t start = 0;
  while (start <= seq.size()) {
    size_t comma = seq.find(',', start);
    std::string tok = seq.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = tok.find(':');
    std::string op = tok.substr(0, colon);
    uint64_t n = colon == std::string::npos ? 0 : amount(tok.substr(colon + 1), vertices, name);
    if (op == "walk") out.push_back({Op::kWalk, 0});
    else if (op == "memset") out.push_back({Op::kMemset, n});
    else if (op == "d2h") out.push_back({Op::kD2H, n});
    else if (op == "kernel") out.push_back({Op::kKernel, std::max<uint64_t>(1, n)});
    else if (op == "sync") out.push_back({Op::kSync, 0});
    else hl::fail(hl::kExitUsage, "usage", "loop %s: unknown item '%s'", name.c_str(), tok.c_str());
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The walk: the first warp sleeps `ns` of the global timer (0: returns at once);
// with `flags` every thread sets one byte of the V-byte buffer first, as a
// traversal's walk sets the active flags of the next iteration.
__global__ void walk_kernel(unsigned long long ns, uint8_t* flags, uint64_t vertices) {
  const uint64_t t = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flags) flags[t % vertices] = 1;
  if (t >= 32 || ns == 0) return;
  const unsigned long long t0 = hl::global_ns();
  while (hl::global_ns() - t0 < ns) __nanosleep(256);
}

__global__ void empty_kernel() {}

}  // namespace

int main(int argc, char** argv) {
  hl::Args args("host_loop", "time between a traversal program's walk launches: its host loop");
  args.flag("loop", "bfs,sssp,pagerank,walk,walk_sync,walk_copy_sync,walk_memset,walk_kernel", "named loops (list)");
  args.flag("vertices", "16384", "V in the loops' sizes (list)");
  args.flag("walk-us", "50", "how long each walk launch runs, us (list; 0: an empty kernel)");
  args.flag("walk-ctas", "1", "CTAs of 256 threads in each walk launch (list; the first warp sleeps, the others exit)");
  args.flag("walk-writes", "0", "1: every walk thread sets one byte of a V-byte buffer first (list of 0, 1)");
  args.flag("iterations", "16", "loop iterations per run (list)");
  args.flag("reps", "10", "timed runs per point, after one untimed run");
  args.flag("device", "0", "CUDA device ordinal");
  hl::declare_host_flags(args);
  args.parse(argc, argv);
  hl::check_host_flags(args);

  const auto loops = args.choices("loop", loop_names());
  const auto vertices_list = args.sizes("vertices");
  const auto walk_us_list = args.sizes("walk-us");
  const auto iterations_list = args.sizes("iterations");
  const auto walk_ctas_list = args.sizes("walk-ctas");
  const auto walk_writes_list = args.sizes("walk-writes");
  for (auto c : walk_ctas_list)
    if (c < 1 || c > (1u << 20)) hl::fail(hl::kExitUsage, "usage", "--walk-ctas: %llu is outside 1..2^20", (unsigned long long)c);
  for (auto w : walk_writes_list)
    if (w > 1) hl::fail(hl::kExitUsage, "usage", "--walk-writes: %llu is not 0 or 1", (unsigned long long)w);
  const int reps = static_cast<int>(args.integer("reps"));
  if (reps < 1) hl::fail(hl::kExitUsage, "usage", "--reps must be >= 1");
  for (auto n : iterations_list)
    if (n < 1 || n > 100000) hl::fail(hl::kExitUsage, "usage", "--iterations: %llu is outside 1..100000", (unsigned long long)n);
  for (auto w : walk_us_list)
    if (w > 1000000) hl::fail(hl::kExitUsage, "usage", "--walk-us: %llu is above 1e6", (unsigned long long)w);
  for (auto v : vertices_list)
    if (v < 1 || v > (1ull << 34)) hl::fail(hl::kExitUsage, "usage", "--vertices: %llu is outside 1..2^34", (unsigned long long)v);

  hl::DeviceInfo dev = hl::query_device(static_cast<int>(args.integer("device")));
  hl::print_device(dev);
  hl::bind_host(args, hl::sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  hl::start_gate(args, dev.device);

  const uint64_t max_v = *std::max_element(vertices_list.begin(), vertices_list.end());
  uint8_t* dbuf = nullptr;  // memset:V target (and the 4 B flag at its start)
  int* h_flag = nullptr;
  CUDA_CHECK(cudaMalloc(&dbuf, std::max<uint64_t>(max_v, 64)));
  uint8_t* wbuf = nullptr;  // the walks' flags (walk-writes 1)
  CUDA_CHECK(cudaMalloc(&wbuf, std::max<uint64_t>(max_v, 64)));
  CUDA_CHECK(cudaHostAlloc(&h_flag, 64, cudaHostAllocDefault));
  int* d_flag = nullptr;
  CUDA_CHECK(cudaMalloc(&d_flag, 64));

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  hl::EventTimer total;
  const uint64_t max_iter = *std::max_element(iterations_list.begin(), iterations_list.end());
  std::vector<cudaEvent_t> ev(2 * max_iter * 2);  // at most two walks per iteration
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));

  for (const auto& loop : loops) {
    for (uint64_t vertices : vertices_list) {
      const std::vector<Item> items = parse_loop(loop, vertices);
      const bool ends_synced = items.back().op == Op::kSync;
      size_t walks_per_iter = 0;
      for (const auto& it : items) walks_per_iter += it.op == Op::kWalk;
      if (walks_per_iter > 2) hl::fail(hl::kExitUsage, "usage", "loop %s: more than two walks", loop.c_str());
      for (uint64_t walk_us : walk_us_list) {
       for (uint64_t walk_ctas : walk_ctas_list) {
        for (uint64_t walk_writes : walk_writes_list) {
        const unsigned long long walk_ns = walk_us * 1000ull;
        uint8_t* walk_flags = walk_writes ? wbuf : nullptr;
        for (uint64_t iterations : iterations_list) {
          // one run: the loop between the total events, as a traversal program's run()
          auto run = [&]() -> size_t {
            size_t walks = 0;
            total.start(stream);
            for (uint64_t i = 0; i < iterations; ++i) {
              for (const auto& it : items) {
                switch (it.op) {
                  case Op::kWalk:
                    CUDA_CHECK(cudaEventRecord(ev[2 * walks], stream));
                    walk_kernel<<<static_cast<unsigned>(walk_ctas), 256, 0, stream>>>(walk_ns, walk_flags, vertices);
                    CUDA_CHECK(cudaGetLastError());
                    CUDA_CHECK(cudaEventRecord(ev[2 * walks + 1], stream));
                    ++walks;
                    break;
                  case Op::kMemset:
                    if (it.n <= 4) CUDA_CHECK(cudaMemsetAsync(d_flag, 0, it.n, stream));
                    else CUDA_CHECK(cudaMemsetAsync(dbuf, 0, it.n, stream));
                    break;
                  case Op::kD2H:
                    CUDA_CHECK(cudaMemcpyAsync(h_flag, d_flag, std::min<uint64_t>(it.n, 64), cudaMemcpyDeviceToHost, stream));
                    break;
                  case Op::kKernel:
                    empty_kernel<<<static_cast<unsigned>(it.n), 256, 0, stream>>>();
                    CUDA_CHECK(cudaGetLastError());
                    break;
                  case Op::kSync:
                    CUDA_CHECK(cudaStreamSynchronize(stream));
                    if (*h_flag == 12345) std::printf("#\n");  // the host reads the flag, as the programs do
                    break;
                }
              }
            }
            if (!ends_synced) CUDA_CHECK(cudaStreamSynchronize(stream));
            total.stop(stream);
            return walks;
          };
          run();  // untimed
          CUDA_CHECK(cudaStreamSynchronize(stream));
          for (int rep = 0; rep < reps; ++rep) {
            const size_t walks = run();
            const double time_ms = total.ms();
            double kernel_ms = 0;
            for (size_t w = 0; w < walks; ++w) {
              float ms = 0;
              CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * w], ev[2 * w + 1]));
              kernel_ms += ms;
            }
            hl::Json j;
            j.str("type", "measurement").str("benchmark", "host_loop");
            j.begin("params")
                .str("loop", loop)
                .uinteger("vertices", vertices)
                .uinteger("walk_us", walk_us)
                .uinteger("walk_ctas", walk_ctas)
                .uinteger("walk_writes", walk_writes)
                .uinteger("iterations", iterations)
                .end();
            j.integer("rep", rep);
            j.begin("metrics")
                .num("time_ms", time_ms)
                .num("kernel_time_ms", kernel_ms)
                .num("gap_us", (time_ms - kernel_ms) * 1e3 / static_cast<double>(iterations))
                .num("launches", static_cast<double>(walks))
                .end();
            j.print();
          }
        }
        }
       }
      }
    }
  }
  for (auto& e : ev) cudaEventDestroy(e);
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(dbuf));
  CUDA_CHECK(cudaFree(wbuf));
  CUDA_CHECK(cudaFree(d_flag));
  CUDA_CHECK(cudaFreeHost(h_flag));
  hl::print_done("host_loop");
  return 0;
}
