// Stream names (stream_options::name, stream_ref::name / set_name): one table
// for every backend, from a stream's trace id (new per stream, never reused)
// to its name. The backends' stream states hold nothing for it, so naming a
// stream costs its enqueues nothing; the tracer and the diagnostics look names
// up here when they write. Internal.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::detail::stream_names {

//! Names the stream `id` (stream_ref::set_name); "" makes it unnamed.
void set(std::uint64_t id, std::string name);

//! A new stream's stream_options::name (nothing for ""). Never throws: a name
//! that cannot be kept for lack of memory is left out, with a message on stderr.
void adopt(std::uint64_t id, std::string&& name) noexcept;

//! The stream's name ("" when unnamed).
std::string of(std::uint64_t id);

//! ~stream(): drops the stream's name and returns it. While a trace is
//! collected (until it is written) the name stays for that trace. Costs one
//! relaxed load while no stream has a name.
std::string forget(std::uint64_t id) noexcept;

//! The tracer: a stream's name in the trace being written (its name now, or
//! the one it had when it was destroyed during the trace).
std::string traced(std::uint64_t id);
//! trace_begin: from now on names of destroyed streams are kept for the trace.
void trace_begun() noexcept;
//! trace_end, once the trace was written (or failed): they are dropped.
void trace_written() noexcept;

//! Diagnostics: "stream 'upload' of <owner>", or "a stream of <owner>" when
//! `name` is empty (owner: "device 0", "the destination device").
std::string phrase(const std::string& name, const std::string& owner);
//! The same for the stream `id` (looked up only here: callers build it only
//! when they warn), and for the stream `id` of device `device`.
std::string phrase(std::uint64_t id, const std::string& owner);
std::string phrase(std::uint64_t id, int device);

}  // namespace sluice::detail::stream_names
