#include "nicmodel/model.h"

#include <algorithm>
#include <stdexcept>

#include "core/error.h"

namespace fabriclab::nicmodel {

using offload::CounterId;
using offload::kNoCounter;
using offload::Op;
using offload::OpId;
using offload::OpKind;

namespace {
enum Kind : std::uint64_t { kIssue = 1, kNicDone = 2, kDeliver = 3, kPosted = 4, kComplete = 5 };
std::uint64_t tag(Kind k, std::uint64_t job, std::uint64_t x = 0) { return k << 60 | job << 40 | x; }
bool triggered_kind(OpKind k) { return offload::is_data_op(k) || k == OpKind::cntr_add; }
}  // namespace

struct OffloadModel::Running {
  bool offloaded = false;
  std::vector<std::int64_t> value;             // counter values (offloaded)
  std::vector<std::vector<OpId>> waiting;      // per counter: ops it triggers, by threshold
  std::vector<std::size_t> cursor;             // first of them not fired yet
  std::vector<OpId> arrival_of;                // per send: its arrival (or -1)
  std::vector<std::uint8_t> done;              // per op
  std::vector<std::int32_t> deps_left;         // software path
  std::vector<std::vector<OpId>> children;     // software path
  std::vector<std::int64_t> counters, slots;   // held per NIC
  std::int64_t host_waits_left = 0, ops_left = 0;
  bool completing = false;
  bool issued = false, completed = false;
};

OffloadModel::OffloadModel(NicParams p, std::int32_t nics, Policy policy) : p_(p), policy_(policy) {
  if (nics < 1) throw InputError("the NIC model needs at least one NIC");
  if (p.bandwidth.bps() <= 0) throw InputError("NIC model: the bandwidth must be positive");
  if (p.host_poll <= Time()) throw InputError("NIC model: the host poll interval must be positive");
  if (p.counters < 1 || p.slots < 1 || p.cache_entries < 1)
    throw InputError("NIC model: counters, slots and cache entries must be at least 1");
  for (std::int32_t i = 0; i < nics; ++i) nics_.push_back(Nic{NicPool(p.counters, p.slots), CounterCache(p.cache_entries), {}, 0, false});
  host_free_.assign(static_cast<std::size_t>(nics), Time());
}

OffloadModel::~OffloadModel() = default;

void OffloadModel::add(Job job) {
  const std::string what = "job '" + job.name + "'";
  if (!job.schedule) throw InputError(what + ": no schedule");
  const offload::Schedule& s = *job.schedule;
  if (job.nic_of_rank.size() != static_cast<std::size_t>(s.ranks()))
    throw InputError(what + ": " + std::to_string(job.nic_of_rank.size()) + " NICs given for " +
                     std::to_string(s.ranks()) + " ranks");
  for (auto n : job.nic_of_rank)
    if (n < 0 || n >= static_cast<std::int32_t>(nics_.size()))
      throw InputError(what + ": NIC " + std::to_string(n) + " does not exist (0.." + std::to_string(nics_.size() - 1) + ")");
  if (validated_.insert(&s).second) offload::validate(s, /*assigned=*/true);  // once per schedule
  if (std::none_of(s.ops().begin(), s.ops().end(), [](const Op& o) { return o.kind == OpKind::host_wait; }))
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
  r.counters.assign(nics_.size(), 0);
  r.slots.assign(nics_.size(), 0);
  const auto summary = s.counter_summary();
  for (offload::Rank k = 0; k < s.ranks(); ++k) r.counters[static_cast<std::size_t>(nic_of(j, k))] += summary.per_rank[static_cast<std::size_t>(k)];
  for (const Op& o : s.ops())
    if (triggered_kind(o.kind)) ++r.slots[static_cast<std::size_t>(nic_of(j, o.rank))];
  issued_after_.emplace_back();
  const Job& added = jobs_.back();
  if (added.after >= static_cast<std::int32_t>(j) || added.after < -1)
    throw InputError(what + ": it can only follow an earlier job");
  bool fits_a_nic = true;
  for (std::size_t n = 0; n < nics_.size(); ++n)
    if (r.counters[n] > p_.counters || r.slots[n] > p_.slots) fits_a_nic = false;
  results_.back().could_never_offload = !fits_a_nic;
  if (policy_ == Policy::stall)
    for (std::size_t n = 0; n < nics_.size(); ++n)
      if (r.counters[n] > p_.counters || r.slots[n] > p_.slots)
        throw InputError(what + ": needs " + std::to_string(r.counters[n]) + " counters and " +
                         std::to_string(r.slots[n]) + " slots on NIC " + std::to_string(n) + ", which has " +
                         std::to_string(p_.counters) + " and " + std::to_string(p_.slots) +
                         ": it could never start (use the fallback policy)");
  if (added.after >= 0) issued_after_[static_cast<std::size_t>(added.after)].push_back(j);
  else sim_.schedule_at(added.issue, *this, tag(kIssue, j));
}

std::int32_t OffloadModel::nic_of(std::uint32_t j, offload::Rank r) const {
  return jobs_[j].nic_of_rank[static_cast<std::size_t>(r)];
}

Time OffloadModel::message_time(std::int64_t bytes) const {
  return p_.latency + serialization_time(Bytes::from_count(bytes), p_.bandwidth);
}

std::vector<JobResult> OffloadModel::run() {
  sim_.run();
  if (completed_ != jobs_.size()) {
    for (std::size_t j = 0; j < jobs_.size(); ++j)
      if (results_[j].done == Time() && !running_[j]->completing)
        throw std::logic_error("NIC model: job '" + jobs_[j].name + "' never completed (a hang in the model)");
  }
  return results_;
}

void OffloadModel::on_event(std::uint64_t t) {
  const auto kind = static_cast<Kind>(t >> 60);
  const auto j = static_cast<std::uint32_t>((t >> 40) & 0xfffff);
  const std::uint64_t x = t & ((1ull << 40) - 1);
  switch (kind) {
    case kIssue: issue(j); return;
    case kNicDone: {
      Nic& nic = nics_[x];
      const auto [job, op] = nic.fifo[nic.head++];
      nic.busy = false;
      finish_op(job, op);
      nic_next(static_cast<std::int32_t>(x));
      return;
    }
    case kDeliver: deliver(j, static_cast<OpId>(x)); return;
    case kPosted: {
      // Software path: the host has posted a data operation; its message is on the way.
      const Op& o = jobs_[j].schedule->op(static_cast<OpId>(x));
      sim_.schedule_in(message_time(o.bytes), *this, tag(kDeliver, j, x));
      return;
    }
    case kComplete: complete(j); return;
  }
  throw std::logic_error("NIC model: unknown event");
}

void OffloadModel::issue(std::uint32_t j) {
  if (running_[j]->issued) throw std::logic_error("NIC model: job '" + jobs_[j].name + "' issued twice");
  running_[j]->issued = true;
  results_[j].issue = sim_.now();
  const bool wait = policy_ == Policy::stall || (policy_ == Policy::advise && !results_[j].could_never_offload);
  if (wait) {
    if (!waiting_.empty() || !try_start_offloaded(j)) waiting_.push_back(j);  // issue order
    return;
  }
  if (results_[j].could_never_offload || !try_start_offloaded(j)) start_software(j);
}

void OffloadModel::record_usage() {
  Usage u{sim_.now(), 0, 0, 0};
  for (const Nic& n : nics_) {
    u.counters += n.pool.counters_in_use();
    u.max_counters_on_a_nic = std::max(u.max_counters_on_a_nic, n.pool.counters_in_use());
    u.slots += n.pool.slots_in_use();
  }
  if (!usage_.empty() && usage_.back().time == u.time) usage_.back() = u;
  else usage_.push_back(u);
}

bool OffloadModel::try_start_offloaded(std::uint32_t j) {
  Running& r = *running_[j];
  for (std::size_t n = 0; n < nics_.size(); ++n)
    if ((r.counters[n] || r.slots[n]) && !nics_[n].pool.fits(r.counters[n], r.slots[n])) return false;
  const Time now = sim_.now();
  for (std::size_t n = 0; n < nics_.size(); ++n)
    if (r.counters[n] || r.slots[n]) nics_[n].pool.try_acquire(now, r.counters[n], r.slots[n]);
  record_usage();
  const offload::Schedule& s = *jobs_[j].schedule;
  r.offloaded = true;
  results_[j].start = now;
  results_[j].offloaded = true;
  results_[j].counters_per_nic = r.counters;
  r.value.assign(s.counter_count(), 0);
  r.waiting.assign(s.counter_count(), {});
  r.cursor.assign(s.counter_count(), 0);
  r.arrival_of.assign(s.size(), -1);
  r.done.assign(s.size(), 0);
  for (OpId id = 0; id < static_cast<OpId>(s.size()); ++id) {
    const Op& o = s.op(id);
    if (o.kind == OpKind::arrival) r.arrival_of[static_cast<std::size_t>(s.deps(id)[0])] = id;
    if (o.kind == OpKind::host_wait) ++r.host_waits_left;
    if (o.kind != OpKind::arrival && !o.fires_at_start()) r.waiting[static_cast<std::size_t>(o.trigger)].push_back(id);
  }
  r.ops_left = static_cast<std::int64_t>(s.size());
  for (auto& w : r.waiting)
    std::stable_sort(w.begin(), w.end(), [&](OpId a, OpId b) { return s.op(a).threshold < s.op(b).threshold; });
  for (OpId id = 0; id < static_cast<OpId>(s.size()); ++id)
    if (s.op(id).fires_at_start() && triggered_kind(s.op(id).kind)) enqueue(j, id);
  for (CounterId c = 0; c < static_cast<CounterId>(s.counter_count()); ++c) add_to_counter(j, c, 0);  // threshold 0
  return true;
}

void OffloadModel::start_software(std::uint32_t j) {
  Running& r = *running_[j];
  const offload::Schedule& s = *jobs_[j].schedule;
  results_[j].start = sim_.now();
  r.offloaded = false;
  r.done.assign(s.size(), 0);
  r.deps_left.assign(s.size(), 0);
  r.children.assign(s.size(), {});
  r.ops_left = static_cast<std::int64_t>(s.size());
  for (OpId id = 0; id < static_cast<OpId>(s.size()); ++id)
    for (OpId d : s.deps(id)) {
      ++r.deps_left[static_cast<std::size_t>(id)];
      r.children[static_cast<std::size_t>(d)].push_back(id);
    }
  for (OpId id = 0; id < static_cast<OpId>(s.size()); ++id)
    if (r.deps_left[static_cast<std::size_t>(id)] == 0 && s.op(id).kind != OpKind::arrival) software_done(j, -1 - id);
}

// Software path: `op` < 0 means "op -1-op is ready"; otherwise "op is done".
void OffloadModel::software_done(std::uint32_t j, OpId op) {
  Running& r = *running_[j];
  const offload::Schedule& s = *jobs_[j].schedule;
  if (op < 0) {
    const OpId id = -1 - op;
    const Op& o = s.op(id);
    if (offload::is_data_op(o.kind)) {
      // The host behind the rank's NIC posts for every collective in software there.
      Time& free = host_free_[static_cast<std::size_t>(nic_of(j, o.rank))];
      free = std::max(free, sim_.now()) + p_.host_op_time;
      sim_.schedule_at(free, *this, tag(kPosted, j, static_cast<std::uint64_t>(id)));
      return;
    }
    op = id;  // counter adds and host waits are joins: done when ready
  }
  r.done[static_cast<std::size_t>(op)] = 1;
  // The last operation: done (checked here, not after the children below, which recurse
  // and would see the count at zero too).
  if (--r.ops_left == 0) sim_.schedule_in(Time(), *this, tag(kComplete, j));
  for (OpId c : r.children[static_cast<std::size_t>(op)])
    if (--r.deps_left[static_cast<std::size_t>(c)] == 0 && s.op(c).kind != OpKind::arrival) software_done(j, -1 - c);
}

void OffloadModel::enqueue(std::uint32_t j, OpId op) {
  const std::int32_t n = nic_of(j, jobs_[j].schedule->op(op).rank);
  nics_[static_cast<std::size_t>(n)].fifo.push_back({j, op});
  if (!nics_[static_cast<std::size_t>(n)].busy) nic_next(n);
}

void OffloadModel::nic_next(std::int32_t n) {
  Nic& nic = nics_[static_cast<std::size_t>(n)];
  if (nic.busy) return;
  if (nic.head == nic.fifo.size()) {
    nic.fifo.clear();
    nic.head = 0;
    return;
  }
  const auto [j, op] = nic.fifo[nic.head];
  const Op& o = jobs_[j].schedule->op(op);
  // The counters this operation reads or writes here: its trigger, and for an arrival or
  // a counter add the counter it increments.
  Time cost = p_.op_time;
  auto touch = [&](CounterId c) {
    if (c != kNoCounter && !nic.cache.access(static_cast<std::uint64_t>(j) << 32 | static_cast<std::uint32_t>(c)))
      cost += p_.cache_miss;
  };
  touch(o.trigger);
  if (o.kind == OpKind::arrival || o.kind == OpKind::cntr_add) touch(o.increments());
  nic.busy = true;
  sim_.schedule_in(cost, *this, tag(kNicDone, 0, static_cast<std::uint64_t>(n)));
}

void OffloadModel::finish_op(std::uint32_t j, OpId op) {
  Running& r = *running_[j];
  const Op& o = jobs_[j].schedule->op(op);
  if (offload::is_data_op(o.kind)) {
    sim_.schedule_in(message_time(o.bytes), *this, tag(kDeliver, j, static_cast<std::uint64_t>(op)));
    return;
  }
  r.done[static_cast<std::size_t>(op)] = 1;
  --r.ops_left;
  if (o.kind == OpKind::cntr_add) add_to_counter(j, o.target, o.add);
  else if (o.kind == OpKind::arrival && o.counted && o.completion != kNoCounter) add_to_counter(j, o.completion, 1);
}

void OffloadModel::deliver(std::uint32_t j, OpId send) {
  Running& r = *running_[j];
  const offload::Schedule& s = *jobs_[j].schedule;
  const Op& o = s.op(send);
  if (!r.offloaded) {  // software: the send and its arrival are done
    software_done(j, send);
    for (OpId c : r.children[static_cast<std::size_t>(send)])
      if (s.op(c).kind == OpKind::arrival) software_done(j, c);
    return;
  }
  r.done[static_cast<std::size_t>(send)] = 1;
  --r.ops_left;
  const OpId arrival = r.arrival_of[static_cast<std::size_t>(send)];
  if (arrival >= 0) enqueue(j, arrival);
  if (o.counted && o.completion != kNoCounter) add_to_counter(j, o.completion, 1);
}

void OffloadModel::add_to_counter(std::uint32_t j, CounterId c, std::int64_t v) {
  Running& r = *running_[j];
  const offload::Schedule& s = *jobs_[j].schedule;
  r.value[static_cast<std::size_t>(c)] += v;
  auto& w = r.waiting[static_cast<std::size_t>(c)];
  std::size_t& k = r.cursor[static_cast<std::size_t>(c)];
  while (k < w.size() && s.op(w[k]).threshold <= r.value[static_cast<std::size_t>(c)]) {
    const OpId id = w[k++];
    for (OpId d : s.deps(id))  // the assignment was verified; a model bug would show here
      if (!r.done[static_cast<std::size_t>(d)])
        throw std::logic_error("NIC model: job '" + jobs_[j].name + "': op " + std::to_string(id) +
                               " fired before its dependence " + std::to_string(d) + " completed");
    if (s.op(id).kind == OpKind::host_wait) {
      r.done[static_cast<std::size_t>(id)] = 1;
      --r.ops_left;
      if (--r.host_waits_left == 0 && !r.completing) {
        // The host sees it at its next poll.
        r.completing = true;
        const Time since = sim_.now() - results_[j].start;
        const std::int64_t polls = (since.ps() + p_.host_poll.ps() - 1) / p_.host_poll.ps();
        sim_.schedule_at(results_[j].start + p_.host_poll * polls, *this, tag(kComplete, j));
      }
    } else {
      enqueue(j, id);
    }
  }
}

void OffloadModel::complete(std::uint32_t j) {
  Running& r = *running_[j];
  if (results_[j].done != Time() || r.completed) throw std::logic_error("NIC model: job '" + jobs_[j].name + "' completed twice");
  r.completed = true;
  const Time now = sim_.now();
  results_[j].done = now;
  makespan_ = std::max(makespan_, now);
  ++completed_;
  if (r.offloaded) {
    const offload::Schedule& s = *jobs_[j].schedule;
    for (std::size_t n = 0; n < nics_.size(); ++n)
      if (r.counters[n] || r.slots[n]) nics_[n].pool.release(now, r.counters[n], r.slots[n]);
    for (CounterId c = 0; c < static_cast<CounterId>(s.counter_count()); ++c)
      nics_[static_cast<std::size_t>(nic_of(j, s.counter_owner(c)))].cache.erase(
          static_cast<std::uint64_t>(j) << 32 | static_cast<std::uint32_t>(c));
    record_usage();
  }
  for (std::uint32_t next : issued_after_[j])
    sim_.schedule_at(std::max(now, jobs_[next].issue), *this, tag(kIssue, next));
  // Its state stays: operations the host does not wait for (a send's local completion)
  // may still be on their way, and the NICs process them like any other.
  start_waiting();
}

void OffloadModel::start_waiting() {
  std::size_t k = 0;
  while (k < waiting_.size() && try_start_offloaded(waiting_[k])) ++k;
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(k));
}

}  // namespace fabriclab::nicmodel
