#include "exec/reference.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "offload/dag_builder.h"

namespace fabriclab::exec {

namespace {

Datatype datatype_of(const Schedule& s) { return offload::parse_datatype(s.datatype); }

std::int64_t element_size(const Schedule& s) { return offload::datatype_size(datatype_of(s)); }

// Element e of a buffer of the schedule's datatype, as an integer (inputs and outputs
// are integers by construction; a non-integer output is reported as it is).
double load(Datatype dt, std::span<const std::byte> buf, std::int64_t e) {
  switch (dt) {
    case Datatype::int64: {
      std::int64_t v;
      std::memcpy(&v, buf.data() + e * 8, 8);
      return static_cast<double>(v);
    }
    case Datatype::float64: {
      double v;
      std::memcpy(&v, buf.data() + e * 8, 8);
      return v;
    }
    case Datatype::float32: {
      float v;
      std::memcpy(&v, buf.data() + e * 4, 4);
      return static_cast<double>(v);
    }
  }
  return 0;
}

void store(Datatype dt, std::span<std::byte> buf, std::int64_t e, std::int64_t value) {
  switch (dt) {
    case Datatype::int64: std::memcpy(buf.data() + e * 8, &value, 8); return;
    case Datatype::float64: {
      const auto v = static_cast<double>(value);
      std::memcpy(buf.data() + e * 8, &v, 8);
      return;
    }
    case Datatype::float32: {
      const auto v = static_cast<float>(value);
      std::memcpy(buf.data() + e * 4, &v, 4);
      return;
    }
  }
}

// The expected value of element e of rank r's output.
std::int64_t expected(const Schedule& s, Rank r, std::int64_t it, std::int64_t e) {
  const Rank p = s.ranks();
  const std::int64_t esize = element_size(s);
  auto sum = [&](std::int64_t elem) {
    std::int64_t v = 0;
    for (Rank q = 0; q < p; ++q) v += input_value(q, it, elem);
    return v;
  };
  const std::int64_t block = s.bytes / esize;  // elements per block
  if (s.collective == "allreduce" || s.collective == "reduce") return sum(e);
  if (s.collective == "bcast") return input_value(s.root, it, e);
  if (s.collective == "allgather") return input_value(static_cast<Rank>(e / block), it, e % block);
  if (s.collective == "reduce_scatter") return sum(offload::chunk_offset(s.bytes, datatype_of(s), p, r) / esize + e);
  if (s.collective == "alltoall") {
    // Block j of r's output is block r of j's input.
    const auto j = static_cast<Rank>(e / block);
    return input_value(j, it, r * block + e % block);
  }
  throw std::logic_error(fmt::format("no reference for collective '{}'", s.collective));
}

}  // namespace

Shape shape(const Schedule& s, Rank r) {
  const std::int64_t n = s.bytes;
  const Rank p = s.ranks();
  const std::string& c = s.collective;
  if (c == "barrier") return {};
  if (c == "allreduce") return {n, n};
  if (c == "reduce") return {n, r == s.root ? n : 0};
  if (c == "bcast") return {r == s.root ? n : 0, n};
  if (c == "allgather") return {n, p * n};
  if (c == "reduce_scatter") return {n, offload::chunk_bytes(n, datatype_of(s), p, r)};
  if (c == "alltoall") return {p * n, p * n};
  throw InputError(fmt::format("collective '{}' has no reference result to check against", c));
}

std::int64_t input_value(Rank r, std::int64_t it, std::int64_t e) {
  return (static_cast<std::int64_t>(r) * 131 + e * 7 + it * 29) % 1000 + 1;
}

void fill_input(const Schedule& s, Rank r, std::int64_t it, std::span<std::byte> out) {
  const Datatype dt = datatype_of(s);
  const std::int64_t esize = element_size(s);
  const auto n = static_cast<std::int64_t>(out.size()) / esize;
  for (std::int64_t e = 0; e < n; ++e) store(dt, out, e, input_value(r, it, e));
}

void prepare_window(const Schedule& s, Rank r, std::int64_t it, std::span<std::byte> window) {
  const auto& l = s.layout;
  if (l.empty()) throw InputError("the schedule has no data layout: it cannot be executed");
  std::memset(window.data(), 0, window.size());
  const Shape sh = shape(s, r);
  const std::int64_t in = l.input_offset[static_cast<std::size_t>(r)];
  if (in + sh.input_bytes > static_cast<std::int64_t>(window.size()))
    throw std::logic_error("input outside the window");
  fill_input(s, r, it, window.subspan(static_cast<std::size_t>(in), static_cast<std::size_t>(sh.input_bytes)));
  for (const auto& c : l.prologue)
    if (c.rank == r)
      std::memmove(window.data() + c.dst_offset, window.data() + c.src_offset, static_cast<std::size_t>(c.bytes));
}

std::optional<std::string> check_output(const Schedule& s, Rank r, std::int64_t it, std::span<const std::byte> window) {
  const Shape sh = shape(s, r);
  if (sh.output_bytes == 0) return std::nullopt;
  const Datatype dt = datatype_of(s);
  const std::int64_t esize = element_size(s);
  const std::int64_t out = s.layout.output_offset[static_cast<std::size_t>(r)];
  const auto buf = window.subspan(static_cast<std::size_t>(out), static_cast<std::size_t>(sh.output_bytes));
  for (std::int64_t e = 0; e < sh.output_bytes / esize; ++e) {
    const double got = load(dt, buf, e);
    const std::int64_t want = expected(s, r, it, e);
    if (got != static_cast<double>(want))
      return fmt::format("rank {}: output element {} (window byte {}) is {}; {} of the "
                         "inputs gives {}",
                         r, e, out + e * esize, got, s.collective, want);
  }
  return std::nullopt;
}

}  // namespace fabriclab::exec
