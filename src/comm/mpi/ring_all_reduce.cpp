// all_reduce of large buffers as a ring (reduce-scatter, then all-gather) of
// non-blocking sends and receives, driven by the engine thread: MPI's own
// non-blocking all_reduce (Open MPI: libnbc) is 2-2.5x slower than its
// blocking one at 1 MiB and above on our machines
// (docs/results/runs/2026-11-26-comm-host-vm.md). Internal.
#include "comm/mpi/ring_all_reduce.hpp"

#include "comm/impl/communicator_state.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/reduce.hpp"

#include <algorithm>
#include <cstring>

namespace sluice::comm::detail::mpi {

ring_all_reduce::ring_all_reduce(const message& m, const communicator_state& c, int tag_base,
                                 MPI_Datatype type)
    : in_(static_cast<const char*>(m.in)),
      out_(static_cast<char*>(m.out)),
      count_(m.count),
      element_(element_size(m.type)),
      type_(m.type),
      op_(m.op),
      rank_(c.rank),
      size_(c.size),
      comm_(c.ring),
      tag_base_(tag_base),
      mpi_type_(type) {
  // Every chunk of out is written by the ring (reduced here, or received in
  // the all-gather); one rank alone copies.
  if (size_ < 2 && m.in != m.out) std::memcpy(out_, m.in, count_ * element_);
  std::size_t largest = 0;
  for (int i = 0; i < size_; ++i) largest = std::max(largest, chunk_count(i));
  scratch_.resize(largest * element_);
}

std::size_t ring_all_reduce::chunk_begin(int i) const noexcept {
  return count_ * static_cast<std::size_t>(i) / static_cast<std::size_t>(size_);
}

std::size_t ring_all_reduce::chunk_count(int i) const noexcept {
  return chunk_begin(i + 1) - chunk_begin(i);
}

int ring_all_reduce::post_step() {
  const int n = size_;
  const int right = (rank_ + 1) % n;
  const int left = (rank_ + n - 1) % n;
  const int s = step_;
  const bool scatter = s < n - 1;  // reduce-scatter, then all-gather
  const int k = scatter ? s : s - (n - 1);
  const int send_chunk = scatter ? ((rank_ - k) % n + n) % n : ((rank_ + 1 - k) % n + n) % n;
  recv_chunk_ = scatter ? ((rank_ - k - 1) % n + 2 * n) % n : ((rank_ - k) % n + n) % n;
  void* into = scatter ? static_cast<void*>(scratch_.data())
                       : static_cast<void*>(out_ + chunk_begin(recv_chunk_) * element_);
  int code = MPI_Irecv(into, static_cast<int>(chunk_count(recv_chunk_)), mpi_type_, left,
                       tag_base_ + s, comm_, &requests_[0]);
  if (code != MPI_SUCCESS) return code;
  // The first step sends this rank's own input; later ones what it reduced
  // or received.
  const char* from = s == 0 ? in_ : out_;
  code = MPI_Isend(from + chunk_begin(send_chunk) * element_,
                   static_cast<int>(chunk_count(send_chunk)), mpi_type_, right, tag_base_ + s,
                   comm_, &requests_[1]);
  return code;
}

int ring_all_reduce::start() { return size_ < 2 ? MPI_SUCCESS : post_step(); }

int ring_all_reduce::test(bool& done) {
  done = false;
  if (size_ < 2 || step_ >= steps()) {
    done = true;
    return MPI_SUCCESS;
  }
  int completed = 0;
  const int code = MPI_Testall(2, requests_, &completed, MPI_STATUSES_IGNORE);
  if (code != MPI_SUCCESS) return code;
  if (!completed) return MPI_SUCCESS;
  if (step_ < size_ - 1)
    reduce(out_ + chunk_begin(recv_chunk_) * element_, in_ + chunk_begin(recv_chunk_) * element_,
           scratch_.data(), chunk_count(recv_chunk_), type_, op_);
  ++step_;
  if (step_ == steps()) {
    done = true;
    return MPI_SUCCESS;
  }
  return post_step();
}

void ring_all_reduce::cancel(std::vector<MPI_Request>& cancelled) {
  for (MPI_Request& r : requests_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      cancelled.push_back(r);
      r = MPI_REQUEST_NULL;
    }
}

}  // namespace sluice::comm::detail::mpi
