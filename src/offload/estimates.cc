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
std::int64_t by_fold_role(std::int64_t r, std::int64_t p, std::int64_t even, std::int64_t odd,
                          std::int64_t other) {
  const std::int64_t rem = p - (std::int64_t{1} << floor_log2(p));
  if (r < 2 * rem) return r % 2 == 0 ? even : odd;
  return other;
}

using Formula = std::function<std::int64_t(std::int64_t rank)>;

Formula formula(std::string_view c, std::string_view a, const BuildOptions& o, bool naive) {
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
      return naive ? by_fold_role(r, p, 3, 8 * k + 2, 8 * k - 1)
                   : by_fold_role(r, p, 1, 2 * k + 1, 2 * k);
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
  if (c == "alltoall" && a == "pairwise")
    return [=](std::int64_t) { return naive ? 3 * p - 3 : p - 1; };
  if (c == "alltoall" && a == "all_at_once")
    return [=](std::int64_t) -> std::int64_t { return naive ? 2 * p - 1 : 1; };
  if (c == "barrier" && a == "dissemination")
    return [=](std::int64_t) { return naive ? 3 * L : L; };
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
      return naive ? 2 * ch + 3 + ge2(ch) : 3;
    };
  return nullptr;
}

}  // namespace

bool has_estimate(const BuildOptions& o) { return o.count_send_completions; }

Estimate estimate_counters(std::string_view collective, std::string_view algorithm,
                           const BuildOptions& o, Strategy strategy) {
  // Everything the builder would reject, except the size of the DAG: none is built.
  check_build_options(collective, algorithm, o, /*check_size=*/false);
  if (!has_estimate(o))
    throw InputError(fmt::format(
        "no closed-form estimate for {} {} with uncounted send completions yet; run the "
        "allocator (fabriclab counters) for this case",
        collective, algorithm));
  const Formula f = formula(collective, algorithm, o, strategy == Strategy::naive);
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
