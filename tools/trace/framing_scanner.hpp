// The reader's framing scanner around simdjson.
//
// simdjson parses each event (and every other value of the document) on its
// own, so the memory is one event's, not the file's. What stays hand-written
// is the scanner that finds where a value ends: it follows strings (and their
// escapes) and brackets, nothing else (docs/design.md, "Libraries"). Each
// event of the traceEvents array goes, parsed, to a handler (reader.cpp).
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::tool {

//! Throws std::runtime_error "byte <byte>: <what>": where the document is
//! malformed and how.
[[noreturn]] void fail_at(std::uint64_t byte, const std::string& what);

class framing_scanner {
 public:
  static constexpr std::size_t max_depth = 64;         // inside one event
  static constexpr std::size_t max_value = 64u << 20;  // one event's bytes

  //! What the scanner hands on: each event, in the document's order.
  class handler {
   public:
    virtual ~handler() = default;
    //! Event `index` (from 1), whose first byte is `byte` of the document.
    virtual void event(simdjson::dom::element e, std::uint64_t index, std::uint64_t byte) = 0;
  };

  explicit framing_scanner(handler& events) : handler_(events) {}

  //! `p` has simdjson::SIMDJSON_PADDING readable bytes after its `n`.
  void feed(const char* p, std::size_t n);

  //! After the last block: the document must be complete.
  void end();

 private:
  enum class at {
    document,
    key_first,
    key,
    colon,
    value,
    after_value,
    event_first,
    event,
    after_event,
    done
  };
  enum kind { nested, string, scalar };
  enum role { a_key, a_value, an_event };

  void step(const char* p, std::size_t i);
  void close_events();
  void start_capture(const char* p, std::size_t i, role r);
  std::size_t capture(const char* p, std::size_t n, std::size_t i);
  std::string in_event() const;
  void append_capture(const char* p, std::size_t n);
  void complete(const char* p, std::size_t e);

  handler& handler_;
  simdjson::dom::parser parser_;
  at state_ = at::document;
  bool in_object_ = false, seen_events_ = false;
  std::string key_;
  std::uint64_t offset_ = 0;  // of the block being fed
  std::uint64_t events_ = 0;
  // The value being captured.
  bool capturing_ = false;
  kind cap_kind_ = scalar;
  role role_ = a_value;
  std::uint64_t cap_byte_ = 0;
  std::size_t cap_from_ = 0;  // in the block being fed
  std::string cap_;           // its bytes from earlier blocks
  bool in_string_ = false, escape_ = false;
  std::size_t depth_ = 0;
  char open_[max_depth] = {};
};

}  // namespace sluice::tool
