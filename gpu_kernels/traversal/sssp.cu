// sssp: single-source shortest paths by iterated relaxation
// (gpu_kernels/KERNELS.md). dist[v] (0xFFFFFFFF unreached); a vertex is
// active while its flag in active_now is set; each visit does
// atomicMin(dist[u], dist[v] + w) and flags u for the next iteration if that
// lowered it. Weights are read with the same index and lanes as the edges,
// as a second load. Checked against Dijkstra's distances (reference.hpp).
#include "driver.cuh"

namespace hl {

struct SsspAlgo {
  using Value = uint32_t;
  static constexpr bool kWeighted = true;
  uint32_t* dist;
  const uint8_t* active_now;
  uint8_t* active_next;
  int* changed;
  __device__ bool active(uint64_t v) const { return active_now[v] != 0; }
  __device__ Value value(uint64_t v) const { return dist[v]; }
  __device__ void visit(Value d, uint64_t u, uint32_t w) const {
    const uint32_t nd = d + w;
    if (nd < dist[u]) {
      const uint32_t old = atomicMin(dist + u, nd);
      if (nd < old) {
        active_next[u] = 1;
        *changed = 1;
      }
    }
  }
};

struct SsspProblem {
  static constexpr const char* kName = "sssp";
  static constexpr const char* kSummary = "single-source shortest paths over a weighted CSR graph whose edges and weights live in a chosen memory";
  static constexpr bool kWeighted = true, kPerSource = true, kFloat = false;

  SsspProblem(const HostGraph& g, const uint64_t*, const Options&) : g_(g) {
    CUDA_CHECK(cudaMalloc(&dist_, g.V * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&active_[0], g.V));
    CUDA_CHECK(cudaMalloc(&active_[1], g.V));
    CUDA_CHECK(cudaMalloc(&changed_, sizeof(int)));
    CUDA_CHECK(cudaHostAlloc(&h_changed_, sizeof(int), cudaHostAllocDefault));
  }
  ~SsspProblem() {
    cudaFree(dist_);
    cudaFree(active_[0]);
    cudaFree(active_[1]);
    cudaFree(changed_);
    cudaFreeHost(h_changed_);
  }
  void add_regions(SelfTrace& t) {
    t.add_region("dist", dist_, g_.V * sizeof(uint32_t), false);
    t.add_region("active_a", active_[0], g_.V, false);
    t.add_region("active_b", active_[1], g_.V, false);
  }

  void init(uint64_t source, cudaStream_t s) {
    static const uint32_t zero = 0;
    static const uint8_t one = 1;
    CUDA_CHECK(cudaMemsetAsync(dist_, 0xFF, g_.V * sizeof(uint32_t), s));
    CUDA_CHECK(cudaMemcpyAsync(dist_ + source, &zero, sizeof zero, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemsetAsync(active_[0], 0, g_.V, s));
    CUDA_CHECK(cudaMemsetAsync(active_[1], 0, g_.V, s));
    CUDA_CHECK(cudaMemcpyAsync(active_[0] + source, &one, 1, cudaMemcpyHostToDevice, s));
    cur_ = 0;
  }

  int run(Launcher& L, cudaStream_t s) {
    for (int it = 0;; ++it) {
      CUDA_CHECK(cudaMemsetAsync(changed_, 0, sizeof(int), s));
      L.walk(SsspAlgo{dist_, active_[cur_], active_[cur_ ^ 1], changed_});
      CUDA_CHECK(cudaMemcpyAsync(h_changed_, changed_, sizeof(int), cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaMemsetAsync(active_[cur_], 0, g_.V, s));
      cur_ ^= 1;
      CUDA_CHECK(cudaStreamSynchronize(s));
      if (!*h_changed_) return it + 1;
    }
  }

  CheckResult check(uint64_t source) {
    auto it = ref_.find(source);
    if (it == ref_.end()) it = ref_.emplace(source, sssp_reference(g_, source)).first;
    std::vector<uint32_t> got(g_.V);
    CUDA_CHECK(cudaMemcpy(got.data(), dist_, g_.V * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    return compare_u32(got, it->second);
  }

  const HostGraph& g_;
  uint32_t* dist_ = nullptr;
  uint8_t* active_[2] = {nullptr, nullptr};
  int cur_ = 0;
  int* changed_ = nullptr;
  int* h_changed_ = nullptr;
  std::map<uint64_t, std::vector<uint32_t>> ref_;
};

}  // namespace hl

int main(int argc, char** argv) { return hl::traversal_main<hl::SsspProblem>(argc, argv); }
