// Counts every heap allocation of the program that includes this header (in one
// translation unit: it replaces the global operator new and delete), so that a benchmark
// can show that a run's steady state allocates nothing per packet or operation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
// Relaxed: the partitioned run's threads allocate too, and only the total matters.
std::atomic<std::uint64_t> allocations{0}, allocated_bytes{0};
void* counted(std::size_t n, std::size_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  allocated_bytes.fetch_add(n, std::memory_order_relaxed);
  if (n == 0) n = 1;
  if (align > alignof(std::max_align_t) && n > SIZE_MAX - align) throw std::bad_alloc();
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n)
                                               : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted(n, 0); }
void* operator new[](std::size_t n) { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
