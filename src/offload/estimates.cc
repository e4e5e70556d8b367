#include "offload/estimates.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "core/error.h"

namespace fabriclab::offload {

namespace {

// Number of children of relative rank vr in the k-nomial tree of P ranks (k = 2: the
// binomial tree): vr's children are vr + j*m, j = 1..k-1, for m = k^0 .. below the
// lowest non-zero base-k digit of vr (the root: every power of k below P).
std::int64_t tree_children(std::int64_t vr, std::int64_t p, std::int64_t k) {
  std::int64_t mask = 1;
  while (mask < p && vr % (k * mask) == 0) mask *= k;
  std::int64_t c = 0;
  for (std::int64_t m = mask / k; m >= 1; m /= k)
    for (std::int64_t j = 1; j < k && vr + j * m < p; ++j) ++c;
  return c;
}

std::int64_t floor_log2(std::int64_t p) {
  std::int64_t k = 0;
  while ((std::int64_t{2} << k) <= p) ++k;
  return k;
}

std::int64_t ceil_log2(std::int64_t p) {
  std::int64_t k = 0;
  while ((std::int64_t{1} << k) < p) ++k;
  return k;
}

// Recursive-doubling family: the fold's even ranks, its odd ranks, everyone else.
std::int64_t by_fold_role(std::int64_t r, std::int64_t p, std::int64_t even, std::int64_t odd, std::int64_t other) {
  const std::int64_t rem = p - (std::int64_t{1} << floor_log2(p));
  if (r < 2 * rem) return r % 2 == 0 ? even : odd;
  return other;
}

using Formula = std::function<std::int64_t(std::int64_t rank)>;

// Counted send completions: every put/atomic's completion is a counter increment.
Formula formula_counted(std::string_view c, std::string_view a, const BuildOptions& o, bool naive) {
  const std::int64_t p = o.ranks, k = floor_log2(p), L = ceil_log2(p);
  const bool ordered = o.ordered_channels;
  auto rel = [p, root = std::int64_t{o.root}](std::int64_t r) { return (r - root + p) % p; };
  auto ge2 = [](std::int64_t x) -> std::int64_t { return x >= 2 ? 1 : 0; };

  if (c == "allreduce" && a == "recursive_doubling")
    return [=](std::int64_t r) {
      return naive ? by_fold_role(r, p, 3, 5 * k + 2, 5 * k - 1) : by_fold_role(r, p, 1, k + 1, k);
    };
  if (c == "allreduce" && a == "rabenseifner")
    return [=](std::int64_t r) {
      return naive ? by_fold_role(r, p, 3, 8 * k + 2, 8 * k - 1) : by_fold_role(r, p, 1, 2 * k + 1, 2 * k);
    };
  if (c == "allgather" && a == "recursive_doubling")
    return [=](std::int64_t r) {
      return naive ? by_fold_role(r, p, 3, 3 * k + 2, 3 * k) : by_fold_role(r, p, 1, k + 1, k);
    };
  if (c == "allreduce" && a == "ring")
    return [=](std::int64_t) { return naive ? 4 * p - 3 : ordered ? 2 : 2 * (p - 1); };
  if ((c == "allgather" || c == "reduce_scatter") && a == "ring")
    return [=](std::int64_t) -> std::int64_t {
      return naive ? 2 * p - 1 : ordered ? std::min<std::int64_t>(2, p - 1) : p - 1;
    };
  if (c == "alltoall" && a == "pairwise") return [=](std::int64_t) { return naive ? 3 * p - 3 : p - 1; };
  if (c == "alltoall" && a == "all_at_once") return [=](std::int64_t) -> std::int64_t { return naive ? 2 * p - 1 : 1; };
  if (c == "barrier" && a == "dissemination") return [=](std::int64_t) { return naive ? 3 * L : L; };
  if ((c == "bcast" || c == "reduce") && (a == "binomial" || a == "knomial")) {
    const std::int64_t radix = a == "knomial" ? o.radix : 2;
    // Root: its sends (or arrivals) plus a trigger counter for a wait on two or more.
    // Others add the arrival (or the send up).
    return [=](std::int64_t r) {
      if (!naive) return std::int64_t{1};
      const std::int64_t vr = rel(r), ch = tree_children(vr, p, radix);
      return (vr == 0 ? 0 : 1) + ch + ge2(ch);
    };
  }
  if ((c == "allreduce" || c == "barrier") && a == "binomial")
    return [=](std::int64_t r) -> std::int64_t {
      const std::int64_t vr = rel(r), ch = tree_children(vr, p, 2);
      if (vr == 0) return naive ? 2 * ch + (ch >= 2 ? ch + 1 : 0) : 1;
      if (ch == 0) return naive ? 3 : 1;
      // Optimized: the reduction's counter and the broadcast's, the host waiting on each
      // (one host_wait on both would need a third: split_waits in assignment_detail.h).
      return naive ? 2 * ch + 3 + ge2(ch) : 2;
    };
  return nullptr;
}

// Uncounted send completions: only arrivals and local atomics increment counters, and
// the recursive-doubling-style chains wait on every earlier arrival. Locally all arrivals
// are concurrent, so every op that waits on two or more of them is relayed and no two
// of those groups can share a counter: counts are arrivals + relay groups (+ what a
// rank's own local atomics add).
Formula formula_uncounted(std::string_view c, std::string_view a, const BuildOptions& o, bool naive) {
  const std::int64_t p = o.ranks, k = floor_log2(p), L = ceil_log2(p);
  const bool ordered = o.ordered_channels;
  auto rel = [p, root = std::int64_t{o.root}](std::int64_t r) { return (r - root + p) % p; };
  auto ge2 = [](std::int64_t x) -> std::int64_t { return x >= 2 ? 1 : 0; };
  // Rounds that wait on the arrivals of all earlier rounds: those with >= 2 are relayed.
  auto chain = [](std::int64_t rounds) { return rounds + std::max<std::int64_t>(0, rounds - 2); };

  if (c == "allreduce" && a == "recursive_doubling")
    return [=](std::int64_t r) {
      return naive ? by_fold_role(r, p, 1, 4 * k, 4 * k - 1) : by_fold_role(r, p, 1, k + 1, k);
    };
  if (c == "allgather" && a == "recursive_doubling")
    return [=](std::int64_t r) { return by_fold_role(r, p, 1, 2 * k + 1, chain(k)); };
  // Naive: 2k arrivals, the k local reduce atomics, and a trigger counter for each op
  // waiting on two or more (rounds 2..k of the reduce-scatter: two each; every allgather
  // put); the fold's odd rank adds its partner's arrival and the put back to it. Optimized:
  // 3k (the k = 1 ranks of P = 2, 3: 2), one fewer with ordered channels; the fold's odd
  // rank two more. Found with the allocator, checked against it for every P in 2..256.
  if (c == "allreduce" && a == "rabenseifner")
    return [=](std::int64_t r) {
      if (naive) return by_fold_role(r, p, 1, 6 * k, 6 * k - 2);
      if (ordered) return by_fold_role(r, p, 1, 3 * k + 1, 3 * k - 1);
      return by_fold_role(r, p, 1, 3 * k + 2, k == 1 ? 2 : 3 * k);
    };
  if (c == "barrier" && a == "dissemination") return [=](std::int64_t) { return chain(L); };
  if (c == "allreduce" && a == "ring")
    return [=](std::int64_t) -> std::int64_t { return !naive && ordered ? 1 : 2 * (p - 1); };
  if ((c == "allgather" || c == "reduce_scatter") && a == "ring")
    return [=](std::int64_t) -> std::int64_t { return !naive && ordered ? 1 : p - 1; };
  if (c == "alltoall" && a == "pairwise") return [=](std::int64_t) { return p - 1; };
  if (c == "alltoall" && a == "all_at_once")
    return [=](std::int64_t) -> std::int64_t { return naive ? p - 1 + ge2(p - 1) : 1; };
  if (c == "bcast" && (a == "binomial" || a == "knomial"))
    return [=](std::int64_t r) -> std::int64_t { return rel(r) == 0 ? 0 : 1; };
  if (c == "reduce" && a == "binomial")
    return [=](std::int64_t r) -> std::int64_t {
      const std::int64_t ch = tree_children(rel(r), p, 2);
      if (!naive) return rel(r) == 0 || ch > 0 ? 1 : 0;
      return ch + ge2(ch);  // arrivals, plus a trigger counter where two or more meet
    };
  if ((c == "allreduce" || c == "barrier") && a == "binomial")
    return [=](std::int64_t r) -> std::int64_t {
      const std::int64_t vr = rel(r), ch = tree_children(vr, p, 2);
      if (vr == 0) return naive ? ch + (ch >= 2 ? ch : 0) : 1;
      if (ch == 0) return 1;
      return naive ? ch + ge2(ch) + 1 : 2;
    };
  return nullptr;
}

}  // namespace

bool estimate_holds_segmented(std::string_view collective, std::string_view algorithm, const BuildOptions& o) {
  return !(collective == "allreduce" && algorithm == "rabenseifner" && !o.count_send_completions);
}

Estimate estimate_counters(std::string_view collective, std::string_view algorithm, const BuildOptions& o,
                           Strategy strategy) {
  // Everything the builder would reject, except the size of the DAG: none is built.
  check_build_options(collective, algorithm, o, /*check_size=*/false);
  const bool naive = strategy == Strategy::naive;
  if (strategy == Strategy::exact)
    throw InputError("the closed-form estimates are for the naive and optimized strategies");
  const Formula f = o.count_send_completions ? formula_counted(collective, algorithm, o, naive)
                                             : formula_uncounted(collective, algorithm, o, naive);
  if (!f) throw std::logic_error(fmt::format("no formula for {}/{}", collective, algorithm));
  Estimate e;
  e.per_rank.resize(static_cast<std::size_t>(o.ranks));
  for (Rank r = 0; r < o.ranks; ++r) {
    const std::int64_t n = f(r);
    e.per_rank[static_cast<std::size_t>(r)] = n;
    e.max = std::max(e.max, n);
    e.total += n;
  }
  return e;
}

}  // namespace fabriclab::offload
