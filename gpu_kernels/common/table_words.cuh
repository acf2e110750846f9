#pragma once
// A table of 4 B words every program can rebuild and check: word k holds
// (uint32) mix64(k ^ kTableSalt), mix64 being SplitMix64's output function
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014), also the programs' hash of row ids and random lines.
#include <cstdint>
#include <thread>
#include <vector>

namespace hl {

constexpr uint64_t kTableSalt = 0x5eed5eedULL;

__host__ __device__ inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__host__ __device__ inline uint32_t word_of(uint64_t k) { return static_cast<uint32_t>(mix64(k ^ kTableSalt)); }

// Run body(t) for t = 0 .. threads-1, each on its own host thread, and wait for them.
template <class F>
void on_threads(int threads, F body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
}

// Write words 0 .. n-1 of a host table with `threads` threads.
inline void fill_words(uint32_t* words, uint64_t n, int threads) {
  on_threads(threads, [=](int t) {
    for (uint64_t k = n * t / threads; k < n * (t + 1) / threads; ++k) words[k] = word_of(k);
  });
}

}  // namespace hl
