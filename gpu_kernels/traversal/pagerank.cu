// pagerank: push PageRank for a fixed number of iterations
// (gpu_kernels/KERNELS.md). rank[v] = 1/V at first; each iteration every
// vertex with degree > 0 adds 0.85 rank[v] / degree(v) to next[u] of each
// neighbour u (float32 atomicAdd), then rank = 0.15 / V + next (dangling
// mass ignored). Checked against the float64 reference: the largest
// relative error over all vertices must stay below 1e-3.
#include "driver.cuh"

namespace hl {

constexpr double kDamping = 0.85;
constexpr double kMaxRelErr = 1e-3;

struct PrAlgo {
  using Value = float;
  static constexpr bool kWeighted = false;
  const float* rank;
  const uint64_t* offsets;
  float* next;
  __device__ bool active(uint64_t) const { return true; }
  __device__ Value value(uint64_t v) const {
    const uint64_t d = offsets[v + 1] - offsets[v];
    return d ? static_cast<float>(kDamping) * rank[v] / static_cast<float>(d) : 0.0f;
  }
  __device__ void visit(Value c, uint64_t u, uint32_t) const { atomicAdd(next + u, c); }
};

__global__ void pr_fill(float* a, uint64_t V, float x) {
  const uint64_t v = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (v < V) a[v] = x;
}

__global__ void pr_update(float* rank, float* next, uint64_t V, float base) {
  const uint64_t v = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (v < V) {
    rank[v] = base + next[v];
    next[v] = 0.0f;
  }
}

struct PrProblem {
  static constexpr const char* kName = "pagerank";
  static constexpr const char* kSummary = "push PageRank over a CSR graph whose edges live in a chosen memory";
  static constexpr bool kWeighted = false, kPerSource = false, kFloat = true;

  PrProblem(const HostGraph& g, const uint64_t* d_offsets, const Options& o)
      : g_(g), offsets_(d_offsets), iterations_(o.iterations) {
    CUDA_CHECK(cudaMalloc(&rank_, g.V * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&next_, g.V * sizeof(float)));
  }
  ~PrProblem() {
    cudaFree(rank_);
    cudaFree(next_);
  }
  void add_regions(SelfTrace& t) {
    t.add_region("rank", rank_, g_.V * sizeof(float), false);
    t.add_region("next", next_, g_.V * sizeof(float), false);
  }
  unsigned grid() const { return static_cast<unsigned>((g_.V + 255) / 256); }

  void init(uint64_t, cudaStream_t s) {
    pr_fill<<<grid(), 256, 0, s>>>(rank_, g_.V, static_cast<float>(1.0 / g_.V));
    LAUNCH_CHECK("pr_fill");
    CUDA_CHECK(cudaMemsetAsync(next_, 0, g_.V * sizeof(float), s));
  }

  int run(Launcher& L, cudaStream_t s) {
    const float base = static_cast<float>((1.0 - kDamping) / g_.V);
    for (int it = 0; it < iterations_; ++it) {
      L.walk(PrAlgo{rank_, offsets_, next_});
      pr_update<<<grid(), 256, 0, s>>>(rank_, next_, g_.V, base);
      LAUNCH_CHECK("pr_update");
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    return iterations_;
  }

  CheckResult check(uint64_t) {
    if (ref_.empty()) ref_ = pagerank_reference(g_, iterations_, kDamping);
    std::vector<float> got(g_.V);
    CUDA_CHECK(cudaMemcpy(got.data(), rank_, g_.V * sizeof(float), cudaMemcpyDeviceToHost));
    CheckResult c;
    for (uint64_t v = 0; v < g_.V; ++v) {
      double err = std::fabs(static_cast<double>(got[v]) - ref_[v]) / ref_[v];
      if (!(err < kMaxRelErr)) ++c.mismatches;  // NaN counts as a mismatch
      if (err > c.max_rel_err || err != err) c.max_rel_err = err;
    }
    c.pass = c.mismatches == 0;
    return c;
  }

  const HostGraph& g_;
  const uint64_t* offsets_;
  int iterations_;
  float* rank_ = nullptr;
  float* next_ = nullptr;
  std::vector<double> ref_;
};

}  // namespace hl

int main(int argc, char** argv) { return hl::traversal_main<hl::PrProblem>(argc, argv); }
