// What happens at the vendor's limit on peers per device, on sluice::cuda
// against the simulated runtime with SLUICE_SIM_PEER_LIMIT=2 and 4 devices
// (ctest sim.peer_limit.cuda): enable_peer_access beyond the limit throws
// errc::peer_access_unavailable naming the vendor error, changes nothing, and
// leaves no stale error; copy_peer between that pair keeps working, staged.
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

TEST(PeerLimitTwo, EnablingBeyondTheLimitFailsClearlyAndCopiesStayStaged) {
  const char* limit = std::getenv("SLUICE_SIM_PEER_LIMIT");
  ASSERT_NE(limit, nullptr) << "run with SLUICE_SIM_PEER_LIMIT=2 (ctest sim.peer_limit.cuda)";
  ASSERT_EQ(std::string(limit), "2");
  ASSERT_GE(sluice::device_count(), 4);
  const sluice::device d0{0}, d1{1}, d2{2}, d3{3};
  sluice::enable_peer_access(d0, d1);
  sluice::enable_peer_access(d0, d2);
  sluice::enable_peer_access(d0, d1);  // again: idempotent, not a third peer
  try {
    sluice::enable_peer_access(d0, d3);
    ADD_FAILURE() << "a third peer of device 0 was enabled past a limit of 2";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), sluice::errc::peer_access_unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaDeviceEnablePeerAccess"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(sluice::peer_access_enabled(d0, d3));
  EXPECT_TRUE(sluice::peer_access_enabled(d0, d1));
  // Other devices are not at their limit.
  sluice::enable_peer_access(d3, d0);
  EXPECT_TRUE(sluice::peer_access_enabled(d3, d0));

  // The copy 0 -> 3 on a stream of device 0 still works, staged, bit-exact.
  constexpr std::size_t n = (std::size_t{3} << 20) + 11;
  sluice::pinned_buffer<unsigned char> in{n}, out{n};
  for (std::size_t i = 0; i < n; ++i) in.data()[i] = static_cast<unsigned char>(i * 7 + (i >> 9));
  sluice::device_buffer<unsigned char> src{d0, n}, dst{d3, n};
  sluice::stream s0{d0}, s3{d3};
  sluice::copy(s0, src.data(), in.data(), n);
  EXPECT_EQ(sluice::copy_peer(s0, dst.data(), d3, src.data(), d0, n), sluice::copy_path::staged);
  sluice::event copied{d0};
  copied.record(s0);
  s3.wait(copied);
  sluice::copy(s3, out.data(), dst.data(), n);
  s3.synchronize();
  std::size_t differ = 0;
  while (differ < n && out.data()[differ] == in.data()[differ]) ++differ;
  EXPECT_EQ(differ, n) << "the staged copy differs at byte " << differ;
  // ... and on a stream of device 3, which has peer access to device 0: direct.
  EXPECT_EQ(sluice::copy_peer(s3, dst.data(), d3, src.data(), d0, n), sluice::copy_path::direct);
  s3.synchronize();
}

}  // namespace

namespace {

// Every ordered pair of 8 devices with peer access enabled: 7 peers per
// device, within CUDA's 8 (the simulated runtime's default limit); every
// pair's copy is direct (ctest sim.peer_all_pairs.cuda, 8 devices).
TEST(PeerLimitEight, AllPairsOfEightDevicesFitTheLimit) {
  ASSERT_EQ(sluice::device_count(), 8) << "run with SLUICE_SIM_DEVICES=8";
  constexpr std::size_t n = 4096;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) sluice::enable_peer_access(sluice::device{a}, sluice::device{b});
  for (int a = 0; a < 8; ++a) {
    sluice::device_buffer<unsigned char> src{sluice::device{a}, n};
    sluice::stream s{sluice::device{a}};
    sluice::fill(s, src.data(), static_cast<unsigned char>(a + 1), n);
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_TRUE(sluice::peer_access_enabled(sluice::device{a}, sluice::device{b}));
      sluice::device_buffer<unsigned char> dst{sluice::device{b}, n};
      EXPECT_EQ(
          sluice::copy_peer(s, dst.data(), sluice::device{b}, src.data(), sluice::device{a}, n),
          sluice::copy_path::direct)
          << a << " -> " << b;
      sluice::pinned_buffer<unsigned char> out{n};
      sluice::event copied{sluice::device{a}};
      copied.record(s);
      sluice::stream r{sluice::device{b}};
      r.wait(copied);
      sluice::copy(r, out.data(), dst.data(), n);
      r.synchronize();
      std::size_t differ = 0;
      while (differ < n && out.data()[differ] == a + 1) ++differ;
      EXPECT_EQ(differ, n) << a << " -> " << b;
    }
    s.synchronize();
  }
}

}  // namespace

namespace {

// A bad tuning variable of the peer copies (ctest sim.peer_environment.cuda:
// SLUICE_PEER_SM_MAX_KIB=-1, SLUICE_PEER_SM_BATCH_MAX_KIB=banana; .push and
// .pull: a bad SLUICE_PEER_SM_PUSH_MAX_KIB or SLUICE_PEER_SM_PULL_MAX_KIB, named
// by SLUICE_TEST_BAD_PEER_VARIABLE): copy_peer and copy_peer_batch throw
// errc::invalid_argument naming the variable, and the destination is untouched.
TEST(PeerEnvironment, BadValuesAreRejectedBeforeAnythingIsEnqueued) {
  ASSERT_GE(sluice::device_count(), 2);
  const sluice::device d0{0}, d1{1};
  constexpr std::size_t n = 4096;
  sluice::device_buffer<unsigned char> src{d0, n}, dst{d1, n};
  sluice::stream s{d0};
  sluice::fill(s, src.data(), 1, n);
  sluice::stream s1{d1};
  sluice::fill(s1, dst.data(), 2, n);
  s1.synchronize();
  const auto rejected = [&](const char* variable, bool batch) {
    try {
      if (batch) {
        const sluice::peer_piece pieces[] = {{dst.data(), src.data(), n / 2},
                                             {dst.data() + n / 2, src.data() + n / 2, n / 2}};
        (void)sluice::copy_peer_batch(s, d1, d0, pieces, 2);
      } else {
        (void)sluice::copy_peer(s, dst.data(), d1, src.data(), d0, n);
      }
      ADD_FAILURE() << (batch ? "copy_peer_batch" : "copy_peer") << " ran with a bad " << variable;
    } catch (const sluice::error& e) {
      EXPECT_EQ(e.code(), sluice::errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
    }
  };
  const char* single = std::getenv("SLUICE_TEST_BAD_PEER_VARIABLE");
  rejected(single != nullptr ? single : "SLUICE_PEER_SM_MAX_KIB",
           false);                                 // read by every copy_peer
  rejected("SLUICE_PEER_SM_BATCH_MAX_KIB", true);  // read by every copy_peer_batch
  s.synchronize();
  sluice::pinned_buffer<unsigned char> out{n};
  sluice::copy(s1, out.data(), dst.data(), n);
  s1.synchronize();
  std::size_t untouched = 0;
  while (untouched < n && out.data()[untouched] == 2) ++untouched;
  EXPECT_EQ(untouched, n) << "a rejected copy_peer wrote the destination";
}

}  // namespace
