#include "scenario/toml_input.h"

#include <array>

#include <fmt/format.h>

#include "core/error.h"

namespace fabriclab::scenario {

namespace {

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// One pass over the text that knows only what the bounds need: where strings and
// comments are (so that nothing inside them counts), where a line starts with a table
// header, and the chains of dotted parts outside strings. A chain is a key when an `=` or
// a header's `]` ends it; a value's chain (a float's `1.5`) has two parts at most, so the
// depth bound holds for every chain.
class BoundsScan {
 public:
  BoundsScan(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  void run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        end_chain(false);
        header_ = false;
        line_blank_ = true;
        ++line_;
        line_start_ = ++i_;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        in_bare_ = false;
        ++i_;
        continue;
      }
      const bool was_blank = line_blank_;
      line_blank_ = false;
      if (bare_key_char(c)) {
        if (!in_bare_) part();
        in_bare_ = true;
        chain_end_ = ++i_;
        continue;
      }
      in_bare_ = false;
      if (c == '"' || c == '\'') {
        if (s_.substr(i_, 3) == std::string_view(c == '"' ? "\"\"\"" : "'''")) {
          end_chain(false);  // a multi-line string is a value, never a key
          skip_multiline(c);
        } else {
          part();
          skip_string(c);
          chain_end_ = i_;
        }
        continue;
      }
      if (c == '.' && in_chain_ && !expect_part_) {
        expect_part_ = true;
        ++i_;
        continue;
      }
      if (c == '#') {
        end_chain(false);
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '[' && was_blank && nest_ == 0) {  // (a value's array may start a line too)
        end_chain(false);
        header_ = true;
        if (++tables_ > kTomlMaxTables)
          fail(i_, fmt::format("more than {} tables ([name] or [[name]]) in one file", kTomlMaxTables));
        i_ += s_.substr(i_, 2) == "[[" ? 2 : 1;
        continue;
      }
      if (c == ']' && header_) {
        end_chain(true);
        header_ = false;
        i_ += s_.substr(i_, 2) == "]]" ? 2 : 1;
        continue;
      }
      end_chain(c == '=');
      if (c == '[' || c == '{') {
        if (++nest_ < commas_.size()) commas_[nest_] = 0;
      } else if ((c == ']' || c == '}') && nest_ > 0) {
        --nest_;
      } else if (c == ',' && nest_ > 0 && nest_ < commas_.size() && ++commas_[nest_] >= kTomlMaxElements) {
        fail(i_, fmt::format("an array or inline table of more than {} elements", kTomlMaxElements));
      }
      ++i_;
    }
    end_chain(false);
  }

 private:
  // At byte `at` of the current line (a chain never spans lines: a line's end ends it).
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw InputError(fmt::format("{}:{}:{}: {}", origin_, line_, at - line_start_ + 1, what));
  }

  // A part of a chain starts at i_: a new chain, the next part after a dot, or (after a
  // part and a space, with no dot) a new chain.
  void part() {
    if (in_chain_ && expect_part_) {
      expect_part_ = false;
      if (++depth_ > kTomlMaxKeyDepth)
        fail(chain_begin_, fmt::format("a key or table header of more than {} dotted parts (the deepest key "
                                       "fabriclab reads has 3)",
                                       kTomlMaxKeyDepth));
      return;
    }
    end_chain(false);
    in_chain_ = true;
    expect_part_ = false;
    depth_ = 1;
    chain_begin_ = i_;
  }

  void end_chain(bool key) {
    if (in_chain_ && key && chain_end_ - chain_begin_ > kTomlMaxKeyBytes)
      fail(chain_begin_,
           fmt::format("a key or table header of {} bytes; at most {}", chain_end_ - chain_begin_, kTomlMaxKeyBytes));
    in_chain_ = false;
    expect_part_ = false;
  }

  // From the opening quote to past the closing one (a basic string's escapes skipped);
  // a line's end closes it too (toml++ then says what is wrong).
  void skip_string(char quote) {
    for (++i_; i_ < s_.size() && s_[i_] != '\n'; ++i_) {
      if (quote == '"' && s_[i_] == '\\') {
        ++i_;
        if (i_ < s_.size() && s_[i_] == '\n') break;
        continue;
      }
      if (s_[i_] == quote) {
        ++i_;
        return;
      }
    }
  }

  void skip_multiline(char quote) {
    const std::string_view close = quote == '"' ? "\"\"\"" : "'''";
    for (i_ += 3; i_ < s_.size();) {
      if (s_[i_] == '\n') {
        ++line_;
        line_start_ = ++i_;
        continue;
      }
      if (quote == '"' && s_[i_] == '\\') {
        i_ += 2;
        if (i_ - 1 < s_.size() && s_[i_ - 1] == '\n') {
          ++line_;
          line_start_ = i_;
        }
        continue;
      }
      if (s_.substr(i_, 3) == close) {
        i_ += 3;
        while (i_ < s_.size() && s_[i_] == quote) ++i_;  // up to two quotes of the content
        return;
      }
      ++i_;
    }
  }

  std::string_view s_;
  const std::string& origin_;
  std::size_t i_ = 0, line_ = 1, line_start_ = 0;
  bool line_blank_ = true, header_ = false, in_bare_ = false;
  std::size_t tables_ = 0;
  std::size_t nest_ = 0;  // a value's open arrays and inline tables
  // The commas of each open one ([1] the outermost), as deep as toml++ reads (past 256
  // levels it refuses the file itself).
  std::array<std::size_t, 258> commas_{};
  bool in_chain_ = false, expect_part_ = false;
  std::size_t depth_ = 0, chain_begin_ = 0, chain_end_ = 0;  // chain_end_: past its last part
};

}  // namespace

void check_toml_bounds(std::string_view text, const std::string& origin) { BoundsScan(text, origin).run(); }

toml::table parse_toml(std::string_view text, const std::string& origin) {
  check_toml_bounds(text, origin);
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: malformed TOML: {}", origin, b.line, b.column, e.description()));
  }
}

}  // namespace fabriclab::scenario
