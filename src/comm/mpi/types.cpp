// sluice::comm's element types and reductions as MPI's.
#include "comm/mpi/types.hpp"

namespace sluice::comm::detail::mpi {

MPI_Datatype type_of(datatype t) {
  switch (t) {
    case datatype::int32: return MPI_INT32_T;
    case datatype::int64: return MPI_INT64_T;
    case datatype::float32: return MPI_FLOAT;
    case datatype::float64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op op_of(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return MPI_SUM;
    case reduce_op::prod: return MPI_PROD;
    case reduce_op::min: return MPI_MIN;
    case reduce_op::max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

std::string error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace sluice::comm::detail::mpi
