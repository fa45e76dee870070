// A group of sluice::comm (include/sluice/comm.hpp): the sends and receives
// of one communicator enqueued on this thread while it lives, carried as one
// batch. Internal.
#pragma once

#include "comm/impl/batch.hpp"
#include "comm/impl/communicator_state.hpp"

#include <memory>

namespace sluice::comm::detail {

struct group_state {
  std::shared_ptr<communicator_state> comm;
  batch_ptr b;  // its sends and receives; streams in first-use order
};

//! The group of c that lives on this thread, if any (one per communicator:
//! they do not nest, and a thread has few).
group_state* live_group(const communicator_state& c);

}  // namespace sluice::comm::detail
