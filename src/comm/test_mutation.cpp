// Test-only mutations of sluice::comm (mutation.hpp): which one is in force,
// read once from SLUICE_COMM_MUTATION.
#include "comm/mutation.hpp"

#include <sluice/error.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice::comm::detail {

namespace mutation {

kind active() {
  static const kind k = [] {
    const char* v = std::getenv("SLUICE_COMM_MUTATION");
    if (v == nullptr || *v == '\0') return kind::none;
    static constexpr struct {
      const char* name;
      kind k;
    } names[] = {{"post_at_enqueue", kind::post_at_enqueue},
                 {"enqueue_waits", kind::enqueue_waits},
                 {"one_at_a_time", kind::one_at_a_time},
                 {"tag_zero", kind::tag_zero},
                 {"collectives_unordered", kind::collectives_unordered},
                 {"skip_rank_checks", kind::skip_rank_checks},
                 {"no_timeout", kind::no_timeout},
                 {"piece_header_unchecked", kind::piece_header_unchecked},
                 {"receive_unprobed", kind::receive_unprobed},
                 {"chain_unchecked", kind::chain_unchecked},
                 {"early_deadline", kind::early_deadline},
                 {"untraced", kind::untraced}};
    for (const auto& n : names)
      if (std::strcmp(v, n.name) == 0) {
        std::fprintf(stderr, "sluice: SLUICE_COMM_MUTATION=%s: a COMM rule is broken on purpose\n",
                     v);
        return n.k;
      }
    throw error(errc::invalid_argument,
                std::string("SLUICE_COMM_MUTATION=") + v + " is not a mutation of sluice::comm", 0,
                "sluice::comm");
  }();
  return k;
}

}  // namespace mutation

}  // namespace sluice::comm::detail
