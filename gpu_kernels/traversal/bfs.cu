// bfs: level-synchronous breadth-first search (gpu_kernels/KERNELS.md).
// label[v] is v's depth (0xFFFFFFFF unreached); iteration `level` visits the
// vertices whose label is `level`; stops after an iteration that changed
// nothing. Checked against the CPU depths of reference.hpp.
#include "driver.cuh"

namespace hl {

struct BfsAlgo {
  using Value = uint32_t;
  static constexpr bool kWeighted = false;
  uint32_t* label;
  uint32_t level;
  int* changed;
  __device__ bool active(uint64_t v) const { return label[v] == level; }
  __device__ Value value(uint64_t) const { return level; }
  __device__ void visit(Value lvl, uint64_t u, uint32_t) const {
    if (label[u] == kInf) {
      label[u] = lvl + 1;
      *changed = 1;
    }
  }
};

struct BfsProblem {
  static constexpr const char* kName = "bfs";
  static constexpr const char* kSummary = "breadth-first search over a CSR graph whose edges live in a chosen memory";
  static constexpr bool kWeighted = false, kPerSource = true, kFloat = false;

  BfsProblem(const HostGraph& g, const uint64_t*, const Options&) : g_(g) {
    CUDA_CHECK(cudaMalloc(&label_, g.V * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&changed_, sizeof(int)));
    CUDA_CHECK(cudaHostAlloc(&h_changed_, sizeof(int), cudaHostAllocDefault));
  }
  ~BfsProblem() {
    cudaFree(label_);
    cudaFree(changed_);
    cudaFreeHost(h_changed_);
  }
  void add_regions(SelfTrace& t) { t.add_region("label", label_, g_.V * sizeof(uint32_t), false); }

  void init(uint64_t source, cudaStream_t s) {
    static const uint32_t zero = 0;
    CUDA_CHECK(cudaMemsetAsync(label_, 0xFF, g_.V * sizeof(uint32_t), s));
    CUDA_CHECK(cudaMemcpyAsync(label_ + source, &zero, sizeof zero, cudaMemcpyHostToDevice, s));
  }

  int run(Launcher& L, cudaStream_t s) {
    for (uint32_t level = 0;; ++level) {
      CUDA_CHECK(cudaMemsetAsync(changed_, 0, sizeof(int), s));
      L.walk(BfsAlgo{label_, level, changed_});
      CUDA_CHECK(cudaMemcpyAsync(h_changed_, changed_, sizeof(int), cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      if (!*h_changed_) return static_cast<int>(level) + 1;
    }
  }

  CheckResult check(uint64_t source) {
    auto it = ref_.find(source);
    if (it == ref_.end()) it = ref_.emplace(source, bfs_reference(g_, source)).first;
    std::vector<uint32_t> got(g_.V);
    CUDA_CHECK(cudaMemcpy(got.data(), label_, g_.V * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    return compare_u32(got, it->second);
  }

  const HostGraph& g_;
  uint32_t* label_ = nullptr;
  int* changed_ = nullptr;
  int* h_changed_ = nullptr;
  std::map<uint64_t, std::vector<uint32_t>> ref_;
};

}  // namespace hl

int main(int argc, char** argv) { return hl::traversal_main<hl::BfsProblem>(argc, argv); }
