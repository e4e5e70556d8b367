#include "scenario/batch/tune.h"

#include <fmt/format.h>
#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/units.h"
#include "scenario/batch/ranks.h"
#include "scenario/batch/sweep.h"
#include "scenario/batch/tune_report.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;

namespace {

// v rounded to 3 significant digits: tuned values read as settings, not as noise.
double three_digits(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

}  // namespace

std::string TuneParam::value_at(double u) const {
  u = std::clamp(u, 0.0, 1.0);
  if (scale == Scale::choice) {
    const auto n = choices.size();
    return choices[std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)))];
  }
  double v = scale == Scale::log ? std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo))) : lo + u * (hi - lo);
  v = scale == Scale::integer ? std::round(v) : three_digits(v);
  v = std::clamp(v, lo, hi);
  const auto whole = static_cast<std::int64_t>(std::llround(v));
  switch (kind) {
    case params::Kind::time: return to_string(Time::from_ps(whole));
    case params::Kind::bytes: return to_string(Bytes::from_count(whole));
    case params::Kind::rate: return to_string(BitRate::from_bps(whole));
    case params::Kind::integer: return std::to_string(whole);
    default: return fmt::format("{}", v);
  }
}

double TuneParam::number(const std::string& text) const {
  const ParamSpec* spec = fabric_parameters().find(key);
  if (!spec) throw InputError(fmt::format("--param: unknown key '{}'", key));
  const params::Value v = params::parse(*spec, text);
  return kind == params::Kind::real ? v.d : static_cast<double>(v.i) / static_cast<double>(unit);
}

TuneParam parse_tune_param(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("--param '{}': expected key=LO..HI[:log|:int] or key=A,B,C", text));
  TuneParam p;
  p.key = text.substr(0, eq);
  const ParamSpec* spec = fabric_parameters().find(p.key);
  if (!spec) throw InputError(fmt::format("--param: unknown key '{}' (fabriclab run --parameters lists them)", p.key));
  p.kind = spec->kind;
  if (!spec->unit.empty()) {  // a device's rate or time: searched in whole units
    p.kind = params::Kind::integer;
    p.unit_name = spec->unit;
    p.unit = spec->kind == params::Kind::time ? parse_time("1" + spec->unit).ps()
                                              : parse_bit_rate("1" + spec->unit).bps();
  }
  std::string range = text.substr(eq + 1);
  const auto parse_value = [&](const std::string& v) {
    try {
      return params::parse(*spec, v);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--param {}: '{}': {}", p.key, v, e.what()));
    }
  };
  const auto dots = range.find("..");
  if (dots == std::string::npos) {
    // Choices: A,B,C; or A;B;C when a value is itself a list ("1,1,2,2;1,1,1,4").
    const char sep = range.find(';') != std::string::npos ? ';' : ',';
    p.scale = TuneParam::Scale::choice;
    p.choices = params::split_list(range, sep);
    if (p.choices.size() < 2 ||
        static_cast<std::size_t>(std::count(range.begin(), range.end(), sep)) + 1 != p.choices.size())
      throw InputError(fmt::format("--param {}: '{}': expected LO..HI[:log|:int] or at least two choices A,B,... "
                                   "(A;B;... when a choice is a list)",
                                   p.key, range));
    for (std::size_t i = 0; i < p.choices.size(); ++i) {
      p.choices[i] = parse_value(p.choices[i]).text;
      for (std::size_t k = 0; k < i; ++k)
        if (p.choices[k] == p.choices[i])
          throw InputError(fmt::format("--param {}: choice '{}' is given twice", p.key, p.choices[i]));
    }
    return p;
  }
  if (const auto colon = range.rfind(':'); colon != std::string::npos && colon > dots) {
    const std::string scale = range.substr(colon + 1);
    if (scale == "log") p.scale = TuneParam::Scale::log;
    else if (scale == "int") p.scale = TuneParam::Scale::integer;
    else throw InputError(fmt::format("--param {}: scale '{}': expected log or int", p.key, scale));
    range = range.substr(0, colon);
  }
  const bool numeric = p.kind == params::Kind::time || p.kind == params::Kind::bytes || p.kind == params::Kind::rate ||
                       p.kind == params::Kind::integer || p.kind == params::Kind::real;
  if (!numeric)
    throw InputError(fmt::format("--param {}: a range needs a number; this key takes {}: list its choices (A,B,...)",
                                 p.key, params::describe(p.kind)));
  const auto number = [&](const std::string& v) {
    (void)parse_value(v);  // its message names the option
    return p.number(v);
  };
  p.lo = number(range.substr(0, range.find("..")));
  p.hi = number(range.substr(range.find("..") + 2));
  if (p.unit != 1 && (p.lo != std::floor(p.lo) || p.hi != std::floor(p.hi)))
    throw InputError(fmt::format("--param {}: '{}': a range of this key is searched in whole {} (as a NIC takes it): "
                                 "give whole bounds, or list finer values as choices (A,B,...)",
                                 p.key, range, spec->unit));
  if (!(p.lo < p.hi))
    throw InputError(fmt::format("--param {}: '{}': the low end must be below the high end", p.key, range));
  if (p.scale == TuneParam::Scale::log && p.lo <= 0)
    throw InputError(fmt::format("--param {}: a log scale needs a low end above 0", p.key));
  if (p.kind == params::Kind::integer && p.scale == TuneParam::Scale::linear) p.scale = TuneParam::Scale::integer;
  return p;
}

ObjectiveTerm parse_objective_term(const std::string& text, double sign) {
  ObjectiveTerm t{sign, text};
  if (const auto star = text.find('*'); star != std::string::npos) {
    const auto w = metric_number(text.substr(0, star));
    if (!w || *w <= 0)
      throw InputError(fmt::format("{} '{}': expected [WEIGHT*]METRIC with a weight above 0",
                                   sign > 0 ? "--maximize" : "--minimize", text));
    t.weight = sign * *w;
    t.metric = text.substr(star + 1);
  }
  if (t.metric.empty())
    throw InputError(fmt::format("{} '{}': no metric", sign > 0 ? "--maximize" : "--minimize", text));
  return t;
}

TuneConstraint parse_tune_constraint(const std::string& text) {
  for (const char* op : {"<=", ">="}) {
    const auto at = text.find(op);
    if (at == std::string::npos) continue;
    const auto bound = metric_number(text.substr(at + 2));
    if (at == 0 || !bound) break;
    return {text.substr(0, at), op[0] == '<', *bound, text};
  }
  throw InputError(fmt::format("--constraint '{}': expected METRIC<=NUMBER or METRIC>=NUMBER", text));
}

bool Trial::feasible() const {
  return result.ok && std::all_of(result.excess.begin(), result.excess.end(), [](double e) { return e <= 0; });
}

long best_trial(const std::vector<Trial>& trials) {
  long best = -1;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].feasible() &&
        (best < 0 || trials[i].result.objective > trials[static_cast<std::size_t>(best)].result.objective))
      best = static_cast<long>(i);
  return best;
}

namespace {

// What NLopt's callbacks share over the passes of a search. A pass runs ISRES from its
// seed; the points asked are served from what has run. In a pass that runs ahead, the
// first point not run yet (the next trial) opens a batch: the rest of its generation is
// collected with stand-in values, the pass is stopped at the generation's end, the batch
// runs, and the next pass replays up to there on real values.
struct SearchState {
  const std::vector<TuneParam>* space = nullptr;
  std::size_t limit = 0;
  const std::function<std::vector<TrialResult>(const std::vector<TrialRequest>&)>* evaluate = nullptr;
  std::size_t population = 1;

  std::vector<Trial> trials;                                  // in the order the search asked
  std::map<std::vector<std::string>, std::size_t> index;      // values -> trial
  std::map<std::vector<std::string>, TrialResult> ran_ahead;  // run in a batch, not asked yet
  std::exception_ptr error;

  // This pass.
  nlopt_opt opt = nullptr;
  bool ahead = false;               // run ahead (else evaluate as asked)
  std::size_t calls = 0;            // objective calls so far: ISRES evaluates a generation's points in turn
  std::size_t batch_end = 0;        // with a batch open: the call that starts the next generation
  std::vector<TrialRequest> batch;  // the points collected (the first is the next trial)
  std::set<std::vector<std::string>> in_batch;
  // The last point looked up: the constraints are asked about the point the objective was.
  std::vector<double> last_x;
  const TrialResult* last = nullptr;

  std::vector<std::string> values_at(const double* x) const {
    std::vector<std::string> values;
    for (std::size_t d = 0; d < space->size(); ++d) values.push_back((*space)[d].value_at(x[d]));
    return values;
  }

  void stop(std::exception_ptr e = nullptr) {
    if (e && !error) error = e;
    nlopt_force_stop(opt);
  }

  // A trial asked for the first time: its index is the next.
  const TrialResult* take(std::vector<std::string> values, TrialResult r) {
    index.emplace(values, trials.size());
    trials.push_back({std::move(values), std::move(r)});
    return &trials.back().result;
  }

  // The result at x; nullptr for a stand-in (a batch is being collected) or when the
  // search must stop.
  const TrialResult* at(const double* x, bool objective) {
    const std::size_t n = space->size();
    if (objective) ++calls;
    if (!batch.empty() && objective && calls > batch_end) {  // the next generation: the batch is whole
      stop();
      return nullptr;
    }
    if (!objective && last_x.size() == n && std::equal(x, x + n, last_x.begin())) return batch.empty() ? last : nullptr;
    last_x.assign(x, x + n);
    last = lookup(x);
    return last;
  }

  const TrialResult* lookup(const double* x) {
    std::vector<std::string> values = values_at(x);
    if (const auto it = index.find(values); it != index.end()) return &trials[it->second].result;
    if (!batch.empty()) {  // collecting: a stand-in, and the point joins the batch
      if (!ran_ahead.count(values) && trials.size() + batch.size() < limit && in_batch.insert(values).second)
        batch.push_back({trials.size() + batch.size(), std::move(values)});
      return nullptr;
    }
    if (trials.size() >= limit || error) {
      stop();
      return nullptr;
    }
    if (const auto it = ran_ahead.find(values); it != ran_ahead.end()) {
      TrialResult r = std::move(it->second);
      ran_ahead.erase(it);
      return take(std::move(values), std::move(r));
    }
    if (ahead) {  // open a batch: this point and the rest of its generation
      batch_end = ((calls - 1) / population + 1) * population;
      in_batch.insert(values);
      batch.push_back({trials.size(), std::move(values)});
      return nullptr;
    }
    try {
      std::vector<TrialResult> r = (*evaluate)({{trials.size(), values}});
      return take(std::move(values), std::move(r.at(0)));
    } catch (...) {
      stop(std::current_exception());
      return nullptr;
    }
  }
};

struct ConstraintRef {
  SearchState* state;
  std::size_t k;  // the constraint; k == its count: the implicit "every run ended safely"
};

// A failed or unsafe trial is scored far below any real one (ISRES also sees it violate
// the implicit constraint). A stand-in scores the same: ISRES draws a generation's points
// before it ranks them, so what a stand-in says changes nothing that is kept.
constexpr double kFailed = -1e300;

double objective_cb(unsigned, const double* x, double*, void* data) {
  const TrialResult* t = static_cast<SearchState*>(data)->at(x, true);
  return t && t->ok ? t->objective : kFailed;
}

double constraint_cb(unsigned, const double* x, double*, void* data) {
  const auto* c = static_cast<ConstraintRef*>(data);
  const TrialResult* t = c->state->at(x, false);
  if (!t) return 0;
  if (c->k == t->excess.size()) return t->ok ? -1 : 1;
  return t->excess[c->k];
}

// Objective and constraint calls a search may spend on replays before it stops running
// ahead (a space of few distinct points can make many passes of many repeated points).
constexpr std::size_t kReplayBudget = 20'000'000;

}  // namespace

std::vector<Trial> search(const std::vector<TuneParam>& space, std::size_t constraints, std::size_t trials,
                          std::uint64_t seed,
                          const std::function<std::vector<TrialResult>(const std::vector<TrialRequest>&)>& evaluate,
                          bool parallel) {
  if (space.empty()) throw InputError("tune: at least one --param is required");
  if (trials == 0) throw InputError("tune: --trials must be at least 1");
  const auto n = static_cast<unsigned>(space.size());
  SearchState st;
  st.space = &space;
  st.limit = trials;
  st.evaluate = &evaluate;
  // A population that leaves room for generations within the trials (ISRES's default,
  // 20 (n + 1), would spend a short search on its first one).
  st.population = std::clamp<std::size_t>(trials / 4, n + 2, 20 * (n + 1));
  std::vector<ConstraintRef> refs;
  for (std::size_t k = 0; k <= constraints; ++k) refs.push_back({&st, k});
  std::size_t replayed = 0;
  for (;;) {
    st.opt = nlopt_create(NLOPT_GN_ISRES, n);
    if (!st.opt) throw std::runtime_error("nlopt_create(ISRES) failed");
    struct Destroy {
      nlopt_opt o;
      ~Destroy() { nlopt_destroy(o); }
    } destroy{st.opt};
    nlopt_srand(static_cast<unsigned long>(seed));
    nlopt_set_lower_bounds1(st.opt, 0.0);
    nlopt_set_upper_bounds1(st.opt, 1.0);
    nlopt_set_max_objective(st.opt, objective_cb, &st);
    for (auto& r : refs) nlopt_add_inequality_constraint(st.opt, constraint_cb, &r, 0.0);
    nlopt_set_population(st.opt, static_cast<unsigned>(st.population));
    // Calls that land on points already run cost nothing: bounded by distinct points (at()).
    nlopt_set_maxeval(st.opt, static_cast<int>(std::min<std::size_t>(trials * 200, 1u << 30)));
    st.ahead = parallel && replayed < kReplayBudget;
    st.calls = 0;
    st.batch.clear();
    st.in_batch.clear();
    st.last_x.clear();
    std::vector<double> x(n, 0.5);
    double f = 0;
    // It ends by force_stop or maxeval; the trials are the result.
    const nlopt_result rc = nlopt_optimize(st.opt, x.data(), &f);
    if (st.error) std::rethrow_exception(st.error);
    if (st.batch.empty()) {
      if (rc == NLOPT_FAILURE || rc == NLOPT_INVALID_ARGS || rc == NLOPT_OUT_OF_MEMORY)
        throw std::runtime_error(
            fmt::format("NLopt's ISRES stopped with error {} after {} trials", static_cast<int>(rc), st.trials.size()));
      break;
    }
    replayed += st.calls * (constraints + 2);
    std::vector<TrialResult> results = evaluate(st.batch);
    if (results.size() != st.batch.size()) throw std::logic_error("tune: a batch's results do not match its points");
    for (std::size_t i = 0; i < results.size(); ++i) st.ran_ahead.emplace(st.batch[i].values, std::move(results[i]));
  }
  return std::move(st.trials);
}

std::vector<Trial> search(const std::vector<TuneParam>& space, std::size_t constraints, std::size_t trials,
                          std::uint64_t seed,
                          const std::function<TrialResult(std::size_t, const std::vector<std::string>&)>& evaluate) {
  return search(
      space, constraints, trials, seed,
      [&](const std::vector<TrialRequest>& batch) {
        std::vector<TrialResult> out;
        for (const TrialRequest& r : batch) out.push_back(evaluate(r.index, r.values));
        return out;
      },
      false);
}

namespace {

// A run's metrics: summary.json flattened, numbers only, and the derived ones.
std::map<std::string, double> metrics_of(const fs::path& summary) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : flatten_summary(read_json(summary), {"scenario", "config"}))
    if (const auto x = metric_number(v)) out[k] = *x;
    else if (v.empty()) out[k] = std::numeric_limits<double>::quiet_NaN();  // null: none in this run
  for (const auto& [k, x] : derived_metrics(out)) out[k] = x;
  return out;
}

double metric(const std::map<std::string, double>& m, const std::string& name, const std::string& option) {
  if (const auto it = m.find(name); it != m.end()) return it->second;
  std::string some;
  std::size_t shown = 0;
  for (const auto& [k, v] : m)
    if (k.rfind("totals.", 0) == 0 || k.rfind("flows.", 0) == 0 || k == "goodput_gbps")
      some += (shown++ ? ", " : "") + k;
  throw InputError(fmt::format("{}: no metric '{}' in a run's summary.json (numbers such as: {})", option, name, some));
}

// The parsed options.
struct Problem {
  std::vector<TuneParam> space;
  std::vector<ObjectiveTerm> terms;
  std::vector<TuneConstraint> constraints;
  std::int64_t base_seed = 1;
};

// One setting (the scenario with `overrides`) run at `seeds` seeds from `first_seed`
// into dir/sK, those not complete yet: the objective's mean, each constraint's worst
// excess, and the metrics behind them (objective terms' means, constraints' worst values).
struct Measured {
  TrialResult result;
  std::vector<double> metrics;
  std::vector<int> status;  // per seed: 0 ok, 1 unsafe, 2 bad input, 3 internal error
  std::string invalid;      // why the settings do not load (nothing ran)
  std::string note;         // why runs that ended well could not be scored (a metric with no value)
  // Means over the seeds, for the trade-off plot.
  double goodput_gbps = std::numeric_limits<double>::quiet_NaN();
  double pause_frames = std::numeric_limits<double>::quiet_NaN();
};

// The runs of one setting read back from dir/sK into m (statuses already there): the
// objective's mean, each constraint's worst excess and value, the trade-off's means.
void read_back(const TuneOptions& opt, const Problem& pb, const fs::path& dir, Measured& m) {
  const std::size_t nt = pb.terms.size(), nc = pb.constraints.size();
  m.metrics.assign(nt + nc, 0);
  m.result.excess.assign(nc, -std::numeric_limits<double>::infinity());
  std::vector<double> worst(nc, 0);
  unsigned measured = 0;
  double goodput = 0, pauses = 0;
  const auto optional = [](const std::map<std::string, double>& values, const char* name) {
    const auto it = values.find(name);
    return it == values.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  };
  for (unsigned k = 0; k < opt.seeds; ++k) {
    const fs::path summary = dir / fmt::format("s{}", k) / "summary.json";
    if (m.status[k] >= 2 || !complete_summary(summary)) {
      m.result.ok = false;
      if (m.status[k] < 2) m.status[k] = 3;
      continue;
    }
    if (m.status[k] == 1) m.result.ok = false;
    // A run read back from disk may have been unsafe: its summary says so.
    const auto values = metrics_of(summary);
    if (values.count("totals.lossless_drops") && values.at("totals.lossless_drops") > 0) {
      m.result.ok = false;
      m.status[k] = 1;
    }
    // Every value the objective and the constraints need; one with none in this run (no
    // flow finished for an FCT, no collective done for a bus bandwidth) leaves the trial
    // unscored, said in its note, rather than ending the search.
    std::vector<double> v(nt + nc);
    for (std::size_t t = 0; t < nt; ++t)
      v[t] = metric(values, pb.terms[t].metric, pb.terms[t].weight > 0 ? "--maximize" : "--minimize");
    for (std::size_t c = 0; c < nc; ++c)
      v[nt + c] = metric(values, pb.constraints[c].metric, "--constraint " + pb.constraints[c].text);
    if (const auto nan = std::find_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }); nan != v.end()) {
      const std::size_t i = static_cast<std::size_t>(nan - v.begin());
      if (m.note.empty())
        m.note = fmt::format("{}: no value in the run of s{}",
                             i < nt ? pb.terms[i].metric : pb.constraints[i - nt].metric, k);
      m.result.ok = false;
      continue;
    }
    goodput += optional(values, "goodput_gbps");  // for the plots only: NaN when missing
    pauses += optional(values, "totals.pfc_pause_frames");
    for (std::size_t t = 0; t < nt; ++t) {
      m.metrics[t] += v[t];
      m.result.objective += pb.terms[t].weight * v[t];
    }
    for (std::size_t c = 0; c < nc; ++c) {
      const TuneConstraint& tc = pb.constraints[c];
      const double excess = tc.at_most ? v[nt + c] - tc.bound : tc.bound - v[nt + c];
      if (excess >= m.result.excess[c]) {
        m.result.excess[c] = excess;
        worst[c] = v[nt + c];
      }
    }
    ++measured;
  }
  if (measured == 0) {  // nothing ran to the end: no numbers, not zeros
    m.metrics.assign(nt + nc, std::numeric_limits<double>::quiet_NaN());
    m.result.objective = std::numeric_limits<double>::quiet_NaN();
    m.result.excess.assign(nc, std::numeric_limits<double>::infinity());
    return;
  }
  m.goodput_gbps = goodput / measured;
  m.pause_frames = pauses / measured;
  m.result.objective /= measured;
  for (std::size_t t = 0; t < nt; ++t) m.metrics[t] /= measured;
  for (std::size_t c = 0; c < nc; ++c) m.metrics[nt + c] = worst[c];
}

// A Measured as lines of text (numbers with every digit; "nan" and "inf" read back).
std::string to_text(const Measured& m) {
  std::string t = fmt::format("{}\n", m.result.ok ? 1 : 0);
  for (int s : m.status) t += fmt::format("{} ", s);
  t += fmt::format("\n{:.17g} {:.17g} {:.17g}\n", m.result.objective, m.goodput_gbps, m.pause_frames);
  for (double e : m.result.excess) t += fmt::format("{:.17g} ", e);
  t += "\n";
  for (double v : m.metrics) t += fmt::format("{:.17g} ", v);
  return t + "\n" + m.note + "\n";  // (a note is one line: metric names and a seed's directory)
}

Measured from_text(std::istream& in, unsigned seeds, const Problem& pb) {
  std::string word;
  const auto number = [&] {
    in >> word;
    return std::stod(word);
  };
  Measured m;
  int ok = 0;
  in >> ok;
  m.result.ok = ok != 0;
  m.status.assign(seeds, 0);
  for (auto& s : m.status) in >> s;
  m.result.objective = number();
  m.goodput_gbps = number();
  m.pause_frames = number();
  m.result.excess.resize(pb.constraints.size());
  for (auto& e : m.result.excess) e = number();
  m.metrics.resize(pb.terms.size() + pb.constraints.size());
  for (auto& v : m.metrics) v = number();
  std::getline(in, word);  // the rest of the metrics' line
  std::getline(in, m.note);
  return m;
}

// One setting to measure: overrides of the scenario, run into dir/sK.
struct SettingRuns {
  std::vector<std::string> overrides;
  fs::path dir;
};

// Settings (the scenario with each one's overrides) run at `seeds` seeds from
// `first_seed` into dir/sK, those not complete yet, all of them together on the workers
// (and the MPI ranks): for each, the objective's mean, each constraint's worst excess, and
// the metrics behind them (objective terms' means, constraints' worst values). `ran`
// counts the settings that had runs to make.
std::vector<Measured> measure(const TuneOptions& opt, const Problem& pb, const std::vector<SettingRuns>& settings,
                              std::int64_t first_seed, const std::string& label, std::size_t* ran) {
  std::vector<Measured> out(settings.size());
  std::vector<std::size_t> valid;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    Measured& m = out[i];
    m.status.assign(opt.seeds, 0);
    m.metrics.assign(pb.terms.size() + pb.constraints.size(), std::numeric_limits<double>::quiet_NaN());
    // Settings that break a rule across keys (Kmin above Kmax, ...): invalid, not run.
    std::vector<std::string> all = opt.sets;
    all.insert(all.end(), settings[i].overrides.begin(), settings[i].overrides.end());
    try {
      check_across_keys(fabric_parameters().resolve(opt.scenario, all));
      valid.push_back(i);
    } catch (const InputError& e) {
      m.invalid = e.what();
      if (m.invalid.rfind("--set: ", 0) == 0) m.invalid = m.invalid.substr(7);
      m.status.assign(opt.seeds, 2);
      m.result.ok = false;
      m.result.excess.assign(pb.constraints.size(), std::numeric_limits<double>::infinity());
    }
  }
  // Rank 0 alone looks at the disk; the others take its word (a broadcast), so that every
  // rank of an MPI job makes the same calls and sees the same results even when its view
  // of the shared file system lags.
  const bool root = mpi_rank() == 0;
  std::string pending;  // a line per valid setting: its seeds still to run
  if (root)
    for (std::size_t i = 0; i < settings.size(); ++i) {
      const fs::path& dir = settings[i].dir;
      // Runs left by other settings under this name (an interrupted search that went
      // another way, or another --trials) are not these settings' runs; an invalid
      // setting has none.
      std::error_code ec;
      if (!out[i].invalid.empty()) {
        fs::remove_all(dir, ec);
        continue;
      }
      std::string said;
      for (const auto& o : settings[i].overrides) said += o + "\n";
      said += fmt::format("first sim.seed {}\n", first_seed);
      if (fs::exists(dir / "settings.txt", ec) && read_text(dir / "settings.txt") != said) fs::remove_all(dir, ec);
      fs::create_directories(dir, ec);
      write_file(dir / "settings.txt", said);
      for (unsigned k = 0; k < opt.seeds; ++k)
        if (!complete_summary(dir / fmt::format("s{}", k) / "summary.json")) pending += fmt::format("{} ", k);
      pending += "\n";
    }
  pending = broadcast_from_root(pending);
  std::vector<std::vector<std::string>> points;
  std::vector<std::string> dirs;
  std::vector<std::pair<std::size_t, unsigned>> which;  // (setting, seed)
  std::istringstream lines(pending);
  std::string line;
  for (const std::size_t i : valid) {
    std::getline(lines, line);
    std::istringstream in(line);  // (not views::istream: clang 14 with libstdc++ 12 cannot)
    bool any = false;
    for (unsigned k = 0; in >> k; any = true) {
      std::vector<std::string> o = settings[i].overrides;
      o.push_back(fmt::format("sim.seed={}", first_seed + k));
      points.push_back(std::move(o));
      dirs.push_back((settings[i].dir / fmt::format("s{}", k)).string());
      which.emplace_back(i, k);
    }
    if (any && ran) *ran += 1;
  }
  if (!points.empty()) {
    const auto st = run_scenario_points(opt.scenario, opt.sets, points, dirs, opt.jobs, label, false);
    if (root)
      for (std::size_t p = 0; p < which.size(); ++p) out[which[p].first].status[which[p].second] = st[p];
  }
  std::string text;
  if (root) try {
      for (const std::size_t i : valid) {
        read_back(opt, pb, settings[i].dir, out[i]);
        text += to_text(out[i]);
      }
    } catch (const std::exception& e) {
      text = std::string("error\n") + e.what();
    }
  text = broadcast_from_root(text);
  if (text.rfind("error\n", 0) == 0) throw InputError(text.substr(6));
  std::istringstream in(text);
  for (const std::size_t i : valid) out[i] = from_text(in, opt.seeds, pb);
  return out;
}

std::string status_text(const Measured& m) {
  if (!m.invalid.empty()) return "invalid";
  const int worst = *std::max_element(m.status.begin(), m.status.end());
  return worst == 0 ? "ok" : worst == 1 ? "unsafe" : "failed";
}

// A CSV cell: quoted (RFC 4180) when it holds a comma, a quote or a line break.
std::string csv_cell(const std::string& t) {
  if (t.find_first_of(",\"\n") == std::string::npos) return t;
  std::string q = "\"";
  for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::vector<std::string> overrides_of(const Problem& pb, const std::vector<std::string>& values) {
  std::vector<std::string> o;
  for (std::size_t d = 0; d < pb.space.size(); ++d) o.push_back(pb.space[d].key + "=" + values[d]);
  return o;
}

// DIR/tune.json: what was asked (not --trials, --jobs: a rerun may extend the search).
void claim_directory(const fs::path& dir, const TuneOptions& opt) {
  nlohmann::ordered_json j;
  j["scenario"] = fs::absolute(opt.scenario).lexically_normal().string();
  j["scenario_text"] = read_text(opt.scenario);
  j["param"] = opt.params;
  j["maximize"] = opt.maximize;
  j["minimize"] = opt.minimize;
  j["constraint"] = opt.constraints;
  j["set"] = opt.sets;
  j["seeds"] = opt.seeds;
  j["seed"] = opt.seed;
  j["algorithm"] = "NLopt GN_ISRES";
  std::error_code ec;
  fs::create_directories(dir / "trials", ec);
  if (ec) throw InputError(fmt::format("{}: cannot create: {}", dir.string(), ec.message()));
  const fs::path path = dir / "tune.json";
  if (fs::exists(path)) {
    if (read_json(path) != nlohmann::json(j))
      throw InputError(fmt::format("{} holds a different tuning (scenario, its text, --param, the objective, "
                                   "--constraint, --set, --seeds or --seed differ): use another --out or remove it",
                                   dir.string()));
  } else {
    write_file(path, j.dump(2) + "\n");
  }
}

std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }

// A TOML value for a key's text: numbers bare, the rest quoted.
std::string toml_value(const TuneParam& p, const std::string& text) {
  if (p.kind == params::Kind::integer || p.kind == params::Kind::real || p.kind == params::Kind::boolean) return text;
  return "\"" + text + "\"";
}

std::string best_toml(const Problem& pb, const Trial& t, std::size_t index, const TuneOptions& opt) {
  std::map<std::string, std::vector<std::string>> tables;  // table -> "key = value" lines
  for (std::size_t d = 0; d < pb.space.size(); ++d) {
    const std::string& key = pb.space[d].key;
    const auto dot = key.rfind('.');
    tables[dot == std::string::npos ? "" : key.substr(0, dot)].push_back(fmt::format(
        "{} = {}", key.substr(dot == std::string::npos ? 0 : dot + 1), toml_value(pb.space[d], t.values[d])));
  }
  std::string out = fmt::format("# fabriclab tune {}: trial t{:04}, objective {} (mean of {} seed{})\n", opt.scenario,
                                index, csv_number(t.result.objective), opt.seeds, opt.seeds == 1 ? "" : "s");
  for (const auto& [table, lines] : tables) {
    out += table.empty() ? "\n" : fmt::format("\n[{}]\n", table);
    for (const auto& l : lines) out += l + "\n";
  }
  return out;
}

}  // namespace

TuneOutcome run_tune(const TuneOptions& given) {
  const TuneOptions opt = with_space_file(given);
  if (opt.params.empty()) throw InputError("tune: a dimension is required: --param KEY=... or --space FILE");
  Problem pb;
  for (const auto& t : opt.params) {
    pb.space.push_back(parse_tune_param(t));
    for (std::size_t d = 0; d + 1 < pb.space.size(); ++d)
      if (pb.space[d].key == pb.space.back().key)
        throw InputError(fmt::format("--param {}: given twice", pb.space.back().key));
  }
  for (const auto& t : opt.maximize) pb.terms.push_back(parse_objective_term(t, +1));
  for (const auto& t : opt.minimize) pb.terms.push_back(parse_objective_term(t, -1));
  for (std::size_t i = 0; i < pb.terms.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (pb.terms[k].metric == pb.terms[i].metric)
        throw InputError(fmt::format("tune: the objective names {} twice (--maximize, --minimize{}): give one "
                                     "term per metric, with its weight",
                                     pb.terms[i].metric, opt.space.empty() ? "" : ", or --space " + opt.space));
  if (pb.terms.empty()) throw InputError("tune: an objective is required: --maximize METRIC and/or --minimize METRIC");
  for (const auto& t : opt.constraints) pb.constraints.push_back(parse_tune_constraint(t));
  if (opt.seeds == 0) throw InputError("tune: --seeds must be at least 1");
  // The scenario, and each dimension at both ends of its range, must load before anything runs.
  const FabricSetup base = fabric_parameters().resolve(opt.scenario, opt.sets);
  pb.base_seed = base.config.integer("sim.seed");
  for (const TuneParam& p : pb.space) {
    // Both ends of a range; every choice.
    std::vector<std::string> values = p.choices;
    if (p.scale != TuneParam::Scale::choice) values = {p.value_at(0), p.value_at(1)};
    for (const std::string& v : values) {
      std::vector<std::string> sets = opt.sets;
      sets.push_back(p.key + "=" + v);
      try {
        (void)fabric_parameters().resolve(opt.scenario, sets);
      } catch (const InputError& e) {
        throw InputError(fmt::format("--param {}: at {}: {}", p.key, v, e.what()));
      }
    }
  }
  // Over MPI ranks every rank runs the same search (it is deterministic, and every rank
  // reads the same runs back), calling the runs together; rank 0 alone writes.
  const bool root = mpi_rank() == 0;
  const fs::path dir(opt.out_dir);
  std::error_code ignored;
  std::string refused;
  if (root) try {
      claim_directory(dir, opt);
      fs::remove(dir / "report.md", ignored);  // written last: its absence marks an unfinished tuning
    } catch (const std::exception& e) {        // InputError, or the file system's own error
      refused = e.what();
    }
  if (refused = broadcast_from_root(refused); !refused.empty()) throw InputError(refused);

  TuneOutcome out;
  std::map<std::vector<std::string>, Measured> measured;  // by values (a batch run ahead may hold one never asked)
  double best = -std::numeric_limits<double>::infinity();
  const auto trials = search(
      pb.space, pb.constraints.size(), opt.trials, opt.seed,
      [&](const std::vector<TrialRequest>& batch) {
        std::vector<SettingRuns> settings;
        for (const TrialRequest& r : batch)
          settings.push_back({overrides_of(pb, r.values), dir / "trials" / fmt::format("t{:04}", r.index)});
        const std::string label = batch.size() == 1
                                      ? fmt::format("tune t{:04}", batch[0].index)
                                      : fmt::format("tune t{:04}..t{:04}", batch.front().index, batch.back().index);
        std::vector<Measured> ms = measure(opt, pb, settings, pb.base_seed, label, &out.ran);
        std::vector<TrialResult> results;
        for (std::size_t b = 0; b < batch.size(); ++b) {
          const Measured& m = ms[b];
          const bool feasible = Trial{batch[b].values, m.result}.feasible();
          if (feasible) best = std::max(best, m.result.objective);
          if (opt.progress && root)
            fmt::print(stderr, "tune: t{:04} {}: {}{}\n", batch[b].index, fmt::join(batch[b].values, " "),
                       !m.invalid.empty() ? "invalid (" + m.invalid + ")"
                       : !m.note.empty()  ? "not scored (" + m.note + ")"
                                          : fmt::format("objective {}, {}", csv_number(m.result.objective),
                                                       feasible ? "feasible" : "infeasible"),
                       std::isfinite(best) ? fmt::format(" (best {})", csv_number(best)) : "");
          results.push_back(m.result);
          measured.emplace(batch[b].values, m);
        }
        return results;
      },
      opt.jobs * static_cast<unsigned>(mpi_size()) > 1);
  out.trials = trials.size();
  out.best = best_trial(trials);

  // The best point and the references, rerun on fresh seeds (not the search's own).
  const std::int64_t fresh = pb.base_seed + static_cast<std::int64_t>(opt.seeds);
  struct Row {
    std::string name, dir;  // the rerun's directory is named by what it runs
    std::vector<std::string> overrides;
  };
  std::vector<Row> rows{{"as given", "given", {}}};
  // The references: the run's policy at each of its presets (DCQCN's under none too: its
  // receivers' CNP side is set by them).
  const std::string policy = base.config.text("nic.congestion_control");
  const std::string preset_key = policy == "none" || policy == "dcqcn" ? "nic.roce_rp.preset"
                                                                       : "nic." + policy + ".preset";
  if (const ParamSpec* preset = fabric_parameters().registry().find(preset_key))
    for (const auto& c : preset->choices) rows.push_back({"preset " + c, "preset-" + c, {preset_key + "=" + c}});
  if (out.best >= 0)
    rows.push_back({fmt::format("tuned (t{:04})", out.best), fmt::format("tuned-t{:04}", out.best),
                    overrides_of(pb, trials[static_cast<std::size_t>(out.best)].values)});
  std::vector<SettingRuns> rerun;
  for (const Row& r : rows) rerun.push_back({r.overrides, dir / "rerun" / r.dir});
  const std::vector<Measured> reruns = measure(opt, pb, rerun, fresh, "tune rerun", nullptr);
  if (!root) {
    out.root = false;
    return out;
  }

  // trials.csv
  std::string csv = "trial";
  for (const auto& p : pb.space) csv += "," + p.key;
  csv += ",status,feasible,objective";
  for (const auto& t : pb.terms) csv += "," + t.metric;
  for (const auto& c : pb.constraints) csv += "," + c.metric + " (worst)";
  csv += ",note\n";
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const Measured& m = measured.at(trials[i].values);
    csv += fmt::format("t{:04}", i);
    for (const auto& v : trials[i].values) csv += "," + csv_cell(v);
    csv += fmt::format(",{},{},{}", status_text(m), trials[i].feasible() ? 1 : 0,
                       m.invalid.empty() ? csv_number(trials[i].result.objective) : "");
    for (double v : m.metrics) csv += fmt::format(",{}", csv_number(v));
    csv += fmt::format(",{}\n", csv_cell(m.invalid.empty() ? m.note : m.invalid));
  }
  write_file(dir / "trials.csv", csv);

  if (out.best >= 0) {
    write_file(dir / "best.toml",
               best_toml(pb, trials[static_cast<std::size_t>(out.best)], static_cast<std::size_t>(out.best), opt));
  } else {
    fs::remove(dir / "best.toml", ignored);
  }
  std::string md = fmt::format("# fabriclab tune {}\n\n", opt.scenario);
  md += fmt::format("{} trials (NLopt ISRES, seed {}), each the mean of {} run{} (sim.seed {}..{}).\n\n", trials.size(),
                    opt.seed, opt.seeds, opt.seeds == 1 ? "" : "s", pb.base_seed,
                    pb.base_seed + static_cast<std::int64_t>(opt.seeds) - 1);
  md += "Objective: maximise";
  for (const auto& t : pb.terms) md += fmt::format(" {:+g} x {}", t.weight, t.metric);
  md += ".\n";
  for (const auto& c : pb.constraints) md += fmt::format("Constraint: {}.\n", c.text);
  if (out.best < 0) md += "\n**No trial met every constraint**: no best settings.\n";
  md += fmt::format("\n## Rerun on fresh seeds (sim.seed {}..{})\n\n", fresh,
                    fresh + static_cast<std::int64_t>(opt.seeds) - 1);
  md += "| settings | status | objective |";
  for (const auto& t : pb.terms) md += " " + t.metric + " |";
  for (const auto& c : pb.constraints) md += " " + c.metric + " (worst) |";
  md += "\n|---|---|---|";
  for (std::size_t k = 0; k < pb.terms.size() + pb.constraints.size(); ++k) md += "---|";
  md += "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Measured& m = reruns[r];
    md += fmt::format("| {} | {} | {} |", rows[r].name, status_text(m), csv_number(m.result.objective));
    for (double v : m.metrics) md += fmt::format(" {} |", csv_number(v));
    md += "\n";
  }
  for (const char* stale : {"best-nic.sh", "best-sonic.json"}) fs::remove(dir / stale, ignored);  // an earlier best's
  if (out.best >= 0) {
    const Trial& b = trials[static_cast<std::size_t>(out.best)];
    md += "\n## Tuned settings\n\nAs scenario keys (`best.toml`):\n\n```toml\n" +
          best_toml(pb, b, static_cast<std::size_t>(out.best), opt) + "```\n";
    if (const std::string nic = nic_sysfs_script(pb.space, b.values); !nic.empty()) {
      write_file(dir / "best-nic.sh", nic);
      md += "\nOn a ConnectX NIC (`best-nic.sh IF`):\n\n```sh\n" + nic + "```\n";
    }
    std::vector<std::string> tuned = opt.sets;
    for (const auto& o : overrides_of(pb, b.values)) tuned.push_back(o);
    const FabricSetup best_setup = fabric_parameters().resolve(opt.scenario, tuned);
    const auto shown = [&](const std::string& key) { return best_setup.config.shown(key); };
    std::string left_out;
    if (const std::string sonic = sonic_config_json(pb.space, b.values, shown, &left_out); !sonic.empty()) {
      write_file(dir / "best-sonic.json", sonic);
      md += "\nOn a SONiC switch (`best-sonic.json`, for `sudo config load`";
      if (sonic.find("\"SCHEDULER\"") != std::string::npos)
        md += "; bind each fabriclab.qN scheduler to queue N of the ports, `QUEUE|PORT|N`";
      md += "):\n\n```json\n" + sonic + "```\n";
    }
    if (!left_out.empty()) md += "\nOn a SONiC switch: " + left_out + ".\n";
  }
  // The search, drawn.
  std::vector<TrialPoint> points;
  for (const Trial& t : trials) {
    const Measured& m = measured.at(t.values);
    points.push_back({t.values, t.result.objective, t.feasible(), m.invalid.empty(), m.goodput_gbps, m.pause_frames});
  }
  draw_tune_plots(dir, pb.space, points);
  md += "\n## The search\n\n"
        "- `objective.png`: the objective of every trial and the best feasible so far.\n"
        "- `tradeoff.png`: aggregate goodput (every byte delivered over the run) against PFC pause frames, with the "
        "Pareto front (no other trial has more goodput "
        "and fewer pauses):\n\n";
  md += "| trial | aggregate goodput (Gb/s) | PFC pause frames | feasible |\n|---|---|---|---|\n";
  for (std::size_t i : pareto_front(points))
    md += fmt::format("| t{:04} | {} | {} | {} |\n", i, csv_number(points[i].goodput_gbps),
                      csv_number(points[i].pause_frames), points[i].feasible ? "yes" : "no");
  md += "\n- `sensitivity.png`: the objective against each dimension.\n";
  write_file(dir / "report.md", md);
  out.report = (dir / "report.md").string();
  return out;
}

}  // namespace fabriclab::scenario
