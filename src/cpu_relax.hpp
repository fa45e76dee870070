// One step of a short busy wait, for every spinning loop of the backends. Internal.
#pragma once

namespace sluice::detail {

//! The CPU's pause hint: a spinning core gives its pipeline (and a hyper-thread
//! sibling) room and uses less power, without giving up its time slice.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace sluice::detail
