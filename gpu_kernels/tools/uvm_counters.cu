// uvm_counters: a CUPTI injection library that records what the unified-memory
// (UVM) driver does while an unmodified CUDA program runs: GPU page-fault
// groups, CPU page faults, host<->device migrations, and the kernels and
// memcpys around them, one CSV row per CUPTI record.
//
// Usage (any CUDA program, nothing rebuilt; one command line):
//   HOSTLINK_UVM_COUNTERS_OUT=uvm.csv
//   CUDA_INJECTION64_PATH=/abs/path/gpu_kernels/bin/libuvm_counters.so
//   gpu_kernels/bin/bfs --graph G --memory-mode uvm
// The CUDA driver loads the library at cuInit and calls InitializeInjection.
//   HOSTLINK_UVM_COUNTERS_OUT     the CSV to write (required; unset: one line
//                                 on stderr, nothing recorded)
//   HOSTLINK_UVM_COUNTERS_DEVICE  the CUDA device whose unified-memory
//                                 counters are recorded (default: the device
//                                 of the program's first context)
// Summarise with `hostlink validate uvm-counters uvm.csv`
// (hostlink.validation.uvm_counters).
//
// CSV: header `record,kind,start_ns,end_ns,value,address,name`, then one row
// per record, in the order CUPTI delivers them (not sorted by time):
//   record  kind        value                        address         name
//   uvm     htod, dtoh  bytes migrated               base (hex)      migration cause
//   uvm     gpu_fault   faults in the fault group    faulting page   access type
//   uvm     cpu_fault   program counter (count rows) faulting page   access type
//   kernel  kernel      CTAs in the grid             (empty)         demangled kernel name
//   memcpy  htod, dtoh, dtod, ...  bytes             (empty)         (empty)
// Times are CUPTI timestamps in ns (one clock for every record). end_ns of a
// cpu_fault row is not meaningful. Lines starting with '#' are notes: counters
// the device does not support, records CUPTI dropped or left incomplete.
//
// Recording slows the program (the driver reports every fault group and
// migration), so the program's own timings under it are not its normal ones.
// Errors never stop the program: a failing CUPTI call prints one line on
// stderr (`uvm_counters: CALL: MESSAGE`) and recording goes on without it.
#include <cupti.h>
#include <cxxabi.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

#if CUPTI_API_VERSION >= 130000
using UmRecord = CUpti_ActivityUnifiedMemoryCounter3;
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
#else
using UmRecord = CUpti_ActivityUnifiedMemoryCounter2;
using KernelRecord = CUpti_ActivityKernel9;
using MemcpyRecord = CUpti_ActivityMemcpy5;
#endif

constexpr size_t kBufferBytes = 8u << 20;
constexpr char kHeader[] = "record,kind,start_ns,end_ns,value,address,name\n";

std::mutex g_mutex;  // guards everything below
FILE* g_out = nullptr;
unsigned long long g_dropped = 0, g_incomplete = 0;

bool ok(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = "unknown CUPTI error";
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "uvm_counters: %s: %s\n", call, msg);
  return false;
}

void note(const char* text) {  // a '#' line in the CSV
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_out) std::fprintf(g_out, "# %s\n", text);
}

const char* um_kind(CUpti_ActivityUnifiedMemoryCounterKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD: return "htod";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH: return "dtoh";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT: return "cpu_fault";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT: return "gpu_fault";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING: return "thrashing";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING: return "throttling";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP: return "remote_map";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD: return "dtod";
    default: return "unknown";
  }
}

// flags: the migration cause of a transfer, the access type of a fault.
const char* um_detail(const UmRecord* r) {
  static const char* const cause[] = {"unknown", "user", "coherence", "prefetch", "eviction", "access_counters"};
  static const char* const access[] = {"unknown", "read", "write", "atomic", "prefetch"};
  switch (r->counterKind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
      return r->flags < 6 ? cause[r->flags] : "unknown";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT:
      return r->flags < 5 ? access[r->flags] : "unknown";
    default: return "";
  }
}

const char* memcpy_kind(uint8_t k) {
  static const char* const names[] = {"unknown", "htod", "dtoh", "htoa", "atoh", "atoa",
                                      "atod",    "dtoa", "dtod", "htoh", "ptop"};
  return k < 11 ? names[k] : "unknown";
}

// A CSV field, quoted when it holds a comma, quote or line break.
void put_text(const char* s) {
  if (!std::strpbrk(s, ",\"\n\r")) {
    std::fputs(s, g_out);
    return;
  }
  std::fputc('"', g_out);
  for (; *s; ++s) {
    if (*s == '"') std::fputc('"', g_out);
    std::fputc(*s, g_out);
  }
  std::fputc('"', g_out);
}

void write_kernel(const KernelRecord* k) {
  if (k->end == 0 || k->end < k->start) {  // delivered by a forced flush before it finished
    ++g_incomplete;
    return;
  }
  const long long ctas = (long long)k->gridX * k->gridY * k->gridZ;
  std::fprintf(g_out, "kernel,kernel,%llu,%llu,%lld,,", (unsigned long long)k->start, (unsigned long long)k->end, ctas);
  int status = -1;
  char* demangled = k->name ? abi::__cxa_demangle(k->name, nullptr, nullptr, &status) : nullptr;
  put_text(status == 0 && demangled ? demangled : (k->name ? k->name : ""));
  std::free(demangled);
  std::fputc('\n', g_out);
}

void write_memcpy(const MemcpyRecord* m) {
  if (m->end == 0 || m->end < m->start) {
    ++g_incomplete;
    return;
  }
  std::fprintf(g_out, "memcpy,%s,%llu,%llu,%llu,,\n", memcpy_kind(m->copyKind), (unsigned long long)m->start,
               (unsigned long long)m->end, (unsigned long long)m->bytes);
}

void write_um(const UmRecord* u) {
  std::fprintf(g_out, "uvm,%s,%llu,%llu,%llu,0x%llx,%s\n", um_kind(u->counterKind), (unsigned long long)u->start,
               (unsigned long long)u->end, (unsigned long long)u->value, (unsigned long long)u->address,
               um_detail(u));
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_out) {
      CUpti_Activity* r = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        switch (r->kind) {
          case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: write_um(reinterpret_cast<const UmRecord*>(r)); break;
          case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: write_kernel(reinterpret_cast<const KernelRecord*>(r)); break;
          case CUPTI_ACTIVITY_KIND_MEMCPY: write_memcpy(reinterpret_cast<const MemcpyRecord*>(r)); break;
          default: break;
        }
      }
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
    }
  }
  std::free(buffer);
}

void flush_all() { ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll"); }


void at_exit() {
  flush_all();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_out) return;
  if (g_dropped) {
    std::fprintf(g_out, "# dropped records: %llu\n", g_dropped);
    std::fprintf(stderr, "uvm_counters: CUPTI dropped %llu records\n", g_dropped);
  }
  if (g_incomplete) std::fprintf(g_out, "# incomplete records skipped: %llu\n", g_incomplete);
  std::fclose(g_out);
  g_out = nullptr;
}

CUpti_ActivityUnifiedMemoryCounterConfig counter(CUpti_ActivityUnifiedMemoryCounterKind kind, uint32_t device) {
  CUpti_ActivityUnifiedMemoryCounterConfig c;
  std::memset(&c, 0, sizeof c);
  c.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
  c.kind = kind;
  c.deviceId = device;
  c.enable = 1;
  return c;
}

// Configures every counter the device takes; notes the others. False: none.
bool configure_counters(uint32_t device) {
  const CUpti_ActivityUnifiedMemoryCounterKind wanted[] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT};
  constexpr uint32_t n_wanted = sizeof wanted / sizeof wanted[0];
  CUpti_ActivityUnifiedMemoryCounterConfig cfg[n_wanted];
  for (uint32_t i = 0; i < n_wanted; ++i) cfg[i] = counter(wanted[i], device);
  if (cuptiActivityConfigureUnifiedMemoryCounter(cfg, n_wanted) == CUPTI_SUCCESS) return true;
  // One at a time, to find the ones the device refuses.
  uint32_t n = 0;
  for (uint32_t i = 0; i < n_wanted; ++i) {
    CUpti_ActivityUnifiedMemoryCounterConfig one = counter(wanted[i], device);
    const CUptiResult r = cuptiActivityConfigureUnifiedMemoryCounter(&one, 1);
    if (r == CUPTI_SUCCESS) {
      cfg[n++] = one;
      continue;
    }
    const char* msg = "unknown CUPTI error";
    cuptiGetResultString(r, &msg);
    char text[256];
    std::snprintf(text, sizeof text, "not recorded: %s (%s)", um_kind(wanted[i]), msg);
    note(text);
    std::fprintf(stderr, "uvm_counters: cuptiActivityConfigureUnifiedMemoryCounter(%s): %s\n", um_kind(wanted[i]), msg);
  }
  return n > 0 && ok(cuptiActivityConfigureUnifiedMemoryCounter(cfg, n), "cuptiActivityConfigureUnifiedMemoryCounter");
}

// Unified-memory counters can be enabled only once the driver is up (during
// cuInit CUPTI answers CUPTI_ERROR_NOT_READY): at the first context, for
// HOSTLINK_UVM_COUNTERS_DEVICE or else that context's device. Managed memory
// needs a context, so nothing is missed.
constexpr uint32_t kContextDevice = ~0u;
uint32_t g_um_device = kContextDevice;

void start_counters(CUcontext ctx) {
  static std::once_flag once;
  std::call_once(once, [ctx] {
    uint32_t device = g_um_device;
    if (device == kContextDevice && !(ctx && cuptiGetDeviceId(ctx, &device) == CUPTI_SUCCESS)) device = 0;
    if (!configure_counters(device) ||
        !ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER), "cuptiActivityEnable(UNIFIED_MEMORY_COUNTER)"))
      note("not recorded: unified-memory counters");
  });
}

// The first context starts the counters; a context's teardown (cudaDeviceReset)
// collects its records while it still exists.
void CUPTIAPI on_resource(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  if (id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) start_counters(static_cast<const CUpti_ResourceData*>(data)->context);
  if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) flush_all();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool initialized = false;
  if (initialized) return 1;
  initialized = true;

  const char* path = std::getenv("HOSTLINK_UVM_COUNTERS_OUT");
  if (!path || !*path) {
    std::fprintf(stderr, "uvm_counters: HOSTLINK_UVM_COUNTERS_OUT is not set; nothing recorded\n");
    return 1;
  }
  const char* dev = std::getenv("HOSTLINK_UVM_COUNTERS_DEVICE");
  if (dev && *dev) g_um_device = static_cast<uint32_t>(std::strtoul(dev, nullptr, 10));

  // No CUPTI callback can run before cuptiActivityRegisterCallbacks: g_out is ours until then.
  g_out = std::fopen(path, "w");
  if (!g_out) {
    std::fprintf(stderr, "uvm_counters: cannot write %s: %s; nothing recorded\n", path, std::strerror(errno));
    return 1;
  }
  std::fputs(kHeader, g_out);
  if (!ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks")) {
    note("not recorded: anything (cuptiActivityRegisterCallbacks failed)");
    std::fclose(g_out);
    g_out = nullptr;
    return 1;
  }
  if (!ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)"))
    note("not recorded: kernels");
  if (!ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)")) note("not recorded: memcpys");

  CUpti_SubscriberHandle subscriber;
  if (ok(cuptiSubscribe(&subscriber, on_resource, nullptr), "cuptiSubscribe") &&
      ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED),
         "cuptiEnableCallback(CONTEXT_CREATED)")) {
    ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
       "cuptiEnableCallback(CONTEXT_DESTROY_STARTING)");
  } else {
    start_counters(nullptr);  // no callbacks (another CUPTI client?): try now
  }
  std::atexit(at_exit);
  return 1;
}
