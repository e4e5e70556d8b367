// The timed NIC model (shared/docs/triggered-ops.md section 6): NICs executing counter-
// assigned schedules of several collectives at once, on a discrete-event simulator.
//
// Each NIC has a pool of counters and triggered-operation slots (NicPool), a counter
// cache (CounterCache) and one processing pipeline: a triggered operation whose counter
// reached its threshold, an arriving message, a counter add, each takes `op_time` there,
// plus `cache_miss` for every counter it touches that is not cached. A message takes
// `latency + bytes / bandwidth` to its peer. A collective is offloaded when every NIC of
// its ranks has the counters and slots its assignment uses (all or nothing); the host
// sees it complete at its first poll (every `host_poll` from its start) strictly after
// its last host_wait is satisfied, and then gives the resources back. A collective that
// cannot start offloaded either waits, in issue order (policy `stall`), or runs now on
// the software path (`fallback`): each rank's host posts each operation once its
// dependences are done, `host_op_time` apiece (one host per NIC, shared by every
// collective running in software there), with the same message times; its host sees it
// complete at its first poll strictly after its last operation is done.
//
// What acts on the whole model -- a collective's issue and offload decision, its
// completion seen by the host, which gives resources back, starts waiting collectives
// and issues those that follow it -- happens in step(at), at the instants next_step()
// names, once every event at or before that instant has run; everything else is an
// event of one NIC. So the NICs may run on several simulators (the parts of a
// partitioned fabric), each with its own events, and the result is the same.
//
//   OffloadModel m(params, /*nics=*/4, Policy::stall);
//   m.add({.name = "ar0", .schedule = s, .nic_of_rank = {0, 1, 2, 3}, .issue = us(0)});
//   std::vector<JobResult> r = m.run();
//
// On other simulators with a Transport (the packet-level fabric, src/nicengine/), the
// same NICs send their messages through the transport instead: it is told each data
// operation's message and reports, by message_arrived() and message_completed(), when
// its last byte is placed at the target and when the initiator learns it is done.
// `latency` and `bandwidth` are then unused; the rest is the same model. Whoever runs
// those simulators binds the NICs to them (bind()) and calls step() at the instants
// next_step() names.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/bytes.h"
#include "core/error.h"
#include "core/params.h"
#include "core/simulator.h"
#include "core/units.h"
#include "nicmodel/resources.h"
#include "offload/advice.h"
#include "offload/schedule.h"

namespace fabriclab::nicmodel {

struct NicParams {
  std::int64_t counters = 128;
  std::int64_t slots = 4096;
  std::int32_t cache_entries = 64;
  Time cache_miss = Time::from_ps(100'000);  // 100 ns
  Time op_time = Time::from_ps(50'000);      // 50 ns per operation on the NIC
  Time latency = Time::from_ps(1'000'000);   // 1 us
  BitRate bandwidth = BitRate::from_bps(100'000'000'000);
  Time host_op_time = Time::from_ps(1'000'000);  // 1 us per operation posted by the host
  Time host_poll = Time::from_ps(1'000'000);     // the host looks every 1 us
};

// When a collective's counters or slots are not free at its issue: wait for them, in
// issue order (stall); run in software now (fallback); or follow the planner's advice
// (advise): wait if its needs fit in an idle NIC, software if they never can. The
// decision itself is offload::decide()'s (offload/advice.h); a policy only says what it
// allows instead of offloading.
enum class Policy : std::uint8_t { stall, fallback, advise };
inline constexpr params::EnumNames<Policy, 3> kPolicyNames{
    {{Policy::stall, "stall"}, {Policy::fallback, "fallback"}, {Policy::advise, "advise"}}};
// What the policy allows, as decide() takes it (what the model asks decide() with).
offload::WhenShort when_short(Policy p);

// A schedule checked (offload::validate) and flattened for the model: what each operation
// does, each counter's operations in threshold order, the software path's successor lists.
// Preparing a 512-rank ring allreduce takes about half a second; a caller that runs many
// models on one schedule prepares it once and passes it in Job::prepared (otherwise each
// model prepares each distinct schedule it is given). Throws InputError for a schedule
// that fails the check.
struct PreparedSchedule;
std::shared_ptr<const PreparedSchedule> prepare(std::shared_ptr<const offload::Schedule> s);

// An operation fired before one of its dependences completed: the schedule's counter
// assignment is unsafe (a verified one never is). Names the operation, rank, counter and
// threshold.
class UnsafeSchedule : public NegativeAnswer {
 public:
  using NegativeAnswer::NegativeAnswer;
};

// Where the model's messages go when it runs on an outside simulator.
class Transport {
 public:
  virtual ~Transport() = default;
  // Job `job`'s data operation `op` (the model's id) sends `bytes` from `from_nic` to
  // `to_nic` (another NIC: a rank's own NIC is handled inside the model). The transport
  // later calls message_arrived(job, op) and message_completed(job, op), each once.
  virtual void send(std::uint32_t job, offload::OpId op, std::int32_t from_nic, std::int32_t to_nic,
                    std::int64_t bytes) = 0;
  // Every operation of job `job` on the NICs of part `part` is done (from an event of
  // that part; ops_in_part() > 0).
  virtual void part_done(std::uint32_t job, std::uint32_t part) = 0;
  // Job `job`'s host has seen it complete at `at` (its result's `done`; from step()).
  virtual void seen_complete(std::uint32_t /*job*/, Time /*at*/) {}
  // Job `job` starts (its first send comes after), and later every one of its operations
  // is done, seen complete (no message of it is left anywhere); both from step().
  virtual void started(std::uint32_t /*job*/) {}
  virtual void drained(std::uint32_t /*job*/) {}
};

struct Job {
  std::string name;
  std::shared_ptr<const offload::Schedule> schedule;           // counter-assigned
  std::shared_ptr<const PreparedSchedule> prepared = nullptr;  // optional: prepare(schedule)
  std::vector<std::int32_t> nic_of_rank;                       // rank -> NIC
  Time issue;
  std::int32_t after = -1;            // >= 0: issued when that (earlier) job completes, not before `issue`
  std::optional<Policy> policy = {};  // when short of counters (default: the model's)
  bool held = false;                  // issued by the caller (OffloadModel::issue_at), not at `issue`
};

struct JobResult {
  std::string name;
  Time issue, start, done;  // done: the host has seen it complete
  bool offloaded = false;
  bool issued = false, started = false;        // (a run stopped early may leave either false)
  bool could_never_offload = false;            // needs more than a whole NIC (fallback/advise ran it in software)
  std::vector<std::int64_t> counters_per_nic;  // held while offloaded (by NIC index)
  Time stall() const { return start - issue; }
  Time completion() const { return done - issue; }
};

class OffloadModel final {
 public:
  // Throws InputError for parameters that cannot work (no NICs, zero bandwidth, ...).
  OffloadModel(NicParams p, std::int32_t nics, Policy policy);
  // Messages through `transport` (which outlives the model), on simulators bound later.
  OffloadModel(NicParams p, std::int32_t nics, Policy policy, Transport& transport);
  ~OffloadModel();
  OffloadModel(const OffloadModel&) = delete;
  OffloadModel& operator=(const OffloadModel&) = delete;

  // Before run(). Throws InputError for a job whose schedule is not assigned, whose rank
  // map does not fit, or (policy stall) that needs more than a whole NIC has; at most
  // 2^20 jobs.
  void add(Job job);
  // Runs every job to completion on the model's own simulator; std::logic_error if one
  // never completes (a model bug).
  std::vector<JobResult> run();
  // With a transport, after every add(): NIC n's events run on *sims[part_of_nic[n]]
  // (the simulators outlive the model; each is run by one thread at a time). A null
  // simulator: another process runs that part, with its own copy of the model (below),
  // or the part has no NIC.
  void bind(std::vector<Simulator*> sims, std::vector<std::uint32_t> part_of_nic);
  // How many of job j's operations run on the NICs of part `part` (once bound).
  std::int64_t ops_in_part(std::uint32_t j, std::uint32_t part) const { return part_ops_[j][part]; }
  // The next instant step() must run at (Time::max(): none). `idle`: no event is pending
  // on any simulator and no message is on its way, so only steps can act (a collective
  // that waits on an operation then never completes). Call while no simulator runs.
  Time next_step(bool idle) const;
  // Every simulator has run every event at or before `at` (next_step()'s instant), none
  // after, its clock is at `at` (Simulator::advance_to), and none runs: issues,
  // completions and what they start, at `at`.
  void step(Time at);
  // A held job's issue, at `at` (before the run, or from a step at or before `at`);
  // std::logic_error for any other job.
  void issue_at(std::uint32_t j, Time at);
  // With a transport: its reports (see Transport::send), and the results so far (a job
  // not done has done == Time()).
  void message_arrived(std::uint32_t job, offload::OpId op);
  void message_completed(std::uint32_t job, offload::OpId op);
  const std::vector<JobResult>& results() const { return results_; }
  // Over several processes, each with a copy of the model that runs the NICs of its
  // parts: a step starts what it starts on the NICs that run here only, and reads what
  // every part has done, so before each step (and each next_step(true)) every copy
  // writes its parts' progress and reads the others' (the copies then step alike); at
  // the end one copy reads what the others' NICs kept (counter caches' counts, the
  // operations' times), and holds the whole results.
  void write_parts(ByteWriter& out) const;
  void read_parts(ByteReader& in);
  void write_part_results(ByteWriter& out) const;
  void read_part_results(ByteReader& in);
  std::size_t jobs() const { return jobs_.size(); }
  // The NIC that runs job j's operation `op` (the model's id).
  std::int32_t op_nic(std::uint32_t j, offload::OpId op) const;
  const Job& job(std::uint32_t j) const { return jobs_[j]; }
  // The schedule's id of the model's operation `op` in job `j` (for messages and traces).
  offload::OpId schedule_op(std::uint32_t j, offload::OpId op) const;

  // Before run(): keep every operation's times (memory: two times per operation per job).
  void trace_ops() { trace_ = true; }
  // Job j's operations by schedule id, once it has run: ready (its last dependence done;
  // a root: the job's start; an arrival: its message arrived), fired (offloaded: its counter reached the threshold, or
  // it started with the job; an arrival: its message arrived; software: the host posted it), completed; Time::max() for
  // what did not happen. Empty without trace_ops() or when the job never started.
  struct OpTimes {
    offload::OpId op;
    offload::Rank rank;
    offload::OpKind kind;
    Time ready, fired, completed;
  };
  std::vector<OpTimes> op_times(std::uint32_t j) const;

  std::size_t nics() const { return nics_.size(); }
  const NicPool& pool(std::int32_t nic) const { return nics_[static_cast<std::size_t>(nic)]->pool; }
  const CounterCache& cache(std::int32_t nic) const { return nics_[static_cast<std::size_t>(nic)]->cache; }
  Time makespan() const { return makespan_; }
  // Every change of the counters and slots in use: (time, counters summed over NICs,
  // most counters on one NIC, slots summed over NICs), after the change.
  struct Usage {
    Time time;
    std::int64_t counters, max_counters_on_a_nic, slots;
  };
  const std::vector<Usage>& usage() const { return usage_; }

 private:
  struct Running;  // one job's counters, cursors and progress
  // A NIC: its resources, its processing pipeline, and its events (on its part's
  // simulator).
  struct Nic final : EventHandler {
    Nic(OffloadModel& m, std::int32_t i, NicPool p, CounterCache c)
        : model(&m), index(i), pool(std::move(p)), cache(std::move(c)) {}
    void on_event(std::uint64_t tag) override { model->nic_event(*this, tag); }
    OffloadModel* model;
    std::int32_t index;
    std::uint32_t part = 0;
    Simulator* sim = nullptr;  // null: another process runs it
    NicPool pool;
    CounterCache cache;
    std::vector<std::pair<std::uint32_t, offload::OpId>> fifo;  // (job, op) to process
    std::size_t head = 0;
    bool busy = false;
    Time host_free;  // when its host is done posting (software path)
  };
  // Job j's progress on the NICs of one part, kept by that part's events.
  struct Tally {
    std::int64_t ops_done = 0, waits_done = 0;
    Time last_op, last_wait;  // when the last of each was done
  };
  void nic_event(Nic& nic, std::uint64_t tag);
  void issue(std::uint32_t j, Time now);
  // offload::decide() for job j against what its NICs have free now.
  offload::OffloadDecision decide_now(std::uint32_t j, bool earlier_waiting);
  void start_offloaded(std::uint32_t j, Time now);
  void start_software(std::uint32_t j, Time now);
  void started(std::uint32_t j, Time now);
  void start_waiting(Time now);
  void enqueue(std::uint32_t j, offload::OpId op);
  void nic_next(Nic& nic);
  void finish_op(std::uint32_t j, offload::OpId op, Nic& nic);
  void send(std::uint32_t j, offload::OpId op, Nic& nic);
  void op_done(std::uint32_t j, Nic& nic);
  void check_final_counters(std::uint32_t j, std::uint32_t part) const;
  [[noreturn]] void fired_early(std::uint32_t j, offload::OpId op, offload::CounterId k, std::int64_t threshold,
                                offload::OpId dep, Time now) const;
  void add_to_counter(std::uint32_t j, offload::CounterId c, std::int64_t v, Nic& nic);
  void deliver(std::uint32_t j, offload::OpId send, Nic& nic);
  void software_ready(std::uint32_t j, offload::OpId op, Nic& nic);
  void software_done(std::uint32_t j, offload::OpId op, Nic& nic);
  // When job j's host sees it complete (Time::max(): not yet; from step()).
  Time seen_at(std::uint32_t j) const;
  Time next_poll(std::uint32_t j, Time after) const;  // its host's first poll after `after`
  void complete(std::uint32_t j, Time now);
  std::int32_t nic_of(std::uint32_t j, offload::Rank r) const;
  Nic& nic_of_op(std::uint32_t j, offload::OpId op);
  offload::NicResources idle() const { return {p_.counters, p_.slots}; }  // one NIC, nothing held
  Time message_time(std::int64_t bytes) const;

  NicParams p_;
  Policy policy_;
  Simulator own_sim_;
  Transport* transport_ = nullptr;
  bool bound_ = false;
  std::vector<Simulator*> sims_;  // per part
  std::vector<std::unique_ptr<Nic>> nics_;
  std::vector<Job> jobs_;
  std::vector<JobResult> results_;
  std::vector<std::unique_ptr<Running>> running_;
  std::vector<std::vector<Tally>> tally_;            // per part, per job
  std::vector<std::vector<std::int64_t>> part_ops_;  // per job, per part
  // Issues to make, earliest first (then in the order they were asked for).
  struct Issue {
    Time at;
    std::uint64_t seq;
    std::uint32_t job;
    bool operator>(const Issue& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::vector<Issue> issues_;  // a min-heap
  std::uint64_t issue_seq_ = 0;
  std::vector<std::uint32_t> active_;    // started, not yet seen complete, by job index
  std::vector<std::uint32_t> draining_;  // seen complete, operations maybe still running
  std::vector<std::uint32_t> due_;       // step(): scratch
  Time last_step_;
  // Each distinct schedule prepared once (jobs keep their schedules alive, so the pointer
  // is a stable key).
  std::unordered_map<const offload::Schedule*, std::shared_ptr<const PreparedSchedule>> prepared_;
  std::vector<offload::NicResources> free_;               // per NIC: what decide() is given as free (scratch)
  std::vector<std::uint32_t> waiting_;                    // stalled jobs, in issue order
  std::vector<std::vector<std::uint32_t>> issued_after_;  // per job: jobs it issues on completion
  std::vector<Usage> usage_;
  void record_usage(Time now);
  struct Trace {
    std::vector<Time> fired, completed;  // by the model's op id
  };
  bool trace_ = false;
  std::vector<Trace> traces_;  // per job
  void fired(std::uint32_t j, offload::OpId op, Time now) {
    if (trace_) traces_[j].fired[static_cast<std::size_t>(op)] = now;
  }
  void completed(std::uint32_t j, offload::OpId op, Time now) {
    if (trace_) traces_[j].completed[static_cast<std::size_t>(op)] = now;
  }
  void start_trace(std::uint32_t j);
  std::size_t completed_ = 0;
  Time makespan_;
};

}  // namespace fabriclab::nicmodel
