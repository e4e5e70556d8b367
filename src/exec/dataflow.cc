#include "exec/dataflow.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core/random.h"
#include "exec/reference.h"

namespace fabriclab::exec {

using offload::Op;
using offload::OpId;
using offload::OpKind;

namespace {

// dst[i] += src[i] elementwise in the schedule's datatype.
void add_into(offload::Datatype dt, std::byte* dst, const std::byte* src, std::int64_t bytes) {
  auto add = [&]<typename T>(T) {
    for (std::int64_t i = 0; i < bytes / static_cast<std::int64_t>(sizeof(T)); ++i) {
      T a, b;
      std::memcpy(&a, dst + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
      std::memcpy(&b, src + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
      a = static_cast<T>(a + b);
      std::memcpy(dst + i * static_cast<std::int64_t>(sizeof(T)), &a, sizeof(T));
    }
  };
  switch (dt) {
    case offload::Datatype::int64: add(std::int64_t{}); break;
    case offload::Datatype::float64: add(double{}); break;
    case offload::Datatype::float32: add(float{}); break;
  }
}

}  // namespace

std::vector<std::vector<std::byte>> run_dataflow(const offload::Schedule& s, std::int64_t it, std::uint64_t seed) {
  const auto dt = offload::parse_datatype(s.datatype);
  std::vector<std::vector<std::byte>> win(static_cast<std::size_t>(s.ranks()));
  for (Rank r = 0; r < s.ranks(); ++r) {
    auto& w = win[static_cast<std::size_t>(r)];
    w.resize(static_cast<std::size_t>(s.layout.window_bytes));
    prepare_window(s, r, it, w);
  }
  const std::size_t n = s.size();
  // Who waits on whom: an op becomes ready when all its deps have completed.
  std::vector<std::vector<OpId>> children(n);
  std::vector<std::int64_t> missing(n, 0);
  std::vector<OpId> arrival_of(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = s.op(id);
    if (o.kind == OpKind::get) throw std::invalid_argument("run_dataflow: get operations are not supported");
    if (o.kind == OpKind::arrival) {
      arrival_of[static_cast<std::size_t>(s.deps(id)[0])] = id;
      continue;  // lands when its send's data does, not when the send completes
    }
    for (OpId d : s.deps(id)) children[static_cast<std::size_t>(d)].push_back(id);
    missing[i] = static_cast<std::int64_t>(s.deps(id).size());
  }
  // Events: fire(op), complete(op), land(arrival, with the data read at fire).
  enum class Ev : std::uint8_t { fire, complete, land };
  struct Event {
    Ev kind;
    OpId op;
    std::vector<std::byte> data;
  };
  std::vector<Event> enabled;
  for (std::size_t i = 0; i < n; ++i)
    if (s.op(static_cast<OpId>(i)).kind != OpKind::arrival && missing[i] == 0)
      enabled.push_back({Ev::fire, static_cast<OpId>(i), {}});
  RandomStream rng(seed, "dataflow");
  std::size_t completed = 0;
  auto complete = [&](OpId id) {
    ++completed;
    for (OpId c : children[static_cast<std::size_t>(id)])
      if (--missing[static_cast<std::size_t>(c)] == 0) enabled.push_back({Ev::fire, c, {}});
  };
  while (!enabled.empty()) {
    const std::size_t k = rng.below(enabled.size());
    std::swap(enabled[k], enabled.back());
    Event e = std::move(enabled.back());
    enabled.pop_back();
    const Op& o = s.op(e.op);
    switch (e.kind) {
      case Ev::fire: {
        if (!offload::is_data_op(o.kind)) {
          complete(e.op);  // cntr_add and host_wait move no data
          break;
        }
        const auto& src = win[static_cast<std::size_t>(o.rank)];
        std::vector<std::byte> data(src.begin() + o.src_offset, src.begin() + o.src_offset + o.bytes);
        if (o.peer == o.rank && arrival_of[static_cast<std::size_t>(e.op)] < 0) {
          // A local atomic: its write is done when it completes.
          add_into(dt, win[static_cast<std::size_t>(o.rank)].data() + o.dst_offset, data.data(), o.bytes);
          complete(e.op);
          break;
        }
        enabled.push_back({Ev::complete, e.op, {}});
        enabled.push_back({Ev::land, arrival_of[static_cast<std::size_t>(e.op)], std::move(data)});
        break;
      }
      case Ev::complete: complete(e.op); break;
      case Ev::land: {
        // Where the send says (the transports address the target from the send).
        const Op& send = s.op(s.deps(e.op)[0]);
        std::byte* dst = win[static_cast<std::size_t>(o.rank)].data() + send.dst_offset;
        if (o.bytes == 0) {
          // Nothing to move (a barrier's notification).
        } else if (send.kind == OpKind::atomic) {
          add_into(dt, dst, e.data.data(), o.bytes);
        } else {
          std::memcpy(dst, e.data.data(), static_cast<std::size_t>(o.bytes));
        }
        complete(e.op);
        break;
      }
    }
  }
  if (completed != n)
    throw std::logic_error(fmt::format("run_dataflow: {} of {} operations never became ready", n - completed, n));
  return win;
}

}  // namespace fabriclab::exec
