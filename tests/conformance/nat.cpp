// NAT: borrowed native streams (docs/semantics.md, NAT-1 .. NAT-3). The native
// work comes through the vendor's own API (native_ops.hpp): work sluice does
// not see.
#include "native_ops.hpp"
#include "support.hpp"

#include <sluice/native.hpp>

#include <optional>
#include <vector>

namespace sluice::conformance {
namespace {

constexpr std::size_t nat_bytes = 256 * kib;

// The owner's stream is held; work through the borrowed stream, through the
// vendor's API and through the owner interleaves on the one native stream, and
// each copy sees exactly the fills enqueued before it.
TEST(Native, NAT_1__borrowed_and_native_work_run_in_enqueue_order) {
  const sluice::device dev{0};
  sluice::stream owner{dev};
  const native_stream_t native = sluice::native_handle(owner);
  sluice::stream borrowed = sluice::borrow(dev, native);
  EXPECT_EQ(borrowed.device(), dev);
  EXPECT_EQ(borrowed.native_priority(), owner.native_priority());
  sluice::device_buffer<byte> buf{dev, nat_bytes};
  sluice::pinned_buffer<byte> first = filled_pinned_bytes(nat_bytes, 0);
  sluice::pinned_buffer<byte> second = filled_pinned_bytes(nat_bytes, 0);
  sluice::pinned_buffer<byte> third = filled_pinned_bytes(nat_bytes, 0);
  order_log log;
  {
    gate g{owner};
    native_fill(dev, native, buf.data(), 1, nat_bytes);
    sluice::copy(borrowed, first.data(), buf.data(), nat_bytes);  // sees 1
    borrowed.host_func([&log] { log.add(1); });
    sluice::fill(borrowed, buf.data(), 2, nat_bytes);
    native_fill(dev, native, buf.data(), 3, nat_bytes);
    owner.host_func([&log] { log.add(2); });
    sluice::copy(owner, second.data(), buf.data(), nat_bytes);  // sees 3
    sluice::fill(borrowed, buf.data(), 4, nat_bytes);
    borrowed.host_func([&log] { log.add(3); });
    sluice::copy(borrowed, third.data(), buf.data(), nat_bytes);  // sees 4
    // One native stream: the owner's hold holds the borrowed stream's work too.
    EXPECT_TRUE(stays_false([&] { return borrowed.ready(); }))
        << "the borrowed stream ran ahead of the native stream's hold";
    EXPECT_EQ(log.size(), 0U);
  }
  borrowed.synchronize();
  owner.synchronize();
  EXPECT_EQ(first_byte_not(first.data(), nat_bytes, 1), nat_bytes);
  EXPECT_EQ(first_byte_not(second.data(), nat_bytes, 3), nat_bytes);
  EXPECT_EQ(first_byte_not(third.data(), nat_bytes, 4), nat_bytes);
  EXPECT_EQ(log.values(), (std::vector<int>{1, 2, 3}));
}

// An event recorded on the borrowed stream captures the native work before it,
// and a stream waiting on it sees that work's results.
TEST(Native, NAT_1__an_event_on_a_borrowed_stream_captures_native_work) {
  const sluice::device dev{0};
  sluice::stream owner{dev};
  const native_stream_t native = sluice::native_handle(owner);
  sluice::stream borrowed = sluice::borrow(dev, native);
  sluice::stream reader{dev};
  sluice::device_buffer<byte> buf{dev, nat_bytes};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(nat_bytes, 0);
  sluice::event done{dev};
  {
    gate g{owner};
    native_fill(dev, native, buf.data(), 0x6B, nat_bytes);
    done.record(borrowed);
    reader.wait(done);
    sluice::copy(reader, out.data(), buf.data(), nat_bytes);
    EXPECT_TRUE(stays_false([&] { return reader.ready() || done.ready(); }))
        << "the event did not capture the held native stream's work";
  }
  reader.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), nat_bytes, 0x6B), nat_bytes);
}

// Destroying the borrowed stream while its work is held returns at once; the
// work completes, and the native stream and its owner go on working.
TEST(Native, NAT_2__destroying_a_borrowed_stream_returns_at_once_and_leaves_the_native) {
  const sluice::device dev{0};
  sluice::stream owner{dev};
  const native_stream_t native = sluice::native_handle(owner);
  sluice::device_buffer<byte> buf{dev, nat_bytes};
  sluice::pinned_buffer<byte> out = filled_pinned_bytes(nat_bytes, 0);
  sluice::pinned_buffer<byte> after = filled_pinned_bytes(nat_bytes, 0);
  gate g{owner};
  std::optional<sluice::stream> borrowed{sluice::borrow(dev, native)};
  sluice::fill(*borrowed, buf.data(), 0x21, nat_bytes);
  sluice::copy(*borrowed, out.data(), buf.data(), nat_bytes);
  const sluice::stream_ref stale = *borrowed;
  EXPECT_TRUE(returns_while_held(g, [&] { borrowed.reset(); }));
  EXPECT_TRUE(throws_code(sluice::errc::invalid_handle, [&] { (void)stale.ready(); }));
  // The native stream is still there: its owner, the vendor and a new borrow use it.
  EXPECT_EQ(sluice::native_handle(owner), native);
  native_fill(dev, native, buf.data(), 0x22, nat_bytes);
  sluice::stream again = sluice::borrow(dev, native);
  sluice::copy(again, after.data(), buf.data(), nat_bytes);
  EXPECT_FALSE(owner.ready());
  g.release();
  owner.synchronize();
  again.synchronize();
  EXPECT_EQ(first_byte_not(out.data(), nat_bytes, 0x21), nat_bytes)
      << "the destroyed borrowed stream's work did not complete";
  EXPECT_EQ(first_byte_not(after.data(), nat_bytes, 0x22), nat_bytes);
}

TEST(Native, NAT_3__null_and_default_streams_are_rejected) {
  const sluice::device dev{0};
  for (const native_stream_t s : default_native_streams()) {
    EXPECT_TRUE(throws_code(sluice::errc::invalid_argument, [&] { (void)sluice::borrow(dev, s); }))
        << "native stream " << static_cast<const void*>(s);
  }
  // A device that does not exist, with a good stream.
  sluice::stream owner{dev};
  EXPECT_TRUE(throws_code(sluice::errc::invalid_device, [&] {
    (void)sluice::borrow(sluice::device{sluice::device_count()}, sluice::native_handle(owner));
  }));
}

// A stream of device 0 borrowed as device 1's: rejected where the vendor can
// tell (host, CUDA); HIP 5.2 cannot (no hipStreamGetDevice): expected skip.
TEST(NativeMultiDevice, NAT_3__a_stream_of_another_device_is_rejected) {
  if (sluice::device_count() < 2) GTEST_SKIP() << "needs two devices";
  if (sluice::backend() == sluice::backend_kind::hip)
    GTEST_SKIP() << "HIP 5.2 cannot tell a stream's device (no hipStreamGetDevice)";
  sluice::stream owner{sluice::device{0}};
  EXPECT_TRUE(throws_code(sluice::errc::invalid_argument, [&] {
    (void)sluice::borrow(sluice::device{1}, sluice::native_handle(owner));
  }));
}

}  // namespace
}  // namespace sluice::conformance
