// The host backend's test-only mutations: the one mechanism of
// src/test_mutation.hpp (SLUICE_TEST_MUTATION=host.<name>, compiled in only
// with the build option SLUICE_TEST_MUTATIONS). Each breaks one guarantee on
// purpose, so that CI can show that the conformance suite catches it
// (docs/conformance/mutations.md). The backend's start-up calls
// mutation::configure(); each switch point is mutation::is(mutation::kind::...).
#pragma once

#include "test_mutation.hpp"
