// What every fuzz target shares: the one expected failure is fabriclab's InputError (bad
// input, exit 2 on the command line); anything else that escapes -- std::logic_error (a
// bug), std::bad_alloc, a library's own exception (nlohmann, toml++), or any other type --
// is a finding, reported with its type and message and turned into an abort() that
// libFuzzer records as a crash. Sanitizer reports, timeouts (-timeout) and runaway memory
// (-rss_limit_mb) are findings by libFuzzer itself.
//
//   extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
//     fabriclab::fuzz::expect_input_errors([&] { parse(fabriclab::fuzz::text(data, size)); });
//     return 0;
//   }
#pragma once

#include <cxxabi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <typeinfo>

#include "core/error.h"

namespace fabriclab::fuzz {

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline std::string demangled(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : t.name();
}

// A finding the target itself detects: says what, then aborts (libFuzzer saves the input).
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==fabriclab fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `f`; an InputError is an expected outcome, any other exception a finding.
template <class F>
void expect_input_errors(F&& f) {
  try {
    f();
  } catch (const InputError&) {
    // Bad input, reported as such: what the parser is for.
  } catch (const std::exception& e) {
    finding("unexpected exception " + demangled(typeid(e)) + ": " + e.what());
  } catch (...) {
    const std::type_info* t = abi::__cxa_current_exception_type();
    finding("unexpected exception of type " + (t ? demangled(*t) : std::string("(unknown)")));
  }
}

// The value of environment variable `name`, or "" when it is not set.
inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A target's side job (writing seeds, a dictionary), from LLVMFuzzerInitialize: when
// environment variable `name` names a place, job(place) runs and the process exits.
template <class F>
void side_job(const char* name, F&& job) {
  if (const std::string place = env(name); !place.empty()) {
    job(place);
    std::exit(0);
  }
}

// A libFuzzer dictionary at `path`: each word quoted, with its quotes and backslashes escaped.
inline void write_dictionary(const std::string& path, const std::set<std::string>& words) {
  std::ofstream out(path);
  for (const auto& w : words) {
    out << '"';
    for (char c : w) {
      if (c == '"' || c == '\\') out << '\\';
      out << c;
    }
    out << "\"\n";
  }
}

// An in-memory file (memfd) for readers that take a path: each input is written to it and
// read back through /proc/self/fd/N.
//
//   static const MemFile file("flows.csv");
//   file.write(data, size);
//   read_flows_csv(file.path, 64);
struct MemFile {
  int fd = -1;
  std::string path;
  explicit MemFile(const char* name) {
    fd = ::memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) finding("memfd_create failed");
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  void write(const std::uint8_t* data, std::size_t size) const {
    if (::ftruncate(fd, 0) != 0) finding("ftruncate failed");
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) finding("pwrite failed");
      done += static_cast<std::size_t>(n);
    }
  }
};

}  // namespace fabriclab::fuzz
