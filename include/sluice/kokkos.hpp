// sluice/kokkos.hpp: Kokkos kernels in sluice stream order (docs/kokkos.md).
//
// Synopsis
//   namespace sluice::kokkos {
//   using execution_space = Kokkos::Cuda | Kokkos::HIP | Kokkos::DefaultHostExecutionSpace;
//   using memory_space = execution_space::memory_space;
//   template <class F> void submit(stream_ref s, F&& f);  // f(execution_space) in s's order
//   execution_space instance(stream_ref s);               // GPU backends: on s's native stream
//   stream borrow(const execution_space& exec);           // GPU backends: a borrowed sluice stream
//   template <class T> Kokkos::View<T*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
//   view(device_buffer<T>& b);                            // no copy, no ownership
//   }
//
// Target sluice::kokkos (find_package(sluice COMPONENTS <backend> kokkos)),
// built when find_package(Kokkos) finds Kokkos. Kokkos work submitted on a
// stream is ordered like any of its operations (KOK-1..5) and appears on its
// track in SLUICE_TRACE traces, by the kernel's name. Nothing here fences
// globally.
#pragma once

#include <sluice/error.hpp>
#include <sluice/graph.hpp>
#include <sluice/memory.hpp>
#include <sluice/native.hpp>
#include <sluice/stream.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

namespace sluice::kokkos {

#if defined(SLUICE_BACKEND_CUDA)
using execution_space = Kokkos::Cuda;
#elif defined(SLUICE_BACKEND_HIP)
using execution_space = Kokkos::HIP;
#else
using execution_space = Kokkos::DefaultHostExecutionSpace;
#endif
using memory_space = execution_space::memory_space;

namespace detail {

//! While it lives, the Kokkos kernels this thread launches are shown on s's
//! track in traces (through the Kokkos Tools callbacks sluice registers).
class submit_scope {
 public:
  explicit submit_scope(stream_ref s) noexcept;
  ~submit_scope();
  submit_scope(const submit_scope&) = delete;
  submit_scope& operator=(const submit_scope&) = delete;
  stream_ref stream() const noexcept { return stream_; }

 private:
  stream_ref stream_;
  const submit_scope* outer_;
};

#if defined(SLUICE_TEST_MUTATIONS)
//! Test-only, in sluice's own builds with -DSLUICE_TEST_MUTATIONS=ON
//! (docs/conformance/mutations.md): whether SLUICE_TEST_MUTATION breaks a KOK
//! rule, so that the suite is seen to fail, and what submit does instead then.
bool submit_is_mutated() noexcept;
void mutated_submit(stream_ref s, void (*call)(void*, void*), void* f);
#endif

#if defined(SLUICE_BACKEND_HOST)
//! Runs a submitted function on the host: one at a time per process, since
//! one host execution space instance is not safe to use from several threads
//! at once (docs/kokkos.md).
void run_on_host(stream_ref s, void (*call)(void*), void* f);
#else
//! The Kokkos instance on s's native stream, made once per native stream.
execution_space instance_of(stream_ref s);
#endif

}  // namespace detail

#if !defined(SLUICE_BACKEND_HOST)
//! A Kokkos instance whose work runs on s's native stream, in s's order.
//! errc::invalid_argument when s's device is not Kokkos's device. Made once
//! per native stream and kept until Kokkos::finalize (making one allocates).
inline execution_space instance(stream_ref s) { return detail::instance_of(s); }

//! A sluice stream on exec's native stream (sluice::borrow): the Kokkos work
//! enqueued on exec and sluice's work on the stream run in one order.
inline stream borrow(const execution_space& exec) {
#if defined(SLUICE_BACKEND_CUDA)
  return sluice::borrow(sluice::device(exec.cuda_device()), exec.cuda_stream());
#else
  return sluice::borrow(sluice::device(exec.hip_device()), exec.hip_stream());
#endif
}
#endif

//! Runs f(execution_space) in s's order: the Kokkos work f enqueues on the
//! instance it is given runs after the work enqueued on s before submit and
//! before the work enqueued on s after it (KOK-1). Returns without waiting for
//! that work (KOK-2). GPU backends: f runs now, on the calling thread, with
//! instance(s). Host backend: f runs on a sluice host thread once s's earlier
//! work is done, like a host function: an exception from f is reported by s's
//! next ready() or synchronize() (KOK-5, HOST-4).
template <class F>
void submit(stream_ref s, F&& f) {
  using fn_t = std::decay_t<F>;
  static_assert(std::is_invocable_v<fn_t&, execution_space>,
                "sluice::kokkos::submit: f must be callable with the execution space");
#if defined(SLUICE_TEST_MUTATIONS)
  if (detail::submit_is_mutated()) [[unlikely]] {
    fn_t fn(std::forward<F>(f));
    detail::mutated_submit(
        s,
        [](void* p, void* exec) { (*static_cast<fn_t*>(p))(*static_cast<execution_space*>(exec)); },
        &fn);
    return;
  }
#endif
  // Not in a graph's capture in this version (docs/graphs.md).
  if (sluice::is_capturing(s))
    throw error(errc::capture_violation,
                "sluice::kokkos::submit: the stream captures a graph (not in this version); "
                "nothing was recorded and the capture stays valid",
                0, "sluice::kokkos::submit");
#if defined(SLUICE_BACKEND_HOST)
  s.host_func([s, fn = fn_t(std::forward<F>(f))]() mutable {
    detail::run_on_host(
        s, [](void* p) { (*static_cast<fn_t*>(p))(execution_space{}); }, &fn);
  });
#else
  execution_space exec = detail::instance_of(s);
  const detail::submit_scope scope(s);
  std::forward<F>(f)(exec);
#endif
}

//! The buffer's memory as an unmanaged Kokkos view: no copy, no ownership; b
//! must outlive the view.
template <class T>
Kokkos::View<T*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> view(device_buffer<T>& b) {
  return Kokkos::View<T*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(b.data(),
                                                                                 b.size());
}

}  // namespace sluice::kokkos
