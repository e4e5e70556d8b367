#include "offload/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "core/random.h"

namespace fabriclab::offload {

namespace {

constexpr std::size_t kMaxViolationsPerMethod = 5;

std::string name_op(const Schedule& s, OpId id) {
  const Op& o = s.op(id);
  return fmt::format("op {} ({} on rank {})", id, to_string(o.kind), o.rank);
}

std::string list_ops(const std::vector<OpId>& ids, std::size_t limit = 12) {
  std::string out;
  for (std::size_t i = 0; i < ids.size() && i < limit; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > limit) out += fmt::format(", ... ({} in all)", ids.size());
  return "[" + out + "]";
}

// ---------------------------------------------------------------------------------------
// Method 1: the exact rule.

// Checks every triggered operation of one rank; `v` carries anc/desc.
void check_rule_rank(const Schedule& s, Analysis a, const RankView& v, std::size_t& reported, VerifyReport& rep) {
  // I(K) of each counter of the rank, over the rank's local ops.
  std::vector<std::int32_t> local(s.counter_count(), -1);
  std::vector<DynBitset> inc;
  for (std::size_t i = 0; i < v.ops.size(); ++i) {
    const CounterId c = s.op(v.ops[i]).increments();
    if (c == kNoCounter) continue;
    auto& l = local[static_cast<std::size_t>(c)];
    if (l < 0) {
      l = static_cast<std::int32_t>(inc.size());
      inc.emplace_back(v.ops.size());
    }
    inc[static_cast<std::size_t>(l)].set(i);
  }
  const DynBitset none(v.ops.size());
  for (std::size_t i = 0; i < v.ops.size(); ++i) {
    const Op& o = s.op(v.ops[i]);
    if (o.trigger == kNoCounter || v.parents[i].empty()) continue;
    const auto l = local[static_cast<std::size_t>(o.trigger)];
    const DynBitset& I = l < 0 ? none : inc[static_cast<std::size_t>(l)];
    const std::int64_t total = v.weight_of(I);
    for (auto p : v.parents[i]) {
      // Everything on K that does not need p: I \ Up(p).
      DynBitset up = v.desc[static_cast<std::size_t>(p)];
      up.set(static_cast<std::size_t>(p));
      const std::int64_t without_p = total - v.weight_of_and(I, up);
      if (without_p < o.threshold) continue;
      rep.safe_by_rule = false;
      if (reported++ >= kMaxViolationsPerMethod) continue;
      std::vector<OpId> witness;
      I.for_each([&](std::size_t x) {
        if (!up.test(x)) witness.push_back(v.ops[x]);
      });
      rep.violations.push_back(
          {Violation::Kind::early, "rule", v.ops[i],
           fmt::format("{} can fire before its parent op {}: it waits for {} >= {}, "
                       "and the incrementers {} that do not need op {} can complete first "
                       "and bring the counter to {} ({} analysis)",
                       name_op(s, v.ops[i]), v.ops[static_cast<std::size_t>(p)], s.counter_label(o.trigger),
                       o.threshold, list_ops(witness), v.ops[static_cast<std::size_t>(p)], without_p, to_string(a))});
    }
  }
}

void check_rule(const Schedule& s, Analysis a, VerifyReport& rep) {
  auto views = rank_views(s);
  std::size_t reported = 0;
  if (a == Analysis::global) {
    compute_order(s, a, views);
    for (const auto& v : views) check_rule_rank(s, a, v, reported, rep);
    return;
  }
  // One rank at a time, so memory stays at one rank's order.
  for (auto& v : views) {
    compute_local_order(v);
    check_rule_rank(s, a, v, reported, rep);
    v.anc.clear();
    v.desc.clear();
  }
}

// ---------------------------------------------------------------------------------------
// The executor shared by the fixpoint and the adversary.

// What the executor looks up, built once per schedule and shared by every copy of the
// executor state (the exhaustive search copies states, not this).
struct ExecIndex {
  explicit ExecIndex(const Schedule& sched) : s(&sched) {
    const auto n = sched.size();
    waiters.resize(sched.counter_count());
    arrivals_of.resize(n);
    after_children.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto id = static_cast<OpId>(i);
      const Op& o = sched.op(id);
      if (o.kind == OpKind::arrival) arrivals_of[static_cast<std::size_t>(sched.deps(id)[0])].push_back(id);
      if (o.trigger != kNoCounter) waiters[static_cast<std::size_t>(o.trigger)].push_back(id);
      for (OpId b : sched.after(id)) after_children[static_cast<std::size_t>(b)].push_back(id);
    }
    // Released in threshold order, then issue order.
    for (auto& w : waiters)
      std::stable_sort(w.begin(), w.end(),
                       [&](OpId a, OpId b) { return sched.op(a).threshold < sched.op(b).threshold; });
  }
  const Schedule* s;
  std::vector<std::vector<OpId>> waiters, arrivals_of, after_children;
};

// Executes a schedule the way a NIC does: an operation fires the instant its counter
// reaches its threshold; which pending completion or arrival happens next is chosen
// from outside (complete_at), by the adversary.
class Executor {
 public:
  explicit Executor(const ExecIndex& x) : x_(&x), s_(x.s) {
    const auto n = s_->size();
    value_.assign(s_->counter_count(), 0);
    cursor_.assign(s_->counter_count(), 0);
    fired_.assign(n, 0);
    completed_.assign(n, 0);
    source_fired_.assign(n, 0);
    after_pending_.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      after_pending_[i] = static_cast<std::int32_t>(s_->after(static_cast<OpId>(i)).size());
  }

  // Posts the schedule: fires every untriggered op, and every op whose threshold its
  // counter already meets (a NIC fires those at posting). Returns false on an early
  // firing (see violation()).
  bool start() {
    for (std::size_t i = 0; i < s_->size(); ++i) {
      const Op& o = s_->op(static_cast<OpId>(i));
      if (o.kind != OpKind::arrival && o.fires_at_start()) ready_.push_back(static_cast<OpId>(i));
    }
    for (std::size_t c = 0; c < value_.size(); ++c) release(c);
    return settle();
  }

  // The fixpoint keeps executing past an early firing (recorded once) so that liveness
  // is still decided; the adversary stops at the first one.
  void keep_going_after_violations() { stop_on_violation_ = false; }
  bool violated() const { return !violation_.empty(); }

  // Events the adversary may pick: fired data ops not completed, and arrivals whose
  // initiator fired and whose transport predecessors have landed.
  const std::vector<OpId>& enabled() const { return enabled_; }

  // Completes the k-th enabled event.
  bool complete_at(std::size_t k) {
    const OpId id = enabled_[k];
    enabled_[k] = enabled_.back();
    enabled_.pop_back();
    trace_.push_back(id);
    finish(id);
    return settle();
  }

  std::int64_t value(CounterId c) const { return value_[static_cast<std::size_t>(c)]; }
  const std::string& violation() const { return violation_; }
  OpId violating_op() const { return violating_op_; }
  const std::vector<char>& completed_set() const { return completed_; }

  // Ops that never completed (fired, for host_wait), with why.
  std::vector<std::string> hangs(std::vector<OpId>* ids) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s_->size(); ++i) {
      if (completed_[i]) continue;
      const auto id = static_cast<OpId>(i);
      const Op& o = s_->op(id);
      if (o.kind == OpKind::arrival) {
        if (fired_[static_cast<std::size_t>(s_->deps(id)[0])]) continue;  // its source is reported
        ids->push_back(id);
        out.push_back(
            fmt::format("{} never landed: its initiator op {} never fired", name_op(*s_, id), s_->deps(id)[0]));
      } else if (!fired_[i]) {
        ids->push_back(id);
        out.push_back(fmt::format("{} never fired: {} stopped at {} < threshold {}", name_op(*s_, id),
                                  s_->counter_label(o.trigger), value(o.trigger), o.threshold));
      }
    }
    return out;
  }

 private:
  // Fires everything made ready, breadth first (counter adds may cascade: no
  // recursion, so chains of any length are fine).
  bool settle() {
    while (head_ < ready_.size()) {
      if (!fire(ready_[head_++]) && stop_on_violation_) return false;
    }
    ready_.clear();
    head_ = 0;
    return true;
  }

  // Queues the waiters of counter c whose threshold its value meets, in threshold order.
  void release(std::size_t c) {
    const auto& w = x_->waiters[c];
    while (cursor_[c] < w.size() && s_->op(w[cursor_[c]]).threshold <= value_[c]) ready_.push_back(w[cursor_[c]++]);
  }

  bool fire(OpId id) {
    const auto i = static_cast<std::size_t>(id);
    fired_[i] = 1;
    const Op& o = s_->op(id);
    bool ok = true;
    for (OpId d : s_->deps(id)) {
      if (completed_[static_cast<std::size_t>(d)]) continue;
      ok = false;
      if (violation_.empty()) {
        violating_op_ = id;
        violation_ = fmt::format("{} fired when {} reached {} (threshold {}) while its parent {} had not "
                                 "completed; completions so far, in order: {}",
                                 name_op(*s_, id), s_->counter_label(o.trigger),
                                 o.trigger == kNoCounter ? 0 : value(o.trigger), o.threshold, name_op(*s_, d),
                                 list_ops(trace_, 40));
      }
      break;
    }
    if (!ok && stop_on_violation_) return false;
    if (is_data_op(o.kind)) {
      enabled_.push_back(id);
      for (OpId a : x_->arrivals_of[i]) {
        source_fired_[static_cast<std::size_t>(a)] = 1;
        if (after_pending_[static_cast<std::size_t>(a)] == 0) enabled_.push_back(a);
      }
    } else {
      finish(id);  // cntr_add and host_wait complete when they fire
    }
    return ok;
  }

  void finish(OpId id) {
    const auto i = static_cast<std::size_t>(id);
    completed_[i] = 1;
    const Op& o = s_->op(id);
    for (OpId a : x_->after_children[i]) {
      const auto ai = static_cast<std::size_t>(a);
      if (--after_pending_[ai] == 0 && source_fired_[ai]) enabled_.push_back(a);
    }
    const CounterId c = o.increments();
    if (c == kNoCounter) return;
    value_[static_cast<std::size_t>(c)] += o.weight();
    release(static_cast<std::size_t>(c));
  }

  const ExecIndex* x_;
  const Schedule* s_;
  std::vector<std::int64_t> value_;
  std::vector<std::size_t> cursor_;
  std::vector<char> fired_, completed_, source_fired_;
  std::vector<std::int32_t> after_pending_;
  std::vector<OpId> enabled_, trace_;
  std::vector<OpId> ready_;  // made ready, not yet fired
  std::size_t head_ = 0;
  bool stop_on_violation_ = true;
  std::string violation_;
  OpId violating_op_ = -1;
};

void check_fixpoint(const ExecIndex& ix, VerifyReport& rep) {
  Executor x(ix);
  x.keep_going_after_violations();
  x.start();
  // Completing every enabled event in any order reaches the same fixpoint (firing is
  // monotone in the counter values).
  while (!x.enabled().empty()) x.complete_at(x.enabled().size() - 1);
  if (x.violated()) {
    rep.safe_by_execution = false;
    rep.violations.push_back({Violation::Kind::early, "fixpoint", x.violating_op(), x.violation()});
  }
  std::vector<OpId> ids;
  auto hangs = x.hangs(&ids);
  if (hangs.empty()) return;
  rep.live_by_fixpoint = false;
  for (std::size_t k = 0; k < hangs.size() && k < kMaxViolationsPerMethod; ++k)
    rep.violations.push_back({Violation::Kind::hang, "fixpoint", ids[k], hangs[k]});
}

bool random_run(const ExecIndex& ix, std::uint64_t seed, VerifyReport& rep) {
  Executor x(ix);
  RandomStream rng(seed, "verifier/adversary");
  bool ok = x.start();
  while (ok && !x.enabled().empty()) {
    const auto& e = x.enabled();
    ok = x.complete_at(rng.below(e.size()));
  }
  if (ok) return true;
  rep.violations.push_back(
      {Violation::Kind::early, fmt::format("random seed {}", seed), x.violating_op(), x.violation()});
  return false;
}

struct StateHash {
  std::size_t operator()(const std::vector<char>& v) const {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : v) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return static_cast<std::size_t>(h);
  }
};

// Depth-first over every reachable set of completed operations. The state is the
// completed set: counter values and fired operations follow from it.
void exhaustive(const ExecIndex& ix, std::size_t limit, VerifyReport& rep) {
  std::unordered_set<std::vector<char>, StateHash> seen;
  Executor x0(ix);
  if (!x0.start()) {
    rep.safe_by_execution = false;
    rep.violations.push_back({Violation::Kind::early, "exhaustive", x0.violating_op(), x0.violation()});
    return;
  }
  std::vector<Executor> stack{x0};
  seen.insert(x0.completed_set());
  while (!stack.empty()) {
    Executor x = std::move(stack.back());
    stack.pop_back();
    for (std::size_t k = 0; k < x.enabled().size(); ++k) {
      Executor y = x;
      if (!y.complete_at(k)) {
        rep.safe_by_execution = false;
        rep.exhaustive_states = seen.size();
        rep.violations.push_back({Violation::Kind::early, "exhaustive", y.violating_op(), y.violation()});
        return;
      }
      if (!seen.insert(y.completed_set()).second) continue;
      if (seen.size() > limit) {
        rep.exhaustive_states = seen.size();
        return;  // incomplete
      }
      stack.push_back(std::move(y));
    }
  }
  rep.exhaustive_states = seen.size();
  rep.exhaustive_complete = true;
}

}  // namespace

VerifyReport verify(const Schedule& s, const VerifyOptions& opt) {
  validate(s, true);
  VerifyReport rep;
  rep.analysis = opt.analysis;
  if (rep.analysis == Analysis::global && s.size() > kMaxGlobalOps) rep.analysis = Analysis::local;
  if (opt.rule) check_rule(s, rep.analysis, rep);
  const ExecIndex ix(s);
  check_fixpoint(ix, rep);
  for (int k = 0; k < opt.random_runs; ++k) {
    ++rep.random_runs;
    if (!random_run(ix, opt.seed + static_cast<std::uint64_t>(k), rep)) {
      rep.safe_by_execution = false;
      break;
    }
  }
  if (opt.exhaustive_state_limit > 0 && s.size() <= opt.exhaustive_max_ops && rep.safe_by_execution)
    exhaustive(ix, opt.exhaustive_state_limit, rep);
  return rep;
}

}  // namespace fabriclab::offload
