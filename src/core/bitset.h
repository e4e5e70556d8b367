// A fixed-size dynamic bitset with the few whole-set operations the offload analyses need
// (union, masked population counts, counts over a range of positions). std::vector<bool> has no word access and
// std::bitset has a compile-time size, hence this small type.
//
//   fabriclab::DynBitset a(100), b(100);
//   a.set(3); b.set(3); b.set(7);
//   a.count_and(b);  // 1
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabriclab {

class DynBitset {
 public:
  DynBitset() = default;
  explicit DynBitset(std::size_t bits) : bits_(bits), words_((bits + 63) / 64, 0) {}

  std::size_t size() const { return bits_; }
  bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1u; }
  void set(std::size_t i) { words_[i >> 6] |= std::uint64_t{1} << (i & 63); }
  void reset(std::size_t i) { words_[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
  void clear() {
    for (auto& w : words_) w = 0;
  }

  // Sets positions [lo, hi).
  void set_range(std::size_t lo, std::size_t hi) {
    for_words(lo, hi, [&](std::size_t w, std::uint64_t mask) { words_[w] |= mask; });
  }

  DynBitset& operator|=(const DynBitset& o) {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
  }

  std::size_t count() const {
    std::size_t n = 0;
    for (auto w : words_) n += static_cast<std::size_t>(std::popcount(w));
    return n;
  }
  // |this & a|
  std::size_t count_and(const DynBitset& a) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < words_.size(); ++i)
      n += static_cast<std::size_t>(std::popcount(words_[i] & a.words_[i]));
    return n;
  }
  // |this & a & b|
  std::size_t count_and(const DynBitset& a, const DynBitset& b) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < words_.size(); ++i)
      n += static_cast<std::size_t>(std::popcount(words_[i] & a.words_[i] & b.words_[i]));
    return n;
  }
  // |this & ~a & ~b|
  std::size_t count_and_not(const DynBitset& a, const DynBitset& b) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < words_.size(); ++i)
      n += static_cast<std::size_t>(std::popcount(words_[i] & ~a.words_[i] & ~b.words_[i]));
    return n;
  }

  // |this ∩ [lo, hi)|
  std::size_t count_range(std::size_t lo, std::size_t hi) const {
    std::size_t n = 0;
    for_words(lo, hi, [&](std::size_t w, std::uint64_t mask) {
      n += static_cast<std::size_t>(std::popcount(words_[w] & mask));
    });
    return n;
  }

  // |this ∩ a ∩ [lo, hi)|
  std::size_t count_and_range(const DynBitset& a, std::size_t lo, std::size_t hi) const {
    std::size_t n = 0;
    for_words(lo, hi, [&](std::size_t w, std::uint64_t mask) {
      n += static_cast<std::size_t>(std::popcount(words_[w] & a.words_[w] & mask));
    });
    return n;
  }

  // f(i) for every member i in [lo, hi), in increasing order.
  template <typename F>
  void for_each_in(std::size_t lo, std::size_t hi, F&& f) const {
    for_words(lo, hi, [&](std::size_t w, std::uint64_t mask) {
      for (std::uint64_t x = words_[w] & mask; x; x &= x - 1) f(w * 64 + static_cast<std::size_t>(std::countr_zero(x)));
    });
  }

  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      std::uint64_t x = words_[w];
      while (x) {
        f(w * 64 + static_cast<std::size_t>(std::countr_zero(x)));
        x &= x - 1;
      }
    }
  }

  bool operator==(const DynBitset&) const = default;

 private:
  // f(word, mask) for every word that [lo, hi) touches, mask selecting the range's bits.
  template <typename F>
  static void for_words(std::size_t lo, std::size_t hi, F&& f) {
    if (lo >= hi) return;
    const std::size_t first = lo >> 6, last = (hi - 1) >> 6;
    const auto from = [](std::size_t b) { return ~std::uint64_t{0} << (b & 63); };
    const std::uint64_t tail = ~std::uint64_t{0} >> (63 - ((hi - 1) & 63));
    if (first == last) return f(first, from(lo) & tail);
    f(first, from(lo));
    for (std::size_t w = first + 1; w < last; ++w) f(w, ~std::uint64_t{0});
    f(last, tail);
  }

  std::size_t bits_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace fabriclab
