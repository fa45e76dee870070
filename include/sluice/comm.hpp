// sluice/comm.hpp: stream-ordered messages and collectives between processes
// (target sluice::comm; docs/comm.md).
//
// Synopsis
//   namespace sluice::comm {
//   enum class engine { automatic, mpi, nccl };
//   enum class reduce_op { sum, prod, min, max };
//   class communicator {                     // move-only; collective to build
//     communicator(MPI_Comm c, device d, engine e = engine::automatic);
//     int rank(); int size(); device device(); engine kind();
//   };
//   void send(stream_ref, const void* buf, size_t bytes, int to, const communicator&);
//   void recv(stream_ref, void* buf, size_t bytes, int from, const communicator&);
//   template <class T> void all_reduce(stream_ref, const T* in, T* out, size_t count,
//                                      reduce_op, const communicator&);
//   template <class T> void broadcast(stream_ref, T* buf, size_t count, int root,
//                                     const communicator&);
//   template <class T> void all_gather(stream_ref, const T* in, T* out,
//                                      size_t count_per_rank, const communicator&);
//   class group { explicit group(const communicator&); };  // sends/receives start together
//   }
//
// Every call returns at once (COMM-2): the operation waits, on its stream only
// (COMM-3), for the work before it and for its peers. Failures of peers
// surface as errc::comm_failure on the waiting stream (COMM-7).
#pragma once

#include <sluice/device.hpp>
#include <sluice/stream.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace sluice::comm {

//! What carries the messages. automatic: nccl on the CUDA backend where NCCL
//! is present, else mpi.
enum class engine { automatic, mpi, nccl };
enum class reduce_op { sum, prod, min, max };

//! "automatic", "mpi", "nccl".
const char* to_string(engine e) noexcept;
//! "sum", "prod", "min", "max".
const char* to_string(reduce_op op) noexcept;

namespace detail {
struct communicator_state;  // src/comm
}

//! The ranks of an MPI communicator, each on one sluice device. Building one is
//! collective over every rank of `c` (it duplicates `c`: sluice's messages
//! never match the program's own). MPI must be initialized (any thread level:
//! docs/comm.md says what a level below MPI_THREAD_MULTIPLE asks of the
//! program) and not finalized. Move-only; a moved-from communicator throws
//! errc::invalid_handle when used. Destroying one does not wait: operations
//! already enqueued still complete.
class communicator {
 public:
  //! Throws errc::invalid_argument (MPI not initialized or finalized,
  //! MPI_COMM_NULL, an inter-communicator, an unknown engine),
  //! errc::not_supported (nccl where this build has no
  //! NCCL), errc::comm_failure (the engine could not start).
  communicator(MPI_Comm c, sluice::device d, engine e = engine::automatic);
  communicator(communicator&&) noexcept;
  communicator& operator=(communicator&&) noexcept;
  ~communicator();
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  int rank() const;
  int size() const;
  sluice::device device() const;
  //! The engine chosen: mpi or nccl.
  engine kind() const;

 private:
  friend struct detail::communicator_state;
  std::shared_ptr<detail::communicator_state> state_;
};

//! Enqueued on s, a stream of c.device(); each returns at once. Buffers: memory
//! of c.device() or pinned host memory, left alone until the operation is
//! done on the stream. Sends and receives between two ranks match in the
//! order they were enqueued (COMM-4). A receive must be exactly as large as
//! the matching send: otherwise errc::comm_failure on the receiving stream.
void send(stream_ref s, const void* buf, std::size_t bytes, int to, const communicator& c);
void recv(stream_ref s, void* buf, std::size_t bytes, int from, const communicator& c);

namespace detail {
enum class datatype { int32, int64, float32, float64 };
template <class T>
constexpr datatype datatype_of() {
  static_assert(std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
                    std::is_same_v<T, float> || std::is_same_v<T, double>,
                "sluice::comm collectives take std::int32_t, std::int64_t, float or double");
  if constexpr (std::is_same_v<T, std::int32_t>) return datatype::int32;
  if constexpr (std::is_same_v<T, std::int64_t>) return datatype::int64;
  if constexpr (std::is_same_v<T, float>) return datatype::float32;
  return datatype::float64;
}
void all_reduce(stream_ref s, const void* in, void* out, std::size_t count, datatype t,
                reduce_op op, const communicator& c);
void broadcast(stream_ref s, void* buf, std::size_t count, datatype t, int root,
               const communicator& c);
void all_gather(stream_ref s, const void* in, void* out, std::size_t count_per_rank, datatype t,
                const communicator& c);
}  // namespace detail

//! Every rank enqueues the collectives of one communicator in the same order
//! (as in MPI and NCCL); the results are the same on every rank (COMM-5).
//! in == out is allowed (in place); any other overlap is errc::invalid_argument.
template <class T>
void all_reduce(stream_ref s, const T* in, T* out, std::size_t count, reduce_op op,
                const communicator& c) {
  detail::all_reduce(s, in, out, count, detail::datatype_of<T>(), op, c);
}
template <class T>
void broadcast(stream_ref s, T* buf, std::size_t count, int root, const communicator& c) {
  detail::broadcast(s, buf, count, detail::datatype_of<T>(), root, c);
}
//! out holds size() * count_per_rank elements, rank r's at r * count_per_rank;
//! in == out + rank() * count_per_rank is allowed (in place).
template <class T>
void all_gather(stream_ref s, const T* in, T* out, std::size_t count_per_rank,
                const communicator& c) {
  detail::all_gather(s, in, out, count_per_rank, detail::datatype_of<T>(), c);
}

namespace detail {
struct group_state;
//! How many operations of this process started before their stream got
//! there (back-to-back small collectives, docs/comm.md). For benches and tests.
unsigned long long operations_started_early() noexcept;
}  // namespace detail

//! Sends and receives of `c` enqueued on this thread while the group lives
//! start together when it ends, so an exchange cannot deadlock whatever the
//! order inside it (COMM-4). The group is one operation of each stream it used,
//! enqueued on those streams when the group ends: work enqueued on them
//! before then comes first. Groups of one communicator do not nest.
class group {
 public:
  //! Throws errc::invalid_handle (moved-from communicator),
  //! errc::invalid_argument (a group of `c` already lives on this thread).
  explicit group(const communicator& c);
  //! Enqueues the group. What cannot be enqueued (no memory) is reported as
  //! errc::comm_failure on the group's streams and on stderr, never lost.
  ~group();
  group(const group&) = delete;
  group& operator=(const group&) = delete;

 private:
  std::unique_ptr<detail::group_state> state_;
};

}  // namespace sluice::comm
