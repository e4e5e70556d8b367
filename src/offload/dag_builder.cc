#include "offload/dag_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fabriclab::offload {

DagBuilder::DagBuilder(std::string_view collective, std::string_view algorithm, const BuildOptions& o)
    : o_(o), s_(o.ranks) {
  s_.collective = std::string(collective);
  s_.algorithm = std::string(algorithm);
  s_.datatype = std::string(to_string(o.datatype));
  s_.bytes = o.bytes;
  s_.root = o.root;
  s_.ordered_channels = o.ordered_channels;
  // (Room for the whole DAG: a vector grown by doubling copies it all, page by new page.)
  const auto ops = static_cast<std::size_t>(
      std::clamp<std::int64_t>(projected_ops(collective, algorithm, o.ranks), 0, kMaxBuildOps));
  s_.reserve(ops, 2 * ops);
}

void DagBuilder::check_local_deps(Rank r, std::span<const OpId> deps) const {
  for (OpId d : deps) {
    const Op& p = s_.op(d);
    if (p.rank != r || (is_data_op(p.kind) && !p.counted))
      throw std::logic_error(fmt::format("builder {}/{}: rank {} depends on op {} that is remote or uncounted",
                                         s_.collective, s_.algorithm, r, d));
  }
}

Transfer DagBuilder::transfer(OpKind kind, Rank from, Rank to, std::int64_t bytes, Place at,
                              std::span<const OpId> deps) {
  check_local_deps(from, deps);
  Op send{.kind = kind, .rank = from, .peer = to, .bytes = bytes};
  send.src_offset = at.src;
  send.dst_offset = at.dst;
  send.counted = o_.count_send_completions;
  const OpId sid = s_.add(send, deps);
  std::vector<OpId> after;
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32) |
                            static_cast<std::uint32_t>(to);
  if (o_.ordered_channels) {
    auto it = last_arrival_.find(key);
    if (it != last_arrival_.end()) after.push_back(it->second);
  }
  const OpId one[] = {sid};
  Op arrival{.kind = OpKind::arrival, .rank = to, .peer = from, .bytes = bytes};
  arrival.dst_offset = at.dst;
  const OpId aid = s_.add(arrival, one, after);
  if (o_.ordered_channels) last_arrival_[key] = aid;
  has_local_child_.resize(s_.size(), 0);
  for (OpId d : deps) has_local_child_[static_cast<std::size_t>(d)] = 1;
  return {sid, aid};
}

Transfer DagBuilder::put(Rank from, Rank to, std::int64_t bytes, Place at, std::span<const OpId> deps) {
  return transfer(OpKind::put, from, to, bytes, at, deps);
}

Transfer DagBuilder::atomic(Rank from, Rank to, std::int64_t bytes, Place at, std::span<const OpId> deps) {
  return transfer(OpKind::atomic, from, to, bytes, at, deps);
}

OpId DagBuilder::local_atomic(Rank r, std::int64_t bytes, Place at, std::span<const OpId> deps) {
  check_local_deps(r, deps);
  Op op{.kind = OpKind::atomic, .rank = r, .peer = r, .bytes = bytes};
  op.src_offset = at.src;
  op.dst_offset = at.dst;
  const OpId id = s_.add(op, deps);
  has_local_child_.resize(s_.size(), 0);
  for (OpId d : deps) has_local_child_[static_cast<std::size_t>(d)] = 1;
  return id;
}

void DagBuilder::set_layout(std::int64_t window_bytes, const std::function<std::int64_t(Rank)>& input,
                            const std::function<std::int64_t(Rank)>& output) {
  DataLayout& l = s_.layout;
  // A window of at least one element, so that even a barrier has memory to register.
  l.window_bytes = std::max<std::int64_t>(window_bytes, 8);
  l.input_offset.resize(static_cast<std::size_t>(o_.ranks));
  l.output_offset.resize(static_cast<std::size_t>(o_.ranks));
  for (Rank r = 0; r < o_.ranks; ++r) {
    l.input_offset[static_cast<std::size_t>(r)] = input(r);
    l.output_offset[static_cast<std::size_t>(r)] = output(r);
  }
}

Schedule DagBuilder::finish() {
  const std::int64_t w = s_.layout.window_bytes;
  if (w == 0) throw std::logic_error(fmt::format("builder {}/{} set no data layout", s_.collective, s_.algorithm));
  for (std::size_t i = 0; i < s_.size(); ++i) {
    const Op& op = s_.op(static_cast<OpId>(i));
    if (!is_data_op(op.kind)) continue;
    if (op.src_offset < 0 || op.dst_offset < 0 || op.src_offset + op.bytes > w || op.dst_offset + op.bytes > w)
      throw std::logic_error(fmt::format("builder {}/{}: op {} moves [{}, +{}) to [{}, +{}) outside the {}-byte window",
                                         s_.collective, s_.algorithm, i, op.src_offset, op.bytes, op.dst_offset,
                                         op.bytes, w));
  }
  has_local_child_.resize(s_.size(), 0);
  std::vector<std::vector<OpId>> sinks(static_cast<std::size_t>(o_.ranks));
  for (std::size_t i = 0; i < s_.size(); ++i) {
    const Op& op = s_.op(static_cast<OpId>(i));
    const bool observable = op.kind == OpKind::arrival || (is_data_op(op.kind) && op.counted);
    if (observable && !has_local_child_[i]) sinks[static_cast<std::size_t>(op.rank)].push_back(static_cast<OpId>(i));
  }
  for (Rank r = 0; r < o_.ranks; ++r) {
    const auto& k = sinks[static_cast<std::size_t>(r)];
    if (!k.empty()) s_.add({.kind = OpKind::host_wait, .rank = r}, k);
  }
  return std::move(s_);
}

std::int64_t chunk_offset(std::int64_t bytes, Datatype dt, std::int64_t parts, std::int64_t c) {
  const std::int64_t esize = datatype_size(dt);
  const std::int64_t elements = std::max<std::int64_t>(1, (bytes + esize - 1) / esize);
  const std::int64_t base = elements / parts, extra = elements % parts;
  return (c * base + std::min(c, extra)) * esize;
}

std::int64_t chunk_bytes(std::int64_t bytes, Datatype dt, std::int64_t parts, std::int64_t c) {
  return chunk_offset(bytes, dt, parts, c + 1) - chunk_offset(bytes, dt, parts, c);
}

}  // namespace fabriclab::offload
