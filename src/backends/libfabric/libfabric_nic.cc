#include "backends/libfabric/libfabric_nic.h"
#include "backends/libfabric/module.h"

#include <fmt/format.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>

#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"

namespace fabriclab::backends {

using exec::NicEvent;
using exec::NicInfo;
using exec::TriggeredOp;
using offload::Rank;

namespace {

constexpr int kWireUpSeconds = 60;

// Wiring-up messages carry this bit and their sender's rank.
constexpr std::uint64_t kWireUp = std::uint64_t{1} << 63;

[[noreturn]] void fail(const char* call, int rc) {
  throw std::runtime_error(fmt::format("libfabric: {} failed: {} ({})", call, fi_strerror(-rc), rc));
}
void check(const char* call, int rc) {
  if (rc != 0) fail(call, rc);
}

fi_datatype to_fi(offload::Datatype dt) {
  switch (dt) {
    case offload::Datatype::int64: return FI_INT64;
    case offload::Datatype::float64: return FI_DOUBLE;
    case offload::Datatype::float32: return FI_FLOAT;
  }
  return FI_DOUBLE;
}

// What a peer publishes: its endpoint name, then (key, base address) per registration.
struct Published {
  std::vector<std::byte> name;
  std::vector<std::uint64_t> keys, bases;
};

std::vector<std::byte> encode(const Published& p) {
  std::vector<std::byte> out;
  out.reserve(16 + p.name.size() + 16 * p.keys.size());
  auto put64 = [&](std::uint64_t v) {
    const std::size_t at = out.size();
    out.resize(at + 8);
    std::memcpy(out.data() + at, &v, 8);
  };
  put64(p.name.size());
  const std::size_t at = out.size();
  out.resize(at + p.name.size());
  if (!p.name.empty()) std::memcpy(out.data() + at, p.name.data(), p.name.size());
  put64(p.keys.size());
  for (std::size_t i = 0; i < p.keys.size(); ++i) {
    put64(p.keys[i]);
    put64(p.bases[i]);
  }
  return out;
}

Published decode(std::span<const std::byte> in) {
  std::size_t at = 0;
  auto get64 = [&] {
    if (at + 8 > in.size()) throw std::runtime_error("libfabric: truncated peer address");
    std::uint64_t v;
    std::memcpy(&v, in.data() + at, 8);
    at += 8;
    return v;
  };
  Published p;
  const std::uint64_t n = get64();
  if (at + n > in.size()) throw std::runtime_error("libfabric: truncated peer address");
  p.name.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
  at += n;
  const std::uint64_t k = get64();
  for (std::uint64_t i = 0; i < k; ++i) {
    p.keys.push_back(get64());
    p.bases.push_back(get64());
  }
  return p;
}

// Deferred work and everything it points to: libfabric keeps pointers into it until
// the operation has completed.
struct Work {
  fi_deferred_work work{};
  fi_op_rma rma{};
  fi_op_atomic atomic{};
  fi_op_cntr cntr{};
  iovec iov{};
  fi_rma_iov riov{};
  fi_ioc ioc{};
  fi_rma_ioc rioc{};
  void* desc = nullptr;
};

// Context of a software operation or a posted receive.
struct Ctx {
  NicEvent::Kind kind;
  std::uint64_t tag = 0;     // software transfer: the caller's tag
  std::uint64_t buffer = 0;  // receive: the message lands here
};

class LibfabricNic final : public exec::Nic {
 public:
  LibfabricNic(const std::string& provider, offload::Datatype dt) : dt_(dt) {
    fi_info* hints = fi_allocinfo();
    if (hints == nullptr) throw std::bad_alloc();
    hints->caps = FI_RMA | FI_ATOMIC | FI_TRIGGER | FI_RMA_EVENT | FI_MSG;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(provider.c_str());
    const int rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info_);
    fi_freeinfo(hints);
    if (rc != 0)
      throw InputError(
          fmt::format("no usable libfabric provider: '{}' on 127.0.0.1 with FI_RMA, FI_ATOMIC, FI_TRIGGER, "
                      "FI_RMA_EVENT and FI_MSG on a reliable-datagram endpoint ({}); `fi_info -l` lists "
                      "the providers installed",
                      provider, fi_strerror(-rc)));
    check("fi_fabric", fi_fabric(info_->fabric_attr, &fabric_, nullptr));
    check("fi_domain", fi_domain(fabric_, info_, &domain_, nullptr));
    fi_av_attr av{};
    av.type = FI_AV_TABLE;
    check("fi_av_open", fi_av_open(domain_, &av, &av_, nullptr));
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_CONTEXT;
    cq.size = 4096;
    check("fi_cq_open", fi_cq_open(domain_, &cq, &cq_, nullptr));
    check("fi_endpoint", fi_endpoint(domain_, info_, &ep_, nullptr));
    check("fi_ep_bind(av)", fi_ep_bind(ep_, &av_->fid, 0));
    check("fi_ep_bind(cq)", fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV));
    check("fi_enable", fi_enable(ep_));
    nic_info_.provider = info_->fabric_attr->prov_name;
    nic_info_.fabric = info_->fabric_attr->name;
    nic_info_.counters = static_cast<std::int64_t>(info_->domain_attr->cntr_cnt);
    std::size_t count = 0;
    const int arc = fi_atomicvalid(ep_, to_fi(dt), FI_SUM, &count);
    if (arc != 0 || count == 0)
      throw InputError(fmt::format("provider '{}' cannot do SUM atomics on {}{}", provider, offload::to_string(dt),
                                   arc != 0 ? fmt::format(" ({})", fi_strerror(-arc)) : ""));
    nic_info_.max_atomic_bytes = static_cast<std::int64_t>(count) * offload::datatype_size(dt);
    // The sockets provider carries a pair's traffic over one TCP connection and reads a
    // message header only once all of it is in the socket: a burst of 4 KiB atomics can
    // fill the receive buffer with a header split across it, and that direction stalls
    // for good, silently (docs/exec.md). Eight at a time stay far below the buffer.
    if (nic_info_.provider == "sockets") nic_info_.max_in_flight = 8;
  }

  ~LibfabricNic() override {
    if (ep_ != nullptr) fi_close(&ep_->fid);
    for (fid_mr* m : mrs_) fi_close(&m->fid);
    for (fid_cntr* c : cntrs_) fi_close(&c->fid);
    if (cq_ != nullptr) fi_close(&cq_->fid);
    if (av_ != nullptr) fi_close(&av_->fid);
    if (domain_ != nullptr) fi_close(&domain_->fid);
    if (fabric_ != nullptr) fi_close(&fabric_->fid);
    if (info_ != nullptr) fi_freeinfo(info_);
  }

  const NicInfo& info() const override { return nic_info_; }

  void setup(std::int64_t window_bytes, int counters, std::span<const int> key_counter) override {
    window_.assign(static_cast<std::size_t>(window_bytes), std::byte{0});
    fi_cntr_attr ca{};
    ca.events = FI_CNTR_EVENTS_COMP;
    for (int i = 0; i < counters; ++i) {
      fid_cntr* c = nullptr;
      check("fi_cntr_open", fi_cntr_open(domain_, &ca, &c, nullptr));
      cntrs_.push_back(c);
    }
    const bool prov_key = (info_->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    for (std::size_t k = 0; k < key_counter.size(); ++k) {
      fid_mr* mr = nullptr;
      check("fi_mr_reg",
            fi_mr_reg(domain_, window_.data(), window_.size(), FI_REMOTE_WRITE | FI_REMOTE_READ | FI_WRITE | FI_READ, 0,
                      prov_key ? 0 : k + 1, 0, &mr, nullptr));
      if (key_counter[k] >= 0)
        check("fi_mr_bind(cntr)",
              fi_mr_bind(mr, &cntrs_[static_cast<std::size_t>(key_counter[k])]->fid, FI_REMOTE_WRITE));
      if ((info_->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0) {
        check("fi_mr_bind(ep)", fi_mr_bind(mr, &ep_->fid, 0));
        check("fi_mr_enable", fi_mr_enable(mr));
      }
      mrs_.push_back(mr);
    }
  }

  std::vector<std::byte> address() const override {
    Published p;
    std::array<char, 256> name{};
    std::size_t len = name.size();
    check("fi_getname", fi_getname(&ep_->fid, name.data(), &len));
    const auto* b = reinterpret_cast<const std::byte*>(name.data());
    p.name.assign(b, b + len);
    const bool virt = (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    for (fid_mr* m : mrs_) {
      p.keys.push_back(fi_mr_key(m));
      p.bases.push_back(virt ? reinterpret_cast<std::uint64_t>(window_.data()) : 0);
    }
    return encode(p);
  }

  void connect(const std::vector<std::vector<std::byte>>& peers, Rank self) override {
    self_ = self;
    peers_.clear();
    addrs_.assign(peers.size(), FI_ADDR_UNSPEC);
    for (std::size_t r = 0; r < peers.size(); ++r) {
      peers_.push_back(decode(peers[r]));
      if (fi_av_insert(av_, peers_[r].name.data(), 1, &addrs_[r], 0, nullptr) != 1)
        throw std::runtime_error(fmt::format("libfabric: fi_av_insert of rank {} failed", r));
    }
    // Receives for the wiring-up messages, posted before any rank sends one (an
    // unexpected message overflows the provider's buffered-receive limit of 0).
    expect_notifications(static_cast<std::int64_t>(peers.size()));
  }

  // The sockets provider connects lazily, on a pair's first message. Inside a collective
  // that is fragile: two ranks may open their connection to each other at the same
  // moment, and a triggered operation whose post fails with anything but -FI_EAGAIN
  // (a connection that could not be made) is dropped by the provider without a trace.
  // It also puts connection set-up into the first iteration's time. So every pair is
  // wired up in both directions before any collective: each rank first connects to
  // itself (local atomics use that connection), then sends one message to every higher
  // rank and waits until it has heard from every lower one, then answers every lower
  // rank and waits for every higher one.
  void wire_up() override {
    const auto p = static_cast<Rank>(peers_.size());
    std::vector<char> heard(peers_.size(), 0);
    // Waits until every rank in [lo, hi) has been heard from (messages name their sender,
    // and may arrive in any order).
    auto await = [&](Rank lo, Rank hi) {
      const auto t0 = std::chrono::steady_clock::now();
      for (;;) {
        Rank missing = -1;
        for (Rank r = lo; r < hi && missing < 0; ++r)
          if (!heard[static_cast<std::size_t>(r)]) missing = r;
        if (missing < 0) return;
        NicEvent e;
        if (poll(e)) {
          const std::uint64_t sender = e.tag & ~kWireUp;
          if (e.kind != NicEvent::notified || (e.tag & kWireUp) != kWireUp || sender >= heard.size())
            throw std::runtime_error("libfabric: unexpected message while wiring up");
          heard[sender] = 1;
          continue;
        }
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(kWireUpSeconds))
          throw std::runtime_error(
              fmt::format("libfabric: rank {} did not hear from rank {} within {} s while connecting", self_, missing,
                          kWireUpSeconds));
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    };
    const std::uint64_t me = kWireUp | static_cast<std::uint64_t>(self_);
    notify(self_, me);  // local atomics go through a connection to itself
    await(self_, self_ + 1);
    for (Rank r = self_ + 1; r < p; ++r) notify(r, me);
    await(0, self_);
    for (Rank r = 0; r < self_; ++r) notify(r, me);
    await(self_ + 1, p);
    ctx_.clear();
  }

  std::span<std::byte> window() override { return window_; }

  void queue(const TriggeredOp& op) override {
    Work& w = work_.emplace_back();
    w.work.threshold = static_cast<std::uint64_t>(op.threshold);
    w.work.triggering_cntr = cntrs_.at(static_cast<std::size_t>(op.trigger));
    if (op.is_counter_add) {
      w.work.op_type = FI_OP_CNTR_ADD;
      w.cntr.cntr = cntrs_.at(static_cast<std::size_t>(op.target));
      w.cntr.value = static_cast<std::uint64_t>(op.add);
      w.work.op.cntr = &w.cntr;
    } else {
      w.work.completion_cntr = op.completion < 0 ? nullptr : cntrs_.at(static_cast<std::size_t>(op.completion));
      fill(op.transfer, w, &w.work.context);
      if (op.transfer.op == exec::DataOp::put) {
        w.work.op_type = FI_OP_WRITE;
        w.work.op.rma = &w.rma;
      } else {
        w.work.op_type = FI_OP_ATOMIC;
        w.work.op.atomic = &w.atomic;
      }
    }
    int rc;
    while ((rc = fi_control(&domain_->fid, FI_QUEUE_WORK, &w.work)) == -FI_EAGAIN) drain();
    check("fi_control(FI_QUEUE_WORK)", rc);
  }

  void clear_fired() override {
    work_.clear();
    ctx_.clear();
  }

  std::uint64_t read_counter(int c) override { return fi_cntr_read(cntrs_.at(static_cast<std::size_t>(c))); }
  std::uint64_t read_counter_errors(int c) override { return fi_cntr_readerr(cntrs_.at(static_cast<std::size_t>(c))); }
  void set_counter(int c, std::uint64_t value) override {
    check("fi_cntr_set", fi_cntr_set(cntrs_.at(static_cast<std::size_t>(c)), value));
  }

  // The sockets provider fires the triggered operations of a counter when the counter
  // changes; one that meets a full transmit queue (-FI_EAGAIN) stays queued, and the
  // provider looks at it again only at the counter's next change. When that was the last
  // change, the operation would wait forever (seen at P = 8 with 1 MiB: 256 atomic
  // segments on one threshold). Adding 0 to a counter is a change that changes nothing:
  // it makes the provider re-examine the counter's queued operations.
  void progress() override {
    for (fid_cntr* c : cntrs_) check("fi_cntr_add(0)", fi_cntr_add(c, 0));
  }

  void post(const exec::Transfer& t, std::uint64_t tag) override {
    Ctx& ctx = ctx_.emplace_back(Ctx{NicEvent::completed, tag, 0});
    Work& w = work_.emplace_back();
    fill(t, w, &ctx);
    const std::uint64_t flags = FI_DELIVERY_COMPLETE | FI_COMPLETION;
    for (;;) {
      const ssize_t rc = t.op == exec::DataOp::put ? fi_writemsg(ep_, &w.rma.msg, flags)
                                                   : fi_atomicmsg(ep_, &w.atomic.msg, flags);
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) fail(t.op == exec::DataOp::put ? "fi_writemsg" : "fi_atomicmsg", static_cast<int>(rc));
      drain();
    }
  }

  void notify(Rank peer, std::uint64_t tag) override {
    for (;;) {
      const ssize_t rc = fi_inject(ep_, &tag, sizeof tag, addrs_.at(static_cast<std::size_t>(peer)));
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) fail("fi_inject", static_cast<int>(rc));
      drain();
    }
  }

  void expect_notifications(std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i) {
      Ctx& ctx = ctx_.emplace_back(Ctx{NicEvent::notified, 0, 0});
      for (;;) {
        // No FI_MR_LOCAL was asked for, so local buffers need no registration.
        const ssize_t rc = fi_recv(ep_, &ctx.buffer, sizeof ctx.buffer, nullptr, FI_ADDR_UNSPEC, &ctx);
        if (rc == 0) break;
        if (rc != -FI_EAGAIN) fail("fi_recv", static_cast<int>(rc));
        drain();
      }
    }
  }

  bool poll(NicEvent& e) override {
    drain();
    if (events_.empty()) return false;
    e = events_.front();
    events_.pop_front();
    return true;
  }

 private:
  // Fills the message of a transfer into `w` (for deferred work, `context` must be the
  // work item's own context: the sockets provider requires it).
  void fill(const exec::Transfer& t, Work& w, void* context) {
    const auto peer = static_cast<std::size_t>(t.peer);
    const Published& p = peers_.at(peer);
    const auto key = static_cast<std::size_t>(t.key);
    w.desc = fi_mr_desc(mrs_.at(0));
    // The fields fi_msg_rma and fi_msg_atomic share.
    auto common = [&](auto& msg, auto* iov, auto* rma_iov) {
      msg.msg_iov = iov;
      msg.desc = &w.desc;
      msg.iov_count = 1;
      msg.addr = addrs_.at(peer);
      msg.rma_iov = rma_iov;
      msg.rma_iov_count = 1;
      msg.context = context;
    };
    const std::uint64_t remote = p.bases.at(key) + static_cast<std::uint64_t>(t.dst);
    if (t.op == exec::DataOp::put) {
      w.iov = {window_.data() + t.src, static_cast<std::size_t>(t.bytes)};
      w.riov = {remote, static_cast<std::size_t>(t.bytes), p.keys.at(key)};
      w.rma.ep = ep_;
      common(w.rma.msg, &w.iov, &w.riov);
    } else {
      const auto n = static_cast<std::size_t>(t.bytes / offload::datatype_size(dt_));
      w.ioc = {window_.data() + t.src, n};
      w.rioc = {remote, n, p.keys.at(key)};
      w.atomic.ep = ep_;
      common(w.atomic.msg, &w.ioc, &w.rioc);
      w.atomic.msg.datatype = to_fi(dt_);
      w.atomic.msg.op = FI_SUM;
    }
  }

  // Moves completions from the CQ to events_.
  void drain() {
    fi_cq_entry entries[64];
    for (;;) {
      const ssize_t n = fi_cq_read(cq_, entries, 64);
      if (n == -FI_EAGAIN) return;
      if (n == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        fi_cq_readerr(cq_, &err, 0);
        const auto* ctx = static_cast<const Ctx*>(err.op_context);
        throw std::runtime_error(fmt::format("libfabric: {} failed: {}",
                                             ctx == nullptr ? std::string("an operation")
                                             : ctx->kind == NicEvent::notified
                                                 ? std::string("a receive of a notification")
                                                 : fmt::format("software transfer of op {}", ctx->tag),
                                             fi_strerror(err.err)));
      }
      if (n < 0) fail("fi_cq_read", static_cast<int>(n));
      for (ssize_t i = 0; i < n; ++i) {
        const auto* ctx = static_cast<const Ctx*>(entries[i].op_context);
        events_.push_back({ctx->kind, ctx->kind == NicEvent::notified ? ctx->buffer : ctx->tag});
      }
    }
  }

  offload::Datatype dt_;
  NicInfo nic_info_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::vector<fid_cntr*> cntrs_;
  std::vector<fid_mr*> mrs_;
  std::vector<std::byte> window_;
  std::vector<Published> peers_;
  Rank self_ = 0;
  std::vector<fi_addr_t> addrs_;
  std::deque<Work> work_;
  std::deque<Ctx> ctx_;
  std::deque<NicEvent> events_;
};

}  // namespace

std::unique_ptr<exec::Nic> open_libfabric_nic(const std::string& provider, offload::Datatype dt) {
  return std::make_unique<LibfabricNic>(provider, dt);
}

}  // namespace fabriclab::backends

extern "C" fabriclab::exec::NicFactory fabriclab_libfabric_backend() {
  return &fabriclab::backends::open_libfabric_nic;
}
