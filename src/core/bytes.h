// Plain values to bytes and back, in the order written: what processes of one run
// exchange (fabric/exchange.h) and what the parts of a model send each other. Bytes are
// copied as they are in memory: both ends run the same binary on the same kind of machine.
//
//   std::vector<std::byte> bytes;
//   ByteWriter w(bytes);
//   w.put(std::uint32_t{7});
//   w.put_text("name");
//   ByteReader r(bytes);
//   r.get<std::uint32_t>();  // 7
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fabriclab {

// Appends plain values to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<std::byte>& out) : out_(out) {}
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_text(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    const std::size_t at = out_.size();
    out_.resize(at + s.size());
    std::memcpy(out_.data() + at, s.data(), s.size());
  }

 private:
  std::vector<std::byte>& out_;
};

// Reads them back in the order written; reading past the end is a logic_error (the
// two ends disagree on what they exchange: a bug, not bad input).
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string get_text() {
    const auto n = get<std::uint64_t>();
    const std::byte* p = take(n);
    return {reinterpret_cast<const char*>(p), n};
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const std::byte* take(std::size_t n) {
    if (n > in_.size() - at_) throw std::logic_error("ByteReader: the bytes end before what they should hold");
    const std::byte* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

}  // namespace fabriclab
