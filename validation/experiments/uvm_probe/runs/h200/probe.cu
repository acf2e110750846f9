// Scratch probe: UVM first touch (same kernel as gpu_kernels/micro/uvm_touch.cu)
// with CUPTI unified-memory counters: GPU fault groups and HtoD migrations.
// usage: probe SIZE_MiB PATTERN(seq|random) ADVICE(none|readmostly) WARPS(0=full) CSV TAG
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <string>
#include <algorithm>
#include <cuda_runtime.h>
#include <cupti.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
#define CU(x) do { CUptiResult r = (x); if (r != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r, &s); fprintf(stderr, "%s: %s\n", #x, s); exit(1);} } while (0)

constexpr uint64_t kPerm = 2654435761ull;

template <bool RANDOM>
__global__ void touch(const unsigned* buf, uint64_t nblocks, unsigned* sink) {
  const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  const uint64_t warp = tid / 32, nwarps = ((uint64_t)gridDim.x * blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  unsigned acc = 0;
  if (!RANDOM) {
    for (uint64_t b = warp; b < nblocks; b += nwarps) acc += buf[b * 32 + lane];
  } else {
    const uint64_t per = (nblocks + nwarps - 1) / nwarps;
    const uint64_t last = min(nblocks, (warp + 1) * per);
    for (uint64_t j = warp * per; j < last; ++j) acc += buf[((j * kPerm) % nblocks) * 32 + lane];
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

struct Rec { int kind; unsigned long long start, end, value, addr; int flags; };
static std::vector<Rec> g_recs;

static void CUPTIAPI buf_req(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  *size = 8 << 20;
  *buffer = (uint8_t*)aligned_alloc(8, *size);
  *maxRecords = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validSize) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
      auto* r = (CUpti_ActivityUnifiedMemoryCounter2*)record;
      g_recs.push_back({(int)r->counterKind, (unsigned long long)r->start, (unsigned long long)r->end,
                        (unsigned long long)r->value, (unsigned long long)r->address, (int)r->flags});
    }
  }
  free(buffer);
}

int main(int argc, char** argv) {
  if (argc < 7) { fprintf(stderr, "usage\n"); return 2; }
  size_t size = (size_t)atoll(argv[1]) << 20;
  bool random = std::string(argv[2]) == "random";
  std::string advice = argv[3];
  long warps_req = atol(argv[4]);
  FILE* csv = fopen(argv[5], "a");
  std::string tag = argv[6];
  bool cupti = argc < 8 || atoi(argv[7]) != 0;

  CK(cudaSetDevice(0));
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  if (cupti) {
    CUpti_ActivityUnifiedMemoryCounterConfig cfg[3];
    memset(cfg, 0, sizeof cfg);
    CUpti_ActivityUnifiedMemoryCounterKind kinds[3] = {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
                                                      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
                                                      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT};
    for (int i = 0; i < 3; ++i) {
      cfg[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
      cfg[i].kind = kinds[i]; cfg[i].deviceId = 0; cfg[i].enable = 1;
    }
    CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
    CU(cuptiActivityConfigureUnifiedMemoryCounter(cfg, 3));
    CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER));
  }
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, touch<false>, 256, 0));
  uint64_t warps = warps_req ? (uint64_t)warps_req : (uint64_t)occ * p.multiProcessorCount * 8;
  unsigned grid = (unsigned)((warps + 7) / 8);
  warps = (uint64_t)grid * 8;
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  {  // warm-up
    void* w; CK(cudaMallocManaged(&w, 2 << 20)); memset(w, 1, 2 << 20);
    touch<false><<<grid, 256, 0, st>>>((const unsigned*)w, (2 << 20) / 128, sink);
    CK(cudaStreamSynchronize(st)); CK(cudaFree(w));
  }
  if (cupti) { CU(cuptiActivityFlushAll(1)); g_recs.clear(); }
  void* b; CK(cudaMallocManaged(&b, size));
  memset(b, 1, size);
  if (advice == "readmostly") {
    cudaMemLocation loc{}; loc.type = cudaMemLocationTypeDevice; loc.id = 0;
    CK(cudaMemAdvise(b, size, cudaMemAdviseSetReadMostly, loc));
  }
  CK(cudaStreamSynchronize(st));
  if (cupti) { CU(cuptiActivityFlushAll(1)); g_recs.clear(); }
  CK(cudaEventRecord(e0, st));
  if (random) touch<true><<<grid, 256, 0, st>>>((const unsigned*)b, size / 128, sink);
  else touch<false><<<grid, 256, 0, st>>>((const unsigned*)b, size / 128, sink);
  CK(cudaEventRecord(e1, st));
  CK(cudaEventSynchronize(e1));
  float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
  if (cupti) CU(cuptiActivityFlushAll(1));
  CK(cudaFree(b));
  // summary
  unsigned long long base = ~0ull, lastend = 0;
  for (auto& r : g_recs) { base = std::min(base, r.start); lastend = std::max(lastend, r.end); }
  size_t ngroups = 0, nfaults = 0, nhtod = 0; unsigned long long htod_B = 0, cpu_faults = 0;
  std::vector<double> gdur, hsz;
  for (auto& r : g_recs) {
    if (r.kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT) { ngroups++; nfaults += r.value; gdur.push_back((r.end - r.start) * 1e-3); }
    if (r.kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD) { nhtod++; htod_B += r.value; hsz.push_back(r.value); }
    if (r.kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT) cpu_faults += r.value;
    fprintf(csv, "%s,%d,%llu,%llu,%llu,%llx,%d\n", tag.c_str(), r.kind, r.start - base, r.end - base, r.value, r.addr, r.flags);
  }
  std::sort(gdur.begin(), gdur.end()); std::sort(hsz.begin(), hsz.end());
  printf("{\"tag\":\"%s\",\"size_MiB\":%zu,\"pattern\":\"%s\",\"advice\":\"%s\",\"warps\":%llu,\"time_ms\":%.4f,"
         "\"span_us\":%.1f,\"fault_groups\":%zu,\"faults\":%zu,\"group_us_med\":%.2f,\"htod_n\":%zu,\"htod_MiB\":%.2f,"
         "\"htod_med_KiB\":%.1f,\"cpu_faults\":%llu}\n",
         tag.c_str(), size >> 20, random ? "random" : "seq", advice.c_str(), (unsigned long long)warps, ms,
         (lastend - base) * 1e-3, ngroups, nfaults, gdur.empty() ? 0 : gdur[gdur.size() / 2], nhtod, htod_B / 1048576.0,
         hsz.empty() ? 0 : hsz[hsz.size() / 2] / 1024.0, cpu_faults);
  fclose(csv);
  return 0;
}
