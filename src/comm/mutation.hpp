// sluice::comm's test-only mutations: the one mechanism of src/test_mutation.hpp
// (SLUICE_TEST_MUTATION=comm.<name>, compiled in only with the build option
// SLUICE_TEST_MUTATIONS). Each breaks one COMM rule on purpose, so that CI
// shows the COMM family catches it (tests/comm/CMakeLists.txt runs each;
// docs/conformance/mutations.md). Each switch point is
// mutation::is(mutation::kind::...); mutation::active() rejects a name that
// is no mutation (errc::invalid_argument) before anything is enqueued.
#pragma once

#include "test_mutation.hpp"

namespace sluice::comm::detail {

namespace mutation = sluice::detail::mutation;

}  // namespace sluice::comm::detail
