// The host side shared by bfs, sssp, cc and pagerank: flags, graph loading,
// memory modes, the launch loop with CUDA-event timing, result checks, the
// JSON lines, and the self-trace mode.
//
// One run of a program loads one graph and measures every combination of
// --memory-mode x --id-bytes x --variant (nested in that order), each for
// every source (BFS, SSSP) and --reps repetitions. Before each timed repetition: managed buffers are
// put back on the host (memory.cuh reset_residency), L2 is flushed and the
// algorithm state is reset; none of that is timed. Timing: an event pair
// around every walk launch (kernel_time_ms is their sum, detail.launch_ms
// lists them) and one around the whole run (time_ms, which also holds the
// per-iteration flag read-backs and state resets on the GPU). bw_GBps is
// the useful bytes the walk loaded (edges_read x id_bytes, plus 4 B per
// weight for SSSP) over kernel_time_ms.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/check.cuh"
#include "../common/device.cuh"
#include "../common/json.hpp"
#include "../common/memory.cuh"
#include "../common/numa.hpp"
#include "graph.hpp"
#include "reference.hpp"
#include "self_trace.cuh"
#include "walk.cuh"

namespace hl {

inline const std::vector<std::string>& variant_names() {
  static const std::vector<std::string> n = {"naive", "merged", "merged_aligned", "chunked", "balanced"};
  return n;
}
inline int parse_variant(const std::string& s) {
  const auto& n = variant_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == s) return static_cast<int>(i);
  fail(kExitUsage, "usage", "unknown variant '%s'", s.c_str());
}

template <typename Id, class Algo, int TRACE>
using WalkFn = void (*)(GraphView<Id>, Algo, TraceSink, unsigned long long*);

template <typename Id, class Algo, int TRACE, int AHEAD>
WalkFn<Id, Algo, TRACE> walk_fn_ahead(int variant) {
  switch (variant) {
    case kNaive: return walk<Id, kNaive, TRACE, AHEAD, Algo>;
    case kMerged: return walk<Id, kMerged, TRACE, AHEAD, Algo>;
    case kMergedAligned: return walk<Id, kMergedAligned, TRACE, AHEAD, Algo>;
    case kChunked: return walk<Id, kChunked, TRACE, AHEAD, Algo>;
    default: return walk<Id, kBalanced, TRACE, AHEAD, Algo>;
  }
}

// Load-ahead depths the programs are built with (--load-ahead).
inline const std::vector<std::string>& load_ahead_names() {
  static const std::vector<std::string> n = {"1", "4"};
  return n;
}

template <typename Id, class Algo, int TRACE>
WalkFn<Id, Algo, TRACE> walk_fn(int variant, int load_ahead) {
  return load_ahead == 1 ? walk_fn_ahead<Id, Algo, TRACE, 1>(variant) : walk_fn_ahead<Id, Algo, TRACE, 4>(variant);
}

// Launches walk kernels for one configuration, timing each with events.
class Launcher {
 public:
  Launcher(cudaStream_t s, std::string algo_name) : stream_(s), algo_name_(std::move(algo_name)) {
    CUDA_CHECK(cudaMalloc(&loaded_, sizeof(unsigned long long)));
  }
  ~Launcher() {
    for (auto e : events_) cudaEventDestroy(e);
    cudaFree(loaded_);
  }

  void configure(int variant, int id_bytes, int load_ahead, GraphView<uint32_t> g4, GraphView<uint64_t> g8,
                 SelfTrace* trace) {
    variant_ = variant;
    load_ahead_ = load_ahead;
    id_bytes_ = id_bytes;
    g4_ = g4;
    g8_ = g8;
    trace_ = trace;
  }

  void begin_run() {
    launches_ = 0;
    CUDA_CHECK(cudaMemsetAsync(loaded_, 0, sizeof(unsigned long long), stream_));
  }

  template <class Algo>
  void walk(const Algo& algo) {
    if (id_bytes_ == 4)
      walk_typed<uint32_t>(g4_, algo);
    else
      walk_typed<uint64_t>(g8_, algo);
  }

  // After the run has finished on the stream.
  std::vector<double> launch_ms() {
    std::vector<double> out(launches_);
    for (int i = 0; i < launches_; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventSynchronize(events_[2 * i + 1]));
      CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
      out[i] = ms;
    }
    return out;
  }
  unsigned long long edges_loaded() {
    unsigned long long n = 0;
    CUDA_CHECK(cudaMemcpy(&n, loaded_, sizeof n, cudaMemcpyDeviceToHost));
    return n;
  }
  int launches() const { return launches_; }

 private:
  template <typename Id, class Algo>
  void walk_typed(const GraphView<Id>& g, const Algo& algo) {
    const unsigned grid = walk_grid(variant_, g.V);
    while (events_.size() < 2 * static_cast<size_t>(launches_ + 1)) {
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    if (trace_) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      auto count_fn = walk_fn<Id, Algo, kCount>(variant_, load_ahead_);
      count_fn<<<grid, kBlock, 0, stream_>>>(g, algo, trace_->sink_for_count(), loaded_);
      LAUNCH_CHECK("walk (count)");
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      unsigned long long n = trace_->counted();
      TraceSink sink = trace_->sink_for_record(n);
      auto fn = walk_fn<Id, Algo, kRecord>(variant_, load_ahead_);
      CUDA_CHECK(cudaEventRecord(events_[2 * launches_], stream_));
      fn<<<grid, kBlock, 0, stream_>>>(g, algo, sink, loaded_);
      LAUNCH_CHECK("walk (record)");
      CUDA_CHECK(cudaEventRecord(events_[2 * launches_ + 1], stream_));
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      cudaFuncAttributes attr{};
      CUDA_CHECK(cudaFuncGetAttributes(&attr, fn));
      std::string name = algo_name_ + "_" + variant_names()[variant_] + (sizeof(Id) == 8 ? "_u64" : "_u32");
      trace_->write_launch(name, grid, attr.numRegs, sizeof(Id), n);
    } else {
      auto fn = walk_fn<Id, Algo, kNoTrace>(variant_, load_ahead_);
      CUDA_CHECK(cudaEventRecord(events_[2 * launches_], stream_));
      fn<<<grid, kBlock, 0, stream_>>>(g, algo, TraceSink{}, loaded_);
      LAUNCH_CHECK("walk");
      CUDA_CHECK(cudaEventRecord(events_[2 * launches_ + 1], stream_));
    }
    ++launches_;
  }

  cudaStream_t stream_;
  std::string algo_name_;
  unsigned long long* loaded_ = nullptr;
  std::vector<cudaEvent_t> events_;
  int launches_ = 0;
  int variant_ = 0, id_bytes_ = 8, load_ahead_ = 4;
  GraphView<uint32_t> g4_{};
  GraphView<uint64_t> g8_{};
  SelfTrace* trace_ = nullptr;
};

struct CheckResult {
  bool pass = false;
  uint64_t mismatches = 0;
  double max_rel_err = 0;  // PageRank
  uint64_t reached = 0;    // BFS, SSSP: vertices with a finite result
};

// Compares u32 results with a reference and counts finite entries.
inline CheckResult compare_u32(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want) {
  CheckResult c;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) ++c.mismatches;
    if (want[i] != kInf) ++c.reached;
  }
  c.pass = c.mismatches == 0;
  return c;
}

struct Options {
  std::string graph, graph_name, self_trace;
  std::vector<int> variants;
  std::vector<std::string> modes;
  std::vector<int> id_bytes;
  std::vector<uint64_t> sources;
  int reps = 3;
  int iterations = 10;
  int load_ahead = 4;
  bool warmup = true;
  int device = 0;
};

inline std::vector<uint64_t> pick_sources(const HostGraph& g, int n, uint64_t seed) {
  std::vector<uint64_t> out;
  uint64_t with_edges = 0;
  for (uint64_t v = 0; v < g.V; ++v) with_edges += g.degree(v) > 0;
  n = static_cast<int>(std::min<uint64_t>(n, with_edges));
  std::mt19937_64 rng(seed);
  while (static_cast<int>(out.size()) < n) {
    uint64_t v = rng() % g.V;
    if (g.degree(v) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

template <class Problem>
int traversal_main(int argc, char** argv) {
  Args args(Problem::kName, Problem::kSummary);
  args.flag("graph", "", "EMOGI binary CSR prefix (PREFIX.bel.col, .bel.dst, .bel.val)");
  args.flag("graph-name", "", "name reported for the graph (default: the prefix's file name)");
  args.flag("variant", "naive,merged,merged_aligned,chunked,balanced", "kernel variants (list)");
  args.flag("memory-mode", "zerocopy", "where edges (and weights) live: device, zerocopy, registered, uvm_accessedby, uvm, uvm_readmostly (list)");
  args.flag("id-bytes", "8", "bytes per neighbour id: 4, 8 (list)");
  args.flag("source", "", "source vertices (list; BFS and SSSP)");
  args.flag("sources", "4", "when --source is not given: this many sources with degree > 0, drawn with --seed");
  args.flag("seed", "27491095", "seed for drawing sources");
  args.flag("reps", "3", "timed repetitions per source");
  args.flag("iterations", "10", "PageRank iterations");
  args.flag("warmup", "1", "1: one untimed run per configuration first");
  args.flag("load-ahead", "4", "trips of edge loads a warp issues before it uses them: 1 (one at a time, as EMOGI) or 4");
  args.flag("self-trace", "", "write an Accel-Sim trace of the edge loads into this directory (one configuration, one source, one run)");
  args.flag("device", "0", "CUDA device ordinal");
  declare_host_flags(args);
  args.parse(argc, argv);
  check_host_flags(args);

  Options o;
  o.graph = args.str("graph");
  if (o.graph.empty()) fail(kExitUsage, "usage", "%s: --graph PREFIX is required", Problem::kName);
  o.graph_name = args.str("graph-name");
  if (o.graph_name.empty()) {
    size_t slash = o.graph.find_last_of('/');
    o.graph_name = slash == std::string::npos ? o.graph : o.graph.substr(slash + 1);
  }
  for (const auto& v : args.choices("variant", variant_names())) o.variants.push_back(parse_variant(v));
  o.modes = args.choices("memory-mode", mem_mode_names());
  for (auto b : args.integers("id-bytes")) {
    if (b != 4 && b != 8) fail(kExitUsage, "usage", "--id-bytes: %lld is not 4 or 8", (long long)b);
    o.id_bytes.push_back(static_cast<int>(b));
  }
  o.reps = static_cast<int>(args.integer("reps"));
  o.iterations = static_cast<int>(args.integer("iterations"));
  o.warmup = args.integer("warmup") != 0;
  o.load_ahead = std::stoi(args.choice("load-ahead", load_ahead_names()));
  o.self_trace = args.str("self-trace");
  o.device = static_cast<int>(args.integer("device"));
  if (o.reps < 1 || o.iterations < 1) fail(kExitUsage, "usage", "--reps and --iterations must be >= 1");
  bool tracing = !o.self_trace.empty();
  if (tracing && (o.variants.size() != 1 || o.modes.size() != 1 || o.id_bytes.size() != 1))
    fail(kExitUsage, "usage", "--self-trace needs exactly one --variant, --memory-mode and --id-bytes");

  DeviceInfo dev = query_device(o.device);
  print_device(dev);
  HostBinding bound = bind_host(args, sysfs_bus_id(dev.pci_domain, dev.pci_bus, dev.pci_device));
  bool gated = false;

  HostGraph g = load_graph(o.graph, Problem::kWeighted);
  if (g.V >= kInf) fail(kExitUsage, "input", "%s: %llu vertices do not fit the 32-bit state arrays", o.graph.c_str(), (unsigned long long)g.V);
  if (Problem::kPerSource) {
    if (args.has("source")) {
      for (auto s : args.integers("source")) {
        if (s < 0 || static_cast<uint64_t>(s) >= g.V)
          fail(kExitUsage, "usage", "--source %lld is not a vertex of %s (V = %llu)", (long long)s, o.graph.c_str(), (unsigned long long)g.V);
        o.sources.push_back(static_cast<uint64_t>(s));
      }
    } else {
      o.sources = pick_sources(g, static_cast<int>(args.integer("sources")), static_cast<uint64_t>(args.integer("seed")));
    }
    if (o.sources.empty()) fail(kExitUsage, "usage", "%s: no source vertex", o.graph.c_str());
    if (tracing) o.sources.resize(1);
  } else {
    o.sources = {0};
  }

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  L2Flusher flusher(dev);
  EventTimer total;
  Launcher launcher(stream, Problem::kName);
  std::unique_ptr<SelfTrace> trace;
  if (tracing) trace.reset(new SelfTrace(o.self_trace));

  uint64_t* d_offsets = nullptr;
  CUDA_CHECK(cudaMalloc(&d_offsets, (g.V + 1) * sizeof(uint64_t)));
  CUDA_CHECK(cudaMemcpy(d_offsets, g.offsets.data(), (g.V + 1) * sizeof(uint64_t), cudaMemcpyHostToDevice));
  Problem prob(g, d_offsets, o);
  if (trace) {
    trace->add_memcpy(d_offsets, (g.V + 1) * sizeof(uint64_t));
    trace->add_region("offsets", d_offsets, (g.V + 1) * sizeof(uint64_t), false);
    prob.add_regions(*trace);
  }

  int failures = 0;
  // Memory modes outermost, so that a mode that fails (managed memory on a
  // host without it, say) ends the run after every earlier mode finished.
  std::vector<uint32_t> narrow;  // 4-byte ids, built once when first needed
  for (const auto& mode_name : o.modes) {
    MemMode mode = parse_mem_mode(mode_name);
    for (int id_bytes : o.id_bytes) {
      if (id_bytes == 4 && narrow.empty() && g.E) {
        narrow.resize(g.E);
        for (uint64_t i = 0; i < g.E; ++i) narrow[i] = static_cast<uint32_t>(g.edges[i]);
      }
      const void* edge_src = id_bytes == 4 ? static_cast<const void*>(narrow.data()) : static_cast<const void*>(g.edges.data());
      Buffer edges = alloc_buffer(mode, g.E * id_bytes, o.device);
      upload(edges, edge_src, g.E * id_bytes);
      apply_advice(edges);
      print_buffer_node("edges", edges.host, bound.node);
      Buffer weights;
      if (Problem::kWeighted) {
        weights = alloc_buffer(mode, g.E * sizeof(uint32_t), o.device);
        upload(weights, g.weights.data(), g.E * sizeof(uint32_t));
        apply_advice(weights);
      }
      if (trace) {
        bool host = is_host_resident(mode);
        if (!host) trace->add_memcpy(edges.dev, edges.bytes);
        trace->add_region("edges", edges.dev, edges.bytes, host);
        if (Problem::kWeighted) {
          if (!host) trace->add_memcpy(weights.dev, weights.bytes);
          trace->add_region("weights", weights.dev, weights.bytes, host);
        }
      }
      GraphView<uint32_t> g4{d_offsets, static_cast<const uint32_t*>(edges.dev), static_cast<const uint32_t*>(weights.dev), g.V};
      GraphView<uint64_t> g8{d_offsets, static_cast<const uint64_t*>(edges.dev), static_cast<const uint32_t*>(weights.dev), g.V};
      if (!gated) {  // timed work starts with the first configuration's arrays in place
        start_gate(args, dev.device);
        gated = true;
      }

      for (int variant : o.variants) {
        launcher.configure(variant, id_bytes, o.load_ahead, g4, g8, trace.get());
        auto prepare = [&](uint64_t source) {
          reset_residency(edges, stream);
          reset_residency(weights, stream);
          prob.init(source, stream);
          flusher.flush(stream);
          CUDA_CHECK(cudaStreamSynchronize(stream));
        };
        if (o.warmup && !tracing) {
          prepare(o.sources[0]);
          launcher.begin_run();
          prob.run(launcher, stream);
          CUDA_CHECK(cudaStreamSynchronize(stream));
        }
        for (size_t si = 0; si < o.sources.size(); ++si) {
          uint64_t source = o.sources[si];
          for (int rep = 0; rep < (tracing ? 1 : o.reps); ++rep) {
            prepare(source);
            launcher.begin_run();
            total.start(stream);
            int iterations = prob.run(launcher, stream);
            total.stop(stream);
            double time_ms = total.ms();
            std::vector<double> launch_ms = launcher.launch_ms();
            double kernel_ms = 0;
            for (double t : launch_ms) kernel_ms += t;
            unsigned long long loaded = launcher.edges_loaded();
            CheckResult c = prob.check(source);
            if (!c.pass) ++failures;
            double bytes = static_cast<double>(loaded) * (id_bytes + (Problem::kWeighted ? 4 : 0));

            Json j;
            j.str("type", tracing ? "trace" : "measurement").str("benchmark", Problem::kName);
            j.begin("params")
                .str("graph", o.graph_name)
                .str("variant", variant_names()[variant])
                .str("memory_mode", mode_name)
                .integer("id_bytes", id_bytes)
                .integer("load_ahead", o.load_ahead);
            if (Problem::kPerSource) j.uinteger("source", source);
            j.end();
            j.integer("rep", static_cast<long long>(si) * o.reps + rep);
            j.begin("metrics")
                .num("time_ms", time_ms)
                .num("kernel_time_ms", kernel_ms)
                .integer("iterations", iterations)
                .uinteger("edges_read", loaded)
                .num("bytes_read_B", bytes)
                .num("bw_GBps", kernel_ms > 0 ? bytes / (kernel_ms * 1e-3) / 1e9 : 0.0)
                .integer("check_pass", c.pass ? 1 : 0)
                .uinteger("mismatches", c.mismatches);
            if (Problem::kPerSource) j.uinteger("source", source).uinteger("reached", c.reached);
            if (Problem::kFloat) j.num("max_rel_err", c.max_rel_err);
            j.uinteger("vertices", g.V).uinteger("edges", g.E);
            j.end();
            if (tracing) {
              trace->finish();
              j.begin("detail")
                  .str("dir", trace->dir())
                  .integer("launches", trace->launches())
                  .uinteger("records", trace->records_total())
                  .end();
            } else {
              j.begin("detail").nums("launch_ms", launch_ms).end();
            }
            j.print();
          }
        }
      }
      free_buffer(edges);
      if (Problem::kWeighted) free_buffer(weights);
    }
  }
  CUDA_CHECK(cudaFree(d_offsets));
  CUDA_CHECK(cudaStreamDestroy(stream));
  Json done;
  done.str("type", "done").str("program", Problem::kName).integer("check_failures", failures).print();
  return failures ? kExitCheckFailed : 0;
}

}  // namespace hl
