// The happens-before graph H of triggered-ops.md section 1, seen from one rank: for each
// operation of the rank, which other operations of the same rank are its ancestors and
// descendants in H. Counter safety only ever compares operations of one rank (counters
// are per NIC), so this projection is all the analyses need.
//
// Two analyses build it:
// - global: H over all ranks, then projected. Exact, but quadratic in the total number
//   of operations, so meant for P up to about 64.
// - local: the rank alone, with arrivals unconstrained (any arrival may land at any
//   time). It has fewer edges than H, so every down-set of H is one of its down-sets:
//   an assignment it proves safe is safe (sound), at a cost linear in the rank's size.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/params.h"
#include "core/index_set.h"
#include "offload/schedule.h"

namespace fabriclab::offload {

enum class Analysis : std::uint8_t { local, global };
inline constexpr params::EnumNames<Analysis, 2> kAnalysisNames{
    {{Analysis::local, "local"}, {Analysis::global, "global"}}};
std::string_view to_string(Analysis a);
Analysis parse_analysis(std::string_view s);  // throws InputError

// One rank's operations with their local parents (dependences realised through
// counters) and their order in H. Local indices follow issue order, with each arrival
// placed just before its first local consumer.
struct RankView {
  Rank rank = 0;
  std::vector<OpId> ops;  // local index -> schedule op id
  std::vector<OpKind> kind;
  std::vector<std::int64_t> weight;                // what the op adds to the counter it increments
  std::vector<char> incrementer;                   // completes into (or adds to) a counter
  std::vector<std::vector<std::int32_t>> parents;  // local indices
  std::vector<IndexSet> anc, desc;                 // strict ancestors / descendants in H
  // Local edges that generate H in the local analysis (parents + transport orderings);
  // the key of the rank-symmetry cache.
  std::vector<std::vector<std::int32_t>> after;

  std::int32_t size() const { return static_cast<std::int32_t>(ops.size()); }
  bool has_heavy_weights = false;
};

// Op lists and parents for every rank, without H (cheap).
std::vector<RankView> rank_views(const Schedule& s);

// Fills anc/desc of every view by the chosen analysis. Global throws InputError when the
// schedule is too large for it (more than `kMaxGlobalOps` operations).
inline constexpr std::size_t kMaxGlobalOps = 60000;
void compute_order(const Schedule& s, Analysis a, std::vector<RankView>& views);
// Local analysis of a single view (anc/desc from its parents and after edges), in time
// and memory close to linear in the view for chain-like ranks (IndexSet runs).
void compute_local_order(RankView& v);

// The graphs themselves, as successor lists, for analyses that walk them rather than
// holding anc/desc (quadratic in the rank's size): H over all operations (node = op id),
// and one rank's local graph (node = local index).
std::vector<std::vector<std::int32_t>> global_successors(const Schedule& s);
std::vector<std::vector<std::int32_t>> local_successors(const RankView& v);
// A topological order of a DAG given by successor lists; throws InputError on a cycle.
std::vector<std::int32_t> topological_order(const std::vector<std::vector<std::int32_t>>& succ);

// Strict descendants of every node of a DAG as IndexSets, built only while they stay
// small: nullopt as soon as the work of the unions (runs merged; a set turned bitset
// counts n/64) passes `budget`. A chain costs O(n); a tangled graph gives up early.
std::optional<std::vector<IndexSet>> descendants_within(const std::vector<std::vector<std::int32_t>>& succ,
                                                        std::size_t budget);

}  // namespace fabriclab::offload
