// JSON lines: every program prints one object per line on stdout.
//
// Line types (key "type"):
//   "device"       the GPU the program runs on (see device.cuh);
//   "measurement"  one measurement: "benchmark", "params" (what was measured,
//                  named like the flags), "rep", "metrics" (numbers with the
//                  unit in the key: time_ms, bw_GBps, lat_ns, bytes_B, ...)
//                  and optionally "detail" (arrays, e.g. per-launch times);
//   "trace"        a self-trace that was written (traversal programs);
//   "error"        a failure (check.cuh), then the program exits non-zero;
//   "done"         the last line of a run that finished.
// Non-finite numbers are written as null.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "check.cuh"

namespace hl {

class Json {
 public:
  Json() { buf_ = "{"; }

  Json& str(const char* key, const std::string& v) {
    sep(key);
    buf_ += '"' + json_escape(v) + '"';
    return *this;
  }
  Json& num(const char* key, double v) {
    sep(key);
    buf_ += number(v);
    return *this;
  }
  Json& integer(const char* key, long long v) {
    sep(key);
    buf_ += std::to_string(v);
    return *this;
  }
  Json& uinteger(const char* key, unsigned long long v) {
    sep(key);
    buf_ += std::to_string(v);
    return *this;
  }
  Json& boolean(const char* key, bool v) {
    sep(key);
    buf_ += v ? "true" : "false";
    return *this;
  }
  Json& nums(const char* key, const std::vector<double>& v) {
    sep(key);
    buf_ += '[';
    for (size_t i = 0; i < v.size(); ++i) buf_ += (i ? "," : "") + number(v[i]);
    buf_ += ']';
    return *this;
  }
  Json& uintegers(const char* key, const std::vector<unsigned long long>& v) {
    sep(key);
    buf_ += '[';
    for (size_t i = 0; i < v.size(); ++i) buf_ += (i ? "," : "") + std::to_string(v[i]);
    buf_ += ']';
    return *this;
  }
  Json& begin(const char* key) {
    sep(key);
    buf_ += '{';
    first_ = true;
    return *this;
  }
  Json& end() {
    buf_ += '}';
    first_ = false;
    return *this;
  }
  void print() {
    buf_ += '}';
    std::fputs(buf_.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }

  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    if (v == std::floor(v) && std::fabs(v) < 9e15) {
      char b[32];
      std::snprintf(b, sizeof b, "%.0f", v);
      return b;
    }
    char b[32];
    std::snprintf(b, sizeof b, "%.9g", v);
    return b;
  }

 private:
  void sep(const char* key) {
    if (!first_) buf_ += ',';
    first_ = false;
    buf_ += '"';
    buf_ += key;
    buf_ += "\":";
  }
  std::string buf_;
  bool first_ = true;
};

inline void print_done(const char* program) {
  Json j;
  j.str("type", "done").str("program", program).print();
}

}  // namespace hl
