// What the COMM tests share: the fixture that makes a test's verdict the
// verdict of every rank, and MPI helpers. Runs under mpirun (main.cpp).
#pragma once

#include "../conformance/support.hpp"

#include <sluice/comm.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

namespace sluice::conformance {

//! A COMM test: at its end every rank says whether it failed; a rank whose
//! test passed fails it when another rank's did, naming those ranks, so that
//! rank 0's report (JUnit, verdicts) is the job's.
class CommTest : public ::testing::Test {
 protected:
  void TearDown() override;
};

//! MPI_Barrier on MPI_COMM_WORLD (the test thread's own MPI call).
void world_barrier();
//! SLUICE_COMM_TIMEOUT_S as the tests run it (seconds).
int comm_timeout_s();
//! The engine of the tests' communicators: SLUICE_COMM_ENGINE=mpi|nccl|automatic
//! (unset: automatic), read by the tests (the library never reads it), so that
//! one suite runs under each engine (ctest sim.comm.cuda.nccl.np2,
//! scripts/gpu-check's comm step).
comm::engine test_engine();

}  // namespace sluice::conformance
