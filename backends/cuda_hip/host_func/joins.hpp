// Joining a host-function batch on the GPU backend: a host function enqueued
// while its stream's previous batch is open (nothing else enqueued since)
// joins that batch with no device work of its own: one compare-exchange
// pushes it on the batch's lock-free list (host_batch::joins), and the
// batch's runner takes the list whole and closes the batch when no more come.
// Defined in joins.cpp.
#pragma once

#include <sluice/detail/host_task.hpp>

#include <memory>

namespace sluice::detail {

struct stream_state;
struct host_batch;

//! Under s.enqueue_m: `task` joins s's open batch, if there is one it may
//! join (never after native_handle()); true when it did (the runner owns it
//! then), false when it must start a batch of its own (`task` untouched).
bool join_open_batch(stream_state& s, std::unique_ptr<host_task>& task) noexcept;

//! On the batch's runner, after its first function: runs the functions that
//! joined, in the order they were enqueued, until it closes the batch (later
//! host functions then start a batch of their own).
void run_joined_functions(host_batch* batch) noexcept;

}  // namespace sluice::detail
