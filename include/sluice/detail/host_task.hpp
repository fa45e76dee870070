// sluice/detail/host_task.hpp: a move-only type-erased callable for host_func.
// Not part of the public API.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace sluice::detail {

struct host_task {
  virtual ~host_task() = default;
  virtual void run() = 0;
  // The GPU backends' batches link the functions that join them through this
  // (backends/cuda_hip/host_func/joins.cpp): a join allocates nothing and takes
  // no lock.
  host_task* next = nullptr;
};

template <class F>
struct host_task_impl final : host_task {
  explicit host_task_impl(F f) : fn(std::move(f)) {}
  void run() override { fn(); }
  F fn;
};

template <class F>
std::unique_ptr<host_task> make_host_task(F&& f) {
  using fn_t = std::decay_t<F>;
  static_assert(std::is_invocable_v<fn_t&>, "host_func needs a callable taking no arguments");
  return std::make_unique<host_task_impl<fn_t>>(std::forward<F>(f));
}

}  // namespace sluice::detail
