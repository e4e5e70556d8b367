#include "nicmodel/model.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace fabriclab::nicmodel {

using offload::CounterId;
using offload::kNoCounter;
using offload::Op;
using offload::OpId;
using offload::OpKind;

namespace {
// A NIC's events (the model's own: issues and completions happen in step()).
enum Kind : std::uint64_t { kNicDone = 2, kDeliver = 3, kPosted = 4 };
std::uint64_t tag(Kind k, std::uint64_t job, std::uint64_t x = 0) { return k << 60 | job << 40 | x; }
bool triggered_kind(OpKind k) { return offload::is_data_op(k) || k == OpKind::cntr_add; }

// What copies of the model send each other starts with the parts the sender runs (those
// with a simulator there): their number, then each.
void write_own_parts(ByteWriter& out, const std::vector<Simulator*>& sims) {
  out.put(static_cast<std::uint32_t>(std::count_if(sims.begin(), sims.end(), [](auto* s) { return s; })));
  for (std::uint32_t p = 0; p < sims.size(); ++p)
    if (sims[p]) out.put(p);
}
// Those parts, read: each must be run elsewhere (no simulator here), once.
std::vector<std::uint8_t> their_parts(ByteReader& in, const std::vector<Simulator*>& sims) {
  std::vector<std::uint8_t> theirs(sims.size(), 0);
  for (auto n = in.get<std::uint32_t>(); n > 0; --n) {
    const auto p = in.get<std::uint32_t>();
    if (p >= sims.size() || sims[p] || theirs[p])
      throw std::logic_error("NIC model: another copy sent part " + std::to_string(p) + ", which is not its own");
    theirs[p] = 1;
  }
  return theirs;
}
}  // namespace

// What each policy allows a collective that cannot start offloaded.
offload::WhenShort when_short(Policy p) {
  switch (p) {
    case Policy::stall: return {.wait = true, .software = false};
    case Policy::fallback: return {.wait = false, .software = true};
    case Policy::advise: return {.wait = true, .software = true};
  }
  throw std::logic_error("NIC model: unknown policy");
}

// A schedule flattened for the event loop: what each operation does when it is processed
// and completes, each counter's operations in threshold order, and the software path's
// successor lists, in flat arrays (schedules reach millions of operations, and every job
// running the same schedule shares one of these). Operations and counters carry the
// model's own ids (see prepare()); lists whose order matters keep the schedule's order.
struct PreparedSchedule {
  std::shared_ptr<const offload::Schedule> of;  // kept alive: jobs are matched to it by address
  struct Step {
    std::int64_t bytes = 0;  // data op: its message's size
    std::int64_t add = 1;    // what `inc` gets when the op completes
    offload::Rank rank = 0;
    offload::Rank peer = offload::kNoRank;  // data op: its target
    CounterId trigger = kNoCounter;
    CounterId inc = kNoCounter;    // counter incremented on completion (none: not counted)
    CounterId touch = kNoCounter;  // arrival, cntr_add: the counter it increments on the NIC
    OpId arrival = -1;             // data op: the arrival it lands as (-1: none)
    OpKind kind = OpKind::put;
  };
  struct Fire {
    std::int64_t threshold;
    OpId op;
    bool host_wait;
  };
  std::vector<Step> steps;                           // per op
  std::vector<std::uint32_t> fire_begin;             // per counter (+1): its range of `fires`
  std::vector<Fire> fires;                           // by counter, then threshold, then schedule id
  std::vector<CounterId> fire_at_zero;               // counters with an op at threshold 0, by schedule id
  std::vector<OpId> start_ops;                       // triggered ops without a trigger, by schedule id
  std::vector<std::uint32_t> child_begin;            // per op (+1): its range of `children`
  std::vector<OpId> children;                        // software path: successors, by schedule id
  std::vector<std::int32_t> deps;                    // software path: number of dependences per op
  std::vector<std::uint32_t> dep_begin;              // per op (+1): its range of `dep_list`
  std::vector<OpId> dep_list;                        // dependences, checked done before an op fires
  std::vector<OpId> software_roots;                  // non-arrival ops without dependences, by schedule id
  std::vector<OpId> orig;                            // per op: its id in the schedule (for messages)
  std::vector<CounterId> counter_orig;               // per counter: its id in the schedule
  std::vector<std::int64_t> final_value;             // per counter: its value once every op is done
  std::vector<offload::NicResources> need_per_rank;  // counters and slots held while offloaded
  std::vector<std::int64_t> ops_per_rank;
  std::vector<offload::Rank> counter_rank;  // per counter: the rank that owns it
  std::int64_t host_waits = 0;
};

// One job's progress. Its per-op and per-counter arrays are dropped once the host has
// seen it complete and its last operation is done.
struct OffloadModel::Running {
  const PreparedSchedule* c = nullptr;
  bool offloaded = false;
  struct Counter {
    std::int64_t value = 0;
    std::uint32_t next = 0, end = 0;  // its fires not fired yet: [next, end) of PreparedSchedule::fires
  };
  std::vector<Counter> counter;             // offloaded (one line per counter touched)
  std::vector<std::uint8_t> done;           // offloaded: per op (checked before an op fires)
  std::vector<std::int32_t> deps_left;      // software path
  std::vector<offload::NicResources> need;  // per NIC: held while offloaded
  bool queued = false, issued = false, completed = false;
};

OffloadModel::OffloadModel(NicParams p, std::int32_t nics, Policy policy) : p_(p), policy_(policy) {
  if (nics < 1) throw InputError("the NIC model needs at least one NIC");
  if (p.bandwidth.bps() <= 0) throw InputError("NIC model: the bandwidth must be positive");
  if (p.host_poll <= Time()) throw InputError("NIC model: the host poll interval must be positive");
  if (p.counters < 1 || p.slots < 1 || p.cache_entries < 1)
    throw InputError("NIC model: counters, slots and cache entries must be at least 1");
  for (std::int32_t i = 0; i < nics; ++i)
    nics_.push_back(std::make_unique<Nic>(*this, i, NicPool(p.counters, p.slots), CounterCache(p.cache_entries)));
  free_.assign(static_cast<std::size_t>(nics), {});
}

OffloadModel::OffloadModel(NicParams p, std::int32_t nics, Policy policy, Transport& transport)
    : OffloadModel(p, nics, policy) {
  transport_ = &transport;
}

OffloadModel::~OffloadModel() = default;

std::shared_ptr<const PreparedSchedule> prepare(std::shared_ptr<const offload::Schedule> schedule) {
  if (!schedule) throw InputError("NIC model: prepare() needs a schedule");
  const offload::Schedule& s = *schedule;
  offload::validate(s, /*assigned=*/true);
  auto c = std::make_shared<PreparedSchedule>();
  c->of = std::move(schedule);
  const std::size_t n = s.size(), counters = s.counter_count();
  if (n >= (std::size_t{1} << 31))
    throw InputError("NIC model: schedules of 2^31 operations or more are not supported");
  const auto at = [](auto i) { return static_cast<std::size_t>(i); };

  // Successors, by schedule id.
  std::vector<std::uint32_t> succ_begin(n + 1, 0);
  for (OpId id = 0; id < static_cast<OpId>(n); ++id)
    for (OpId d : s.deps(id)) ++succ_begin[at(d) + 1];
  for (std::size_t k = 0; k < n; ++k) succ_begin[k + 1] += succ_begin[k];
  std::vector<OpId> succ(succ_begin[n]);
  {
    std::vector<std::uint32_t> fill(succ_begin.begin(), succ_begin.end() - 1);
    for (OpId id = 0; id < static_cast<OpId>(n); ++id)
      for (OpId d : s.deps(id)) succ[fill[at(d)]++] = id;
  }

  // The model's own numbering, for locality: operations by depth in the DAG (longest
  // path from a root), then schedule id, so that what runs at about the same time (a
  // step of every rank) sits together in memory; counters in the order those operations
  // first name them. Every order the model observes -- a counter's operations by
  // threshold, successors, the operations that start a collective -- is still taken by
  // schedule id below, so the numbering changes no result.
  std::vector<std::int32_t> depth(n, 0), left(n);
  std::vector<OpId> ready;
  ready.reserve(n);
  for (OpId id = 0; id < static_cast<OpId>(n); ++id)
    if ((left[at(id)] = static_cast<std::int32_t>(s.deps(id).size())) == 0) ready.push_back(id);
  for (std::size_t k = 0; k < ready.size(); ++k)
    for (auto e = succ_begin[at(ready[k])]; e < succ_begin[at(ready[k]) + 1]; ++e) {
      const OpId ch = succ[e];
      depth[at(ch)] = std::max(depth[at(ch)], depth[at(ready[k])] + 1);
      if (--left[at(ch)] == 0) ready.push_back(ch);
    }
  const std::int32_t depths = n ? *std::max_element(depth.begin(), depth.end()) + 1 : 0;
  std::vector<std::uint32_t> by_depth(at(depths) + 1, 0);
  for (std::size_t k = 0; k < n; ++k) ++by_depth[at(depth[k]) + 1];
  for (std::size_t k = 0; k < at(depths); ++k) by_depth[k + 1] += by_depth[k];
  std::vector<OpId> mine(n);  // schedule id -> model id
  c->orig.resize(n);
  for (OpId id = 0; id < static_cast<OpId>(n); ++id) {
    const auto m = static_cast<OpId>(by_depth[at(depth[at(id)])]++);
    mine[at(id)] = m;
    c->orig[at(m)] = id;
  }
  std::vector<CounterId> counter(counters, kNoCounter);  // schedule id -> model id
  CounterId named = 0;
  auto name = [&](CounterId k) {
    if (k != kNoCounter && counter[at(k)] == kNoCounter) counter[at(k)] = named++;
  };
  for (OpId m = 0; m < static_cast<OpId>(n); ++m) {
    const Op& o = s.op(c->orig[at(m)]);
    name(o.trigger);
    name(o.increments());
    name(o.completion);
  }
  for (std::size_t k = 0; k < counters; ++k) name(static_cast<CounterId>(k));
  auto ctr = [&](CounterId k) { return k == kNoCounter ? kNoCounter : counter[at(k)]; };
  c->counter_orig.resize(counters);
  for (std::size_t k = 0; k < counters; ++k) c->counter_orig[at(counter[k])] = static_cast<CounterId>(k);
  c->final_value.assign(counters, 0);

  c->steps.resize(n);
  c->deps.resize(n);
  c->fire_begin.assign(counters + 1, 0);
  c->child_begin.assign(n + 1, 0);
  c->dep_begin.assign(n + 1, 0);
  for (OpId m = 0; m < static_cast<OpId>(n); ++m) {
    const OpId id = c->orig[at(m)];
    const Op& o = s.op(id);
    PreparedSchedule::Step& st = c->steps[at(m)];
    st.kind = o.kind;
    st.rank = o.rank;
    st.peer = o.peer;
    st.trigger = ctr(o.trigger);
    if (o.kind == OpKind::cntr_add) {
      st.inc = ctr(o.target);
      st.add = o.add;
    } else if (o.counted) {
      st.inc = ctr(o.completion);
    }
    if (o.kind == OpKind::arrival || o.kind == OpKind::cntr_add) st.touch = ctr(o.increments());
    if (st.inc != kNoCounter) c->final_value[at(st.inc)] += st.add;
    st.bytes = o.bytes;
    if (o.kind == OpKind::arrival) c->steps[at(mine[at(s.deps(id)[0])])].arrival = m;
    const auto deps = s.deps(id);
    c->deps[at(m)] = static_cast<std::int32_t>(deps.size());
    c->dep_begin[at(m) + 1] = c->dep_begin[at(m)] + static_cast<std::uint32_t>(deps.size());
    for (OpId d : deps) c->dep_list.push_back(mine[at(d)]);
    c->child_begin[at(m) + 1] = succ_begin[at(id) + 1] - succ_begin[at(id)];
  }
  for (std::size_t k = 0; k < n; ++k) c->child_begin[k + 1] += c->child_begin[k];
  c->children.resize(c->child_begin[n]);
  for (OpId m = 0; m < static_cast<OpId>(n); ++m) {
    const OpId id = c->orig[at(m)];
    auto out = c->children.begin() + c->child_begin[at(m)];
    for (auto e = succ_begin[at(id)]; e < succ_begin[at(id) + 1]; ++e) *out++ = mine[at(succ[e])];  // by schedule id
  }
  // In schedule-id order: the lists whose order the model observes.
  for (OpId id = 0; id < static_cast<OpId>(n); ++id) {
    const Op& o = s.op(id);
    if (o.kind == OpKind::host_wait) ++c->host_waits;
    if (triggered_kind(o.kind) && o.fires_at_start()) c->start_ops.push_back(mine[at(id)]);
    if (s.deps(id).empty() && o.kind != OpKind::arrival) c->software_roots.push_back(mine[at(id)]);
    if (o.kind != OpKind::arrival && !o.fires_at_start()) ++c->fire_begin[at(ctr(o.trigger)) + 1];
  }
  for (std::size_t k = 0; k < counters; ++k) c->fire_begin[k + 1] += c->fire_begin[k];
  c->fires.resize(c->fire_begin[counters]);
  {
    std::vector<std::uint32_t> fill(c->fire_begin.begin(), c->fire_begin.end() - 1);
    for (OpId id = 0; id < static_cast<OpId>(n); ++id) {
      const Op& o = s.op(id);
      if (o.kind != OpKind::arrival && !o.fires_at_start())
        c->fires[fill[at(ctr(o.trigger))]++] = {o.threshold, mine[at(id)], o.kind == OpKind::host_wait};
    }
  }
  for (std::size_t k = 0; k < counters; ++k) {
    const auto b = c->fires.begin() + c->fire_begin[k], e = c->fires.begin() + c->fire_begin[k + 1];
    std::stable_sort(b, e, [](const PreparedSchedule::Fire& x, const PreparedSchedule::Fire& y) {
      return x.threshold < y.threshold;
    });
  }
  // Counters with an operation at threshold 0, by schedule id (the order they fire in).
  for (std::size_t k = 0; k < counters; ++k) {
    const auto b = c->fire_begin[at(counter[k])], e = c->fire_begin[at(counter[k]) + 1];
    if (b != e && c->fires[b].threshold <= 0) c->fire_at_zero.push_back(counter[k]);
  }
  c->need_per_rank = offload::needs_per_rank(s);
  c->ops_per_rank.assign(static_cast<std::size_t>(s.ranks()), 0);
  for (const PreparedSchedule::Step& st : c->steps) ++c->ops_per_rank[at(st.rank)];
  c->counter_rank.resize(counters);
  for (std::size_t k = 0; k < counters; ++k) c->counter_rank[k] = s.counter_owner(c->counter_orig[k]);
  return c;
}

void OffloadModel::add(Job job) {
  const std::string what = "job '" + job.name + "'";
  if (!job.schedule) throw InputError(what + ": no schedule");
  const offload::Schedule& s = *job.schedule;
  if (job.nic_of_rank.size() != static_cast<std::size_t>(s.ranks()))
    throw InputError(what + ": " + std::to_string(job.nic_of_rank.size()) + " NICs given for " +
                     std::to_string(s.ranks()) + " ranks");
  for (auto n : job.nic_of_rank)
    if (n < 0 || n >= static_cast<std::int32_t>(nics_.size()))
      throw InputError(what + ": NIC " + std::to_string(n) + " does not exist (0.." + std::to_string(nics_.size() - 1) +
                       ")");
  if (job.prepared && job.prepared->of.get() != &s)
    throw InputError(what + ": its prepared schedule is another schedule's");
  if (bound_) throw std::logic_error("NIC model: add() after bind()");
  if (jobs_.size() >= (std::size_t{1} << 20)) throw InputError(what + ": the NIC model takes at most 2^20 collectives");
  std::shared_ptr<const PreparedSchedule>& known = prepared_[&s];
  if (!known) known = job.prepared ? job.prepared : prepare(job.schedule);
  const PreparedSchedule& c = *known;
  if (c.host_waits == 0)
    throw InputError(what + ": the schedule has no host_wait, so its host could never see it complete");
  if (job.issue < Time()) throw InputError(what + ": issue time must not be negative");
  const auto j = static_cast<std::uint32_t>(jobs_.size());
  jobs_.push_back(std::move(job));
  JobResult res;
  res.name = jobs_.back().name;
  res.issue = jobs_.back().issue;
  results_.push_back(std::move(res));
  running_.push_back(std::make_unique<Running>());
  // What it would hold on each NIC.
  Running& r = *running_.back();
  r.c = &c;
  r.need.assign(nics_.size(), {});
  for (offload::Rank k = 0; k < s.ranks(); ++k) {
    const auto n = static_cast<std::size_t>(nic_of(j, k));
    r.need[n].counters += c.need_per_rank[static_cast<std::size_t>(k)].counters;
    r.need[n].slots += c.need_per_rank[static_cast<std::size_t>(k)].slots;
  }
  issued_after_.emplace_back();
  const Job& added = jobs_.back();
  if (added.after >= static_cast<std::int32_t>(j) || added.after < -1)
    throw InputError(what + ": it can only follow an earlier job");
  // Could it ever be offloaded: the decision on idle NICs.
  std::fill(free_.begin(), free_.end(), idle());
  const offload::OffloadDecision d = offload::decide(r.need, free_, idle(),
                                                     when_short(jobs_.back().policy.value_or(policy_)));
  results_.back().could_never_offload = d.why == offload::OffloadDecision::Why::never_fits;
  if (d.decision == offload::Decision::refuse)
    throw NegativeAnswer(what + ": needs " + std::to_string(r.need[d.nic].counters) + " counters and " +
                         std::to_string(r.need[d.nic].slots) + " slots on NIC " + std::to_string(d.nic) +
                         ", which has " + std::to_string(p_.counters) + " and " + std::to_string(p_.slots) +
                         ": it could never start (use the fallback policy)");
  if (added.held && added.after >= 0) throw InputError(what + ": a held job cannot also follow another");
  if (added.held) return;
  if (added.after >= 0) {
    issued_after_[static_cast<std::size_t>(added.after)].push_back(j);
    return;
  }
  running_.back()->queued = true;
  issues_.push_back({added.issue, issue_seq_++, j});
  std::push_heap(issues_.begin(), issues_.end(), std::greater<>{});
}

void OffloadModel::issue_at(std::uint32_t j, Time at) {
  if (j >= jobs_.size() || !jobs_[j].held || running_[j]->queued)
    throw std::logic_error("NIC model: issue_at for a job that is not held, or issued already");
  if (at < last_step_)
    throw std::logic_error("NIC model: issue_at " + to_string(at) + ", before the last step at " +
                           to_string(last_step_));
  running_[j]->queued = true;
  issues_.push_back({at, issue_seq_++, j});
  std::push_heap(issues_.begin(), issues_.end(), std::greater<>{});
}

void OffloadModel::bind(std::vector<Simulator*> sims, std::vector<std::uint32_t> part_of_nic) {
  if (bound_) throw std::logic_error("NIC model: bound twice");
  if (sims.empty() || part_of_nic.size() != nics_.size())
    throw std::logic_error("NIC model: bind() needs a simulator and a part for every NIC");
  for (std::size_t n = 0; n < nics_.size(); ++n) {
    if (part_of_nic[n] >= sims.size())
      throw std::logic_error("NIC model: bind(): NIC " + std::to_string(n) + " has no part");
    nics_[n]->part = part_of_nic[n];
    nics_[n]->sim = sims[part_of_nic[n]];
  }
  sims_ = std::move(sims);
  tally_.assign(sims_.size(), std::vector<Tally>(jobs_.size()));
  part_ops_.assign(jobs_.size(), std::vector<std::int64_t>(sims_.size(), 0));
  for (std::uint32_t j = 0; j < jobs_.size(); ++j) {
    const PreparedSchedule& c = *running_[j]->c;
    for (std::size_t k = 0; k < c.ops_per_rank.size(); ++k)
      part_ops_[j][nics_[static_cast<std::size_t>(nic_of(j, static_cast<offload::Rank>(k)))]->part] +=
          c.ops_per_rank[k];
  }
  bound_ = true;
}

std::int32_t OffloadModel::nic_of(std::uint32_t j, offload::Rank r) const {
  return jobs_[j].nic_of_rank[static_cast<std::size_t>(r)];
}

Time OffloadModel::message_time(std::int64_t bytes) const {
  return p_.latency + serialization_time(Bytes::from_count(bytes), p_.bandwidth);
}

std::int32_t OffloadModel::op_nic(std::uint32_t j, OpId op) const {
  return nic_of(j, running_[j]->c->steps[static_cast<std::size_t>(op)].rank);
}

offload::OpId OffloadModel::schedule_op(std::uint32_t j, offload::OpId op) const {
  return running_.at(j)->c->orig.at(static_cast<std::size_t>(op));
}

void OffloadModel::start_trace(std::uint32_t j) {
  if (!trace_) return;
  if (traces_.size() < jobs_.size()) traces_.resize(jobs_.size());
  const std::size_t n = running_[j]->c->steps.size();
  traces_[j].fired.assign(n, Time::max());
  traces_[j].completed.assign(n, Time::max());
}

std::vector<OffloadModel::OpTimes> OffloadModel::op_times(std::uint32_t j) const {
  std::vector<OpTimes> out;
  if (j >= traces_.size() || traces_[j].fired.empty()) return out;
  const PreparedSchedule& c = *running_.at(j)->c;
  const Trace& t = traces_[j];
  out.resize(c.steps.size());
  for (std::size_t m = 0; m < c.steps.size(); ++m) {
    // An arrival is ready when its message arrives (its send completes later, at the ACK).
    Time ready = c.steps[m].kind == OpKind::arrival ? t.fired[m] : results_[j].start;
    if (c.steps[m].kind != OpKind::arrival)
      for (auto e = c.dep_begin[m]; e < c.dep_begin[m + 1]; ++e)
        ready = std::max(ready, t.completed[static_cast<std::size_t>(c.dep_list[e])]);
    out[static_cast<std::size_t>(c.orig[m])] = {c.orig[m], c.steps[m].rank, c.steps[m].kind,
                                                ready,     t.fired[m],      t.completed[m]};
  }
  return out;
}

std::vector<JobResult> OffloadModel::run() {
  if (transport_) throw std::logic_error("NIC model: with a transport, its driver runs the model");
  if (!bound_) bind({&own_sim_}, std::vector<std::uint32_t>(nics_.size(), 0));
  for (;;) {
    const Time due = next_step(own_sim_.pending() == 0);
    own_sim_.run(due);
    if (due == Time::max()) break;
    own_sim_.advance_to(due);
    step(due);
  }
  for (std::size_t j = 0; j < jobs_.size(); ++j)
    if (!running_[j]->completed)
      throw std::logic_error("NIC model: job '" + jobs_[j].name + "' never completed (a hang in the model)");
  return results_;
}

Time OffloadModel::next_poll(std::uint32_t j, Time after) const {
  const Time start = results_[j].start;
  return start + p_.host_poll * ((after - start).ps() / p_.host_poll.ps() + 1);
}

Time OffloadModel::seen_at(std::uint32_t j) const {
  const Running& r = *running_[j];
  std::int64_t done = 0;
  Time last = results_[j].start;
  for (const auto& part : tally_) {
    const Tally& t = part[j];
    done += r.offloaded ? t.waits_done : t.ops_done;
    last = std::max(last, r.offloaded ? t.last_wait : t.last_op);
  }
  const std::int64_t all = r.offloaded ? r.c->host_waits : static_cast<std::int64_t>(r.c->steps.size());
  return done < all ? Time::max() : next_poll(j, last);
}

Time OffloadModel::next_step(bool idle) const {
  Time due = issues_.empty() ? Time::max() : issues_.front().at;
  for (std::uint32_t j : active_) {
    const Time seen = seen_at(j);
    if (seen != Time::max()) due = std::min(due, seen);
    else if (!idle) due = std::min(due, next_poll(j, last_step_));  // it may be done by then
  }
  return due;
}

void OffloadModel::step(Time at) {
  if (!bound_) throw std::logic_error("NIC model: step() before bind()");
  if (at < last_step_)
    throw std::logic_error("NIC model: a step at " + to_string(at) + " after one at " + to_string(last_step_));
  for (Simulator* s : sims_)  // its driver brought every clock to `at` (Simulator::advance_to)
    if (s && s->now() != at)
      throw std::logic_error("NIC model: a step at " + to_string(at) + " with a simulator at " + to_string(s->now()));
  last_step_ = at;
  // Completions first, in job order (each gives resources back and may start or issue
  // others), then the issues due, until nothing more is due now.
  for (;;) {
    due_.clear();
    for (std::uint32_t j : active_) {
      const Time seen = seen_at(j);
      if (seen < at)
        throw std::logic_error("NIC model: job '" + jobs_[j].name + "' was seen complete at " + to_string(seen) +
                               " with no step then");
      if (seen == at) due_.push_back(j);
    }
    for (std::uint32_t j : due_) complete(j, at);
    bool issued = false;
    while (!issues_.empty() && issues_.front().at <= at) {
      std::pop_heap(issues_.begin(), issues_.end(), std::greater<>{});
      const Issue i = issues_.back();
      issues_.pop_back();
      if (i.at < at)
        throw std::logic_error("NIC model: job '" + jobs_[i.job].name + "' was due at " + to_string(i.at) +
                               " with no step then");
      issue(i.job, at);
      issued = true;
    }
    if (due_.empty() && !issued) break;
  }
  // Jobs seen complete whose last operations are done: their arrays go back.
  std::erase_if(draining_, [&](std::uint32_t j) {
    Running& r = *running_[j];
    std::int64_t done = 0;
    for (const auto& part : tally_) done += part[j].ops_done;
    if (done != static_cast<std::int64_t>(r.c->steps.size())) return false;
    std::vector<Running::Counter>().swap(r.counter);
    std::vector<std::uint8_t>().swap(r.done);
    std::vector<std::int32_t>().swap(r.deps_left);
    if (transport_) transport_->drained(j);
    return true;
  });
}

// Its parts, then, part by part, the progress of every job a step reads: those running
// and those draining (lists alike in every copy).
void OffloadModel::write_parts(ByteWriter& out) const {
  write_own_parts(out, sims_);
  for (std::uint32_t p = 0; p < sims_.size(); ++p)
    if (sims_[p]) {
      for (std::uint32_t j : active_) out.put(tally_[p][j]);
      for (std::uint32_t j : draining_) out.put(tally_[p][j]);
    }
}

void OffloadModel::read_parts(ByteReader& in) {
  const std::vector<std::uint8_t> theirs = their_parts(in, sims_);
  for (std::uint32_t p = 0; p < sims_.size(); ++p)
    if (theirs[p]) {
      for (std::uint32_t j : active_) tally_[p][j] = in.get<Tally>();
      for (std::uint32_t j : draining_) tally_[p][j] = in.get<Tally>();
    }
}

// Its parts, then what their NICs kept: each cache's counts, NIC by NIC; the times of
// every traced operation they ran, job by job.
void OffloadModel::write_part_results(ByteWriter& out) const {
  write_own_parts(out, sims_);
  for (const auto& nic : nics_)
    if (nic->sim) {
      out.put(nic->cache.hits());
      out.put(nic->cache.misses());
      out.put(nic->cache.evictions());
    }
  for (std::uint32_t j = 0; j < traces_.size(); ++j) {
    const auto& steps = running_[j]->c->steps;
    for (std::size_t m = 0; m < traces_[j].fired.size(); ++m)
      if (nics_[static_cast<std::size_t>(nic_of(j, steps[m].rank))]->sim) {
        out.put(traces_[j].fired[m]);
        out.put(traces_[j].completed[m]);
      }
  }
}

void OffloadModel::read_part_results(ByteReader& in) {
  const std::vector<std::uint8_t> theirs = their_parts(in, sims_);
  for (auto& nic : nics_)
    if (theirs[nic->part]) {
      const auto hits = in.get<std::uint64_t>(), misses = in.get<std::uint64_t>();
      nic->cache.set_counts(hits, misses, in.get<std::uint64_t>());
    }
  for (std::uint32_t j = 0; j < traces_.size(); ++j) {
    const auto& steps = running_[j]->c->steps;
    for (std::size_t m = 0; m < traces_[j].fired.size(); ++m)
      if (theirs[nics_[static_cast<std::size_t>(nic_of(j, steps[m].rank))]->part]) {
        traces_[j].fired[m] = in.get<Time>();
        traces_[j].completed[m] = in.get<Time>();
      }
  }
}

void OffloadModel::nic_event(Nic& nic, std::uint64_t t) {
  const auto kind = static_cast<Kind>(t >> 60);
  const auto j = static_cast<std::uint32_t>((t >> 40) & 0xfffff);
  const auto op = static_cast<OpId>(t & ((1ull << 40) - 1));
  switch (kind) {
    case kNicDone: {
      const auto [job, done] = nic.fifo[nic.head++];
      nic.busy = false;
      finish_op(job, done, nic);
      nic_next(nic);
      return;
    }
    case kDeliver: deliver(j, op, nic); return;
    case kPosted:
      // Software path: the host has posted a data operation; its message is on the way.
      fired(j, op, nic.sim->now());
      send(j, op, nic);
      return;
  }
  throw std::logic_error("NIC model: unknown event");
}

// A data operation's message: through the transport to another NIC, or timed here.
void OffloadModel::send(std::uint32_t j, OpId op, Nic& nic) {
  const PreparedSchedule::Step& st = running_[j]->c->steps[static_cast<std::size_t>(op)];
  if (!transport_) {
    nic.sim->schedule_in(message_time(st.bytes), nic, tag(kDeliver, j, static_cast<std::uint64_t>(op)));
    return;
  }
  const std::int32_t to = nic_of(j, st.peer);
  if (to == nic.index) {  // within one NIC (a local atomic): no wire
    nic.sim->schedule_in(Time(), nic, tag(kDeliver, j, static_cast<std::uint64_t>(op)));
    return;
  }
  transport_->send(j, op, nic.index, to, st.bytes);
}

void OffloadModel::message_arrived(std::uint32_t j, OpId send) {
  Running& r = *running_.at(j);
  const PreparedSchedule& c = *r.c;
  if (r.offloaded) {
    if (const OpId a = c.steps[static_cast<std::size_t>(send)].arrival; a >= 0) enqueue(j, a);
    return;
  }
  for (auto k = c.child_begin[static_cast<std::size_t>(send)]; k < c.child_begin[static_cast<std::size_t>(send) + 1];
       ++k)
    if (const OpId ch = c.children[k]; c.steps[static_cast<std::size_t>(ch)].kind == OpKind::arrival)
      software_done(j, ch, nic_of_op(j, ch));
}

void OffloadModel::message_completed(std::uint32_t j, OpId send) {
  Running& r = *running_.at(j);
  Nic& nic = nic_of_op(j, send);
  if (!r.offloaded) {
    software_done(j, send, nic);
    return;
  }
  const PreparedSchedule::Step& st = r.c->steps[static_cast<std::size_t>(send)];
  r.done[static_cast<std::size_t>(send)] = 1;
  completed(j, send, nic.sim->now());
  if (st.inc != kNoCounter) add_to_counter(j, st.inc, 1, nic);
  op_done(j, nic);
}

// One more of job j's operations is done on `nic` (after all it does): when it is the
// last of the NICs of its part, that part's counters are checked and the transport told.
void OffloadModel::op_done(std::uint32_t j, Nic& nic) {
  Tally& t = tally_[nic.part][j];
  t.last_op = nic.sim->now();
  if (++t.ops_done != part_ops_[j][nic.part]) return;
  if (running_[j]->offloaded) check_final_counters(j, nic.part);
  if (transport_) transport_->part_done(j, nic.part);
}

void OffloadModel::issue(std::uint32_t j, Time now) {
  if (running_[j]->issued) throw std::logic_error("NIC model: job '" + jobs_[j].name + "' issued twice");
  running_[j]->issued = true;
  results_[j].issued = true;
  results_[j].issue = now;
  // Waiting keeps issue order: nothing starts ahead of a job already waiting.
  switch (decide_now(j, /*earlier_waiting=*/!waiting_.empty()).decision) {
    case offload::Decision::offload: start_offloaded(j, now); return;
    case offload::Decision::wait: waiting_.push_back(j); return;
    case offload::Decision::software: start_software(j, now); return;
    case offload::Decision::refuse: break;
  }
  throw std::logic_error("NIC model: job '" + jobs_[j].name +
                         "' refused at issue (add() admits only what fits an idle NIC)");
}

offload::OffloadDecision OffloadModel::decide_now(std::uint32_t j, bool earlier_waiting) {
  for (std::size_t n = 0; n < nics_.size(); ++n)
    free_[n] = {nics_[n]->pool.counters() - nics_[n]->pool.counters_in_use(),
                nics_[n]->pool.slots() - nics_[n]->pool.slots_in_use()};
  return offload::decide(running_[j]->need, free_, idle(), when_short(jobs_[j].policy.value_or(policy_)),
                         earlier_waiting);
}

void OffloadModel::record_usage(Time now) {
  Usage u{now, 0, 0, 0};
  for (const auto& n : nics_) {
    u.counters += n->pool.counters_in_use();
    u.max_counters_on_a_nic = std::max(u.max_counters_on_a_nic, n->pool.counters_in_use());
    u.slots += n->pool.slots_in_use();
  }
  if (!usage_.empty() && usage_.back().time == u.time) usage_.back() = u;
  else usage_.push_back(u);
}

// Its result, trace and place among the jobs whose completion the steps look for.
void OffloadModel::started(std::uint32_t j, Time now) {
  results_[j].start = now;
  results_[j].started = true;
  active_.insert(std::lower_bound(active_.begin(), active_.end(), j), j);
  start_trace(j);
  if (transport_) transport_->started(j);
}

// Takes its counters and slots on every NIC (decide_now() said they are free) and starts
// its operations.
void OffloadModel::start_offloaded(std::uint32_t j, Time now) {
  Running& r = *running_[j];
  for (std::size_t n = 0; n < nics_.size(); ++n)
    if ((r.need[n].counters || r.need[n].slots) &&
        !nics_[n]->pool.try_acquire(now, r.need[n].counters, r.need[n].slots))
      throw std::logic_error("NIC model: job '" + jobs_[j].name + "' started without its resources free");
  record_usage(now);
  const PreparedSchedule& c = *r.c;
  r.offloaded = true;
  results_[j].offloaded = true;
  results_[j].counters_per_nic.resize(r.need.size());
  for (std::size_t n = 0; n < r.need.size(); ++n) results_[j].counters_per_nic[n] = r.need[n].counters;
  r.counter.resize(c.fire_begin.size() - 1);
  for (std::size_t k = 0; k < r.counter.size(); ++k) r.counter[k] = {0, c.fire_begin[k], c.fire_begin[k + 1]};
  r.done.assign(c.steps.size(), 0);
  started(j, now);
  // (On the NICs that run here: another process starts the rest, in its copy.)
  for (OpId id : c.start_ops)
    if (nic_of_op(j, id).sim) enqueue(j, id);
  for (CounterId k : c.fire_at_zero)  // threshold 0
    if (Nic& nic = *nics_[static_cast<std::size_t>(nic_of(j, c.counter_rank[static_cast<std::size_t>(k)]))]; nic.sim)
      add_to_counter(j, k, 0, nic);
}

void OffloadModel::start_software(std::uint32_t j, Time now) {
  Running& r = *running_[j];
  const PreparedSchedule& c = *r.c;
  r.offloaded = false;
  r.deps_left = c.deps;
  started(j, now);
  for (OpId id : c.software_roots)
    if (Nic& nic = nic_of_op(j, id); nic.sim) software_ready(j, id, nic);
}

// Software path: every dependence of `id` is done. The host posts a data operation;
// counter adds and host waits are joins, done when ready.
void OffloadModel::software_ready(std::uint32_t j, OpId id, Nic& nic) {
  const PreparedSchedule::Step& st = running_[j]->c->steps[static_cast<std::size_t>(id)];
  if (offload::is_data_op(st.kind)) {
    // The host behind the rank's NIC posts for every collective in software there.
    nic.host_free = std::max(nic.host_free, nic.sim->now()) + p_.host_op_time;
    nic.sim->schedule_at(nic.host_free, nic, tag(kPosted, j, static_cast<std::uint64_t>(id)));
    return;
  }
  software_done(j, id, nic);
}

void OffloadModel::software_done(std::uint32_t j, OpId op, Nic& nic) {
  Running& r = *running_[j];
  const PreparedSchedule& c = *r.c;
  const Time now = nic.sim->now();
  if (trace_ && traces_[j].fired[static_cast<std::size_t>(op)] == Time::max()) fired(j, op, now);  // an arrival, a join
  completed(j, op, now);
  op_done(j, nic);
  // Its successors on its rank (an arrival elsewhere is done by its message).
  for (auto k = c.child_begin[static_cast<std::size_t>(op)]; k < c.child_begin[static_cast<std::size_t>(op) + 1]; ++k) {
    const OpId ch = c.children[k];
    if (c.steps[static_cast<std::size_t>(ch)].kind != OpKind::arrival &&
        --r.deps_left[static_cast<std::size_t>(ch)] == 0)
      software_ready(j, ch, nic);
  }
}

OffloadModel::Nic& OffloadModel::nic_of_op(std::uint32_t j, OpId op) {
  return *nics_[static_cast<std::size_t>(nic_of(j, running_[j]->c->steps[static_cast<std::size_t>(op)].rank))];
}

void OffloadModel::enqueue(std::uint32_t j, OpId op) {
  Nic& nic = nic_of_op(j, op);
  fired(j, op, nic.sim->now());
  nic.fifo.push_back({j, op});
  if (!nic.busy) nic_next(nic);
}

void OffloadModel::nic_next(Nic& nic) {
  if (nic.busy) return;
  if (nic.head == nic.fifo.size()) {
    nic.fifo.clear();
    nic.head = 0;
    return;
  }
  const std::uint32_t j = nic.fifo[nic.head].first;  // (not a structured binding: the lambda below captures it)
  const OpId op = nic.fifo[nic.head].second;
  const PreparedSchedule::Step& st = running_[j]->c->steps[static_cast<std::size_t>(op)];
  // The counters this operation reads or writes here: its trigger, and for an arrival or
  // a counter add the counter it increments.
  Time cost = p_.op_time;
  auto touch = [&](CounterId c) {
    if (c != kNoCounter && !nic.cache.access(static_cast<std::uint64_t>(j) << 32 | static_cast<std::uint32_t>(c)))
      cost += p_.cache_miss;
  };
  touch(st.trigger);
  touch(st.touch);
  nic.busy = true;
  nic.sim->schedule_in(cost, nic, tag(kNicDone, 0, 0));
}

// Every operation of an offloaded job on the NICs of `part` is done: each of their
// counters must have ended at its per-iteration value with every operation it triggers
// fired.
void OffloadModel::check_final_counters(std::uint32_t j, std::uint32_t part) const {
  const Running& r = *running_[j];
  const PreparedSchedule& c = *r.c;
  for (std::size_t k = 0; k < r.counter.size(); ++k) {
    if (nics_[static_cast<std::size_t>(nic_of(j, c.counter_rank[k]))]->part != part) continue;
    if (r.counter[k].value != c.final_value[k] || r.counter[k].next != r.counter[k].end)
      throw std::logic_error("NIC model: job '" + jobs_[j].name + "': counter " + std::to_string(c.counter_orig[k]) +
                             " ended at " + std::to_string(r.counter[k].value) + ", expected " +
                             std::to_string(c.final_value[k]) +
                             (r.counter[k].next != r.counter[k].end ? ", with operations it triggers not fired" : ""));
  }
}

void OffloadModel::finish_op(std::uint32_t j, OpId op, Nic& nic) {
  Running& r = *running_[j];
  const PreparedSchedule::Step& st = r.c->steps[static_cast<std::size_t>(op)];
  if (offload::is_data_op(st.kind)) {
    send(j, op, nic);
    return;
  }
  r.done[static_cast<std::size_t>(op)] = 1;
  completed(j, op, nic.sim->now());
  if (st.inc != kNoCounter) add_to_counter(j, st.inc, st.add, nic);
  op_done(j, nic);
}

// A timed message (or a local one) has landed: `nic` is the sender's.
void OffloadModel::deliver(std::uint32_t j, OpId send, Nic& nic) {
  Running& r = *running_[j];
  const PreparedSchedule& c = *r.c;
  if (!r.offloaded) {  // software: the send and its arrival are done
    software_done(j, send, nic);
    for (auto k = c.child_begin[static_cast<std::size_t>(send)]; k < c.child_begin[static_cast<std::size_t>(send) + 1];
         ++k)
      if (const OpId ch = c.children[k]; c.steps[static_cast<std::size_t>(ch)].kind == OpKind::arrival)
        software_done(j, ch, nic_of_op(j, ch));
    return;
  }
  const PreparedSchedule::Step& st = c.steps[static_cast<std::size_t>(send)];
  r.done[static_cast<std::size_t>(send)] = 1;
  completed(j, send, nic.sim->now());
  if (st.arrival >= 0) enqueue(j, st.arrival);
  if (st.inc != kNoCounter) add_to_counter(j, st.inc, 1, nic);
  op_done(j, nic);
}

// `nic` holds counter k (its rank's NIC).
void OffloadModel::add_to_counter(std::uint32_t j, CounterId k, std::int64_t v, Nic& nic) {
  Running& r = *running_[j];
  const PreparedSchedule& c = *r.c;
  Running::Counter& ctr = r.counter[static_cast<std::size_t>(k)];
  ctr.value += v;
  while (ctr.next < ctr.end && c.fires[ctr.next].threshold <= ctr.value) {
    const PreparedSchedule::Fire f = c.fires[ctr.next++];
    // A verified assignment never fires early; a schedule from a file may.
    for (auto e = c.dep_begin[static_cast<std::size_t>(f.op)]; e < c.dep_begin[static_cast<std::size_t>(f.op) + 1]; ++e)
      if (const OpId d = c.dep_list[e]; !r.done[static_cast<std::size_t>(d)])
        fired_early(j, f.op, k, f.threshold, d, nic.sim->now());
    if (!f.host_wait) {
      enqueue(j, f.op);
      continue;
    }
    // A host wait met: the host sees the job complete at its first poll after the last.
    const Time now = nic.sim->now();
    r.done[static_cast<std::size_t>(f.op)] = 1;
    fired(j, f.op, now);
    completed(j, f.op, now);
    Tally& t = tally_[nic.part][j];
    ++t.waits_done;
    t.last_wait = now;
    op_done(j, nic);
  }
}

void OffloadModel::fired_early(std::uint32_t j, OpId op, CounterId k, std::int64_t threshold, OpId dep,
                               Time now) const {
  const PreparedSchedule& c = *running_[j]->c;
  const auto& st = c.steps[static_cast<std::size_t>(op)];
  const auto& dt = c.steps[static_cast<std::size_t>(dep)];
  throw UnsafeSchedule(fmt::format("job '{}': op {} ({}, rank {}) fired when counter {} reached threshold {} at {}, "
                                   "before its dependence op {} ({}, "
                                   "rank {}) had completed: the schedule's counter assignment is unsafe",
                                   jobs_[j].name, c.orig[static_cast<std::size_t>(op)], offload::to_string(st.kind),
                                   st.rank, c.counter_orig[static_cast<std::size_t>(k)], threshold, to_string(now),
                                   c.orig[static_cast<std::size_t>(dep)], offload::to_string(dt.kind), dt.rank));
}

// The host sees job j complete (a step): its resources go back, and what waited for
// them or for it starts.
void OffloadModel::complete(std::uint32_t j, Time now) {
  Running& r = *running_[j];
  if (r.completed) throw std::logic_error("NIC model: job '" + jobs_[j].name + "' completed twice");
  r.completed = true;
  results_[j].done = now;
  makespan_ = std::max(makespan_, now);
  ++completed_;
  active_.erase(std::lower_bound(active_.begin(), active_.end(), j));
  draining_.push_back(j);
  if (r.offloaded) {
    // Its counters leave the pools and the caches (every counter an op of it touched on a
    // NIC belongs to a rank there, so those NICs are the ones it holds counters on).
    const std::uint64_t first = static_cast<std::uint64_t>(j) << 32, last = first | 0xffffffffull;
    for (std::size_t n = 0; n < nics_.size(); ++n) {
      if (r.need[n].counters || r.need[n].slots) nics_[n]->pool.release(now, r.need[n].counters, r.need[n].slots);
      if (r.need[n].counters) nics_[n]->cache.erase_range(first, last);
    }
    record_usage(now);
  }
  for (std::uint32_t next : issued_after_[j]) {
    running_[next]->queued = true;
    issues_.push_back({std::max(now, jobs_[next].issue), issue_seq_++, next});
    std::push_heap(issues_.begin(), issues_.end(), std::greater<>{});
  }
  if (transport_) transport_->seen_complete(j, now);
  // Its state stays until its last operation is done: operations the host does not wait
  // for (a send's local completion) may still be on their way, and the NICs process them
  // like any other.
  start_waiting(now);
}

void OffloadModel::start_waiting(Time now) {
  // In issue order, while the first waiting job fits (the ones behind it keep waiting).
  std::size_t k = 0;
  for (; k < waiting_.size() && decide_now(waiting_[k], false).decision == offload::Decision::offload; ++k)
    start_offloaded(waiting_[k], now);
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(k));
}

}  // namespace fabriclab::nicmodel
