// What every part of sluice::comm reads of a message: its bytes, its pieces,
// its description (and a batch's, in failures and traces).
#include "comm/impl/message.hpp"

#include "comm/impl/batch.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace sluice::comm::detail {

const char* to_string(op_kind k) noexcept {
  switch (k) {
    case op_kind::send: return "send";
    case op_kind::recv: return "recv";
    case op_kind::all_reduce: return "all_reduce";
    case op_kind::broadcast: return "broadcast";
    case op_kind::all_gather: return "all_gather";
  }
  return "unknown";
}

std::size_t element_size(datatype t) noexcept {
  switch (t) {
    case datatype::int32:
    case datatype::float32: return 4;
    case datatype::int64:
    case datatype::float64: return 8;
  }
  return 1;
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) noexcept {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes != 0 && b_bytes != 0 && x < y + b_bytes && y < x + a_bytes;
}

std::size_t bytes_of(const message& m) noexcept {
  return m.kind == op_kind::send || m.kind == op_kind::recv ? m.count
                                                            : m.count * element_size(m.type);
}

std::size_t pieces_of(const message& m, std::size_t bytes) noexcept {
  return m.piece == 0 || bytes == 0 ? 1 : (bytes + m.piece - 1) / m.piece;
}

byte_range piece_range(const message& m, std::size_t bytes, std::size_t j) noexcept {
  if (m.piece == 0) return j == 0 ? byte_range{0, bytes} : byte_range{bytes, 0};
  const std::size_t offset = std::min(bytes, j * m.piece);
  return byte_range{offset, std::min(m.piece, bytes - offset)};
}

std::string message::describe() const {
  switch (kind) {
    case op_kind::send:
      return "send of " + std::to_string(count) + " bytes to rank " + std::to_string(peer);
    case op_kind::recv:
      return "recv of " + std::to_string(count) + " bytes from rank " + std::to_string(peer);
    case op_kind::broadcast:
      return "broadcast of " + std::to_string(count) + " elements from rank " +
             std::to_string(peer);
    default: return std::string(to_string(kind)) + " of " + std::to_string(count) + " elements";
  }
}

std::string batch::describe() const {
  if (messages.size() == 1) return messages.front().describe();
  std::string text = "group of " + std::to_string(messages.size()) + " (";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) text += ", ";
    text += messages[i].describe();
  }
  return text + ")";
}

}  // namespace sluice::comm::detail
