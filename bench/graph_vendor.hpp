// The vendor's own graph of the graph bench's programs (bench/graph.cpp):
// the same fills and copies captured by the vendor's stream capture on the
// same vendor streams, instantiated once and launched with the vendor's call
// (CUDA: cudaGraphLaunch). Backends without one (host, HIP here) give null.
#pragma once

#include <sluice/stream.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace sluice_bench {

struct vendor_graph {
  virtual ~vendor_graph() = default;
  virtual void launch() = 0;  //!< one launch on the origin stream's vendor stream
};

//! The buffers and streams the programs use: origin s, `others` the branches' streams.
struct vendor_program {
  bool diamond = false;
  bool kernels = false;  // the tiny kernels (graph_kernels.hpp) instead of fills and copies
  const sluice::stream_ref* s = nullptr;       // the origin
  const sluice::stream_ref* others = nullptr;  // branches - 1 of them
  std::size_t branches = 1;
  unsigned char* a = nullptr;
  unsigned char* b = nullptr;
  std::size_t slots = 0, slot_bytes = 0;
};

//! The vendor's graph of p, or null with `why` set when this backend has none.
std::unique_ptr<vendor_graph> make_vendor_graph(const vendor_program& p, std::string& why);

}  // namespace sluice_bench
