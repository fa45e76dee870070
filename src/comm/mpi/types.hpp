// sluice::comm's element types and reductions as MPI's, and MPI's error
// codes as text. Internal.
#pragma once

#include <sluice/comm.hpp>

#include <mpi.h>

#include <string>

namespace sluice::comm::detail::mpi {

MPI_Datatype type_of(datatype t);
MPI_Op op_of(reduce_op op);
//! MPI_Error_string's text for code ("MPI error <code>" when it has none).
std::string error_text(int code);

}  // namespace sluice::comm::detail::mpi
