// cc: connected components by label propagation (gpu_kernels/KERNELS.md).
// comp[v] = v at first; every vertex is active in iteration 0, later only
// those whose label dropped in the previous iteration; each visit does
// atomicMin(comp[u], comp[v]). On a symmetric graph this ends with every
// vertex labelled by the smallest id of its component, which is what the
// union-find reference (reference.hpp) gives.
#include "driver.cuh"

namespace hl {

struct CcAlgo {
  using Value = uint32_t;
  static constexpr bool kWeighted = false;
  uint32_t* comp;
  const uint8_t* active_now;
  uint8_t* active_next;
  int* changed;
  __device__ bool active(uint64_t v) const { return active_now[v] != 0; }
  __device__ Value value(uint64_t v) const { return comp[v]; }
  __device__ void visit(Value c, uint64_t u, uint32_t) const {
    if (c < comp[u]) {
      const uint32_t old = atomicMin(comp + u, c);
      if (c < old) {
        active_next[u] = 1;
        *changed = 1;
      }
    }
  }
};

__global__ void cc_init(uint32_t* comp, uint64_t V) {
  const uint64_t v = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (v < V) comp[v] = static_cast<uint32_t>(v);
}

struct CcProblem {
  static constexpr const char* kName = "cc";
  static constexpr const char* kSummary = "connected components of a symmetric CSR graph whose edges live in a chosen memory";
  static constexpr bool kWeighted = false, kPerSource = false, kFloat = false;

  CcProblem(const HostGraph& g, const uint64_t*, const Options&) : g_(g) {
    CUDA_CHECK(cudaMalloc(&comp_, g.V * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&active_[0], g.V));
    CUDA_CHECK(cudaMalloc(&active_[1], g.V));
    CUDA_CHECK(cudaMalloc(&changed_, sizeof(int)));
    CUDA_CHECK(cudaHostAlloc(&h_changed_, sizeof(int), cudaHostAllocDefault));
  }
  ~CcProblem() {
    cudaFree(comp_);
    cudaFree(active_[0]);
    cudaFree(active_[1]);
    cudaFree(changed_);
    cudaFreeHost(h_changed_);
  }
  void add_regions(SelfTrace& t) {
    t.add_region("comp", comp_, g_.V * sizeof(uint32_t), false);
    t.add_region("active_a", active_[0], g_.V, false);
    t.add_region("active_b", active_[1], g_.V, false);
  }

  void init(uint64_t, cudaStream_t s) {
    cc_init<<<static_cast<unsigned>((g_.V + 255) / 256), 256, 0, s>>>(comp_, g_.V);
    LAUNCH_CHECK("cc_init");
    CUDA_CHECK(cudaMemsetAsync(active_[0], 1, g_.V, s));
    CUDA_CHECK(cudaMemsetAsync(active_[1], 0, g_.V, s));
    cur_ = 0;
  }

  int run(Launcher& L, cudaStream_t s) {
    for (int it = 0;; ++it) {
      CUDA_CHECK(cudaMemsetAsync(changed_, 0, sizeof(int), s));
      L.walk(CcAlgo{comp_, active_[cur_], active_[cur_ ^ 1], changed_});
      CUDA_CHECK(cudaMemcpyAsync(h_changed_, changed_, sizeof(int), cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaMemsetAsync(active_[cur_], 0, g_.V, s));
      cur_ ^= 1;
      CUDA_CHECK(cudaStreamSynchronize(s));
      if (!*h_changed_) return it + 1;
    }
  }

  CheckResult check(uint64_t) {
    if (ref_.empty()) ref_ = cc_reference(g_);
    std::vector<uint32_t> got(g_.V);
    CUDA_CHECK(cudaMemcpy(got.data(), comp_, g_.V * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    return compare_u32(got, ref_);
  }

  const HostGraph& g_;
  uint32_t* comp_ = nullptr;
  uint8_t* active_[2] = {nullptr, nullptr};
  int cur_ = 0;
  int* changed_ = nullptr;
  int* h_changed_ = nullptr;
  std::vector<uint32_t> ref_;
};

}  // namespace hl

int main(int argc, char** argv) { return hl::traversal_main<hl::CcProblem>(argc, argv); }
