// Error handling shared by every program in gpu_kernels/.
//
// Every CUDA call goes through CUDA_CHECK; every launch is followed by
// LAUNCH_CHECK (the launch error, then, where the caller wants it, the
// kernel's completion). A failure prints one JSON line of type "error" on
// stdout (so the harness records it) and a one-line message on stderr, then
// exits with status 1. Bad flags exit with status 2; a refused request (for
// example managed memory beyond the safety limit) exits with status 3.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

namespace hl {

inline std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

enum ExitCode { kExitCudaError = 1, kExitUsage = 2, kExitRefused = 3, kExitCheckFailed = 4 };

[[noreturn]] inline void fail(int code, const char* kind, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  std::fflush(stdout);
  std::printf("{\"type\":\"error\",\"kind\":\"%s\",\"message\":\"%s\"}\n", kind,
              json_escape(msg).c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", msg);
  std::exit(code);
}

inline void cuda_check(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) {
    fail(kExitCudaError, "cuda", "%s failed at %s:%d: %s (%s)", what, file, line,
         cudaGetErrorString(err), cudaGetErrorName(err));
  }
}

}  // namespace hl

#define CUDA_CHECK(call) ::hl::cuda_check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: the launch error now; the kernel's own error
// surfaces at the next synchronising call, which is itself checked.
#define LAUNCH_CHECK(name) ::hl::cuda_check(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)
// After a launch whose completion the caller waits for anyway.
#define LAUNCH_SYNC_CHECK(name)                                                        \
  do {                                                                                 \
    ::hl::cuda_check(cudaGetLastError(), "launch of " name, __FILE__, __LINE__);       \
    ::hl::cuda_check(cudaDeviceSynchronize(), "kernel " name, __FILE__, __LINE__);     \
  } while (0)
