// What a failed raw vendor call does, for every bench and probe that makes
// such calls (raw/cuda.hpp, raw/hip.hpp): name the program, the call and the
// vendor's reason on stderr, then end the program. No sluice code.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace raw {

//! The program's name in messages; each program sets it first thing in main.
inline const char* program = "sluice";

//! How a failed call ends the program once it is named: exit status 2, unless
//! the program says otherwise (sluice-bench-comm aborts the MPI job, so that
//! no rank waits for one that is gone: comm_raw_gpu.hpp).
inline void (*end_program)() = [] { std::exit(2); };

//! "<program>: <what>: <why>" on stderr, then end_program().
inline void fail(const char* what, const char* why) {
  std::fprintf(stderr, "%s: %s: %s\n", program, what, why);
  end_program();
}

}  // namespace raw
