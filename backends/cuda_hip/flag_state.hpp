// A flag on the GPU backend (MEM-5): a host-mapped word that the host reads
// and writes directly and streams reach through stream memory operations
// (wait_value / write_value). Defined in flag.cpp.
#pragma once

#include "mapped_word.hpp"

#include <mutex>
#include <vector>

namespace sluice::detail {

struct stream_state;

struct flag_state {
  word w;
  // Streams that wait on or write this flag (each holds a reference): the word
  // is reused only after they passed the moment the flag was destroyed, so a
  // stream still waiting never sees a later flag's value.
  std::mutex m;
  std::vector<stream_state*> users;
};

//! Notes that s waits on or writes f.
void add_flag_user(flag_state& f, stream_state& s);

}  // namespace sluice::detail
