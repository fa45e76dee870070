// sluice-probe-held-calls: giving up, draining the device, and the worker with
// its watchdog (harness.hpp).
#include "harness.hpp"

#include <unistd.h>

namespace held_calls {

[[noreturn]] void give_up(int code, const std::string& why) {
  std::printf("%s\n", why.c_str());
  std::fflush(stdout);
  if (csv_file != nullptr) std::fflush(csv_file);
  _exit(code);
}

void drain(int device) {
  bounded("cudaDeviceSynchronize", device,
          [] { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
}

phase_result run_calls(hold& h, const probe_env& env, std::string name, std::string calls, int n,
                       const iteration_fn& iteration, bool stop_at_first_block) {
  phase_result r;
  r.name = std::move(name);
  r.calls = std::move(calls);
  r.count = n;
  vendor v;
  std::mutex m;
  std::condition_variable cv;
  int in_call = -1;  // the iteration running, -1 between iterations
  int done = 0;      // iterations that returned
  bool pause = false, stop = false, finished = false;
  clock_type::time_point started{};
  std::vector<double> took_us(static_cast<std::size_t>(n), 0.0);
  std::vector<clock_type::time_point> ended(static_cast<std::size_t>(n));

  std::thread worker([&] {
    for (int i = 0; i < n; ++i) {
      {
        const std::lock_guard<std::mutex> lock(m);
        if (stop) break;
        in_call = i;
        started = clock_type::now();
      }
      // The thread's first CUDA call is watched too (counted in call #1): it
      // could wait for a lock that a blocked call of another thread holds.
      if (i == 0) v.call("cudaSetDevice", [&] { return cudaSetDevice(env.opt.device); });
      iteration(i, v);
      const auto t = clock_type::now();
      std::unique_lock<std::mutex> lock(m);
      ended[i] = t;
      took_us[i] = ms_between(started, t) * 1000;
      in_call = -1;
      done = i + 1;
      cv.notify_all();
      cv.wait(lock, [&] { return !pause; });  // while the watchdog renews the hold
    }
    const std::lock_guard<std::mutex> lock(m);
    finished = true;
    cv.notify_all();
  });

  const auto limit = std::chrono::milliseconds(env.opt.block_ms);
  std::vector<bool> blocked(static_cast<std::size_t>(n), false);
  std::unique_lock<std::mutex> lock(m);
  while (!finished) {
    if (in_call < 0 || pause || clock_type::now() - started < limit) {
      cv.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    const int k = in_call;  // has run past --block-ms: a block point
    const auto call_started = started;
    const std::string in = v.current();
    pause = true;
    lock.unlock();
    h.release();
    const auto released = h.released_at();
    lock.lock();
    if (!cv.wait_until(lock, released + release_limit, [&] { return done > k; }))
      give_up(exit_not_returned, "case=" + r.name + " call #" + std::to_string(k + 1) + " (" + in +
                                     ") had not returned 10 s after the release: giving up");
    blocked[k] = true;
    r.blocks.push_back(
        {k + 1, in, ms_between(call_started, released), ms_between(released, ended[k])});
    if (stop_at_first_block || static_cast<int>(r.blocks.size()) >= env.opt.max_blocks) {
      stop = true;
      if (k + 1 < n) r.notes += " stopped_after_blocks=" + std::to_string(r.blocks.size());
    } else {
      lock.unlock();
      drain(env.opt.device);
      h.renew();
      lock.lock();
    }
    pause = false;
    cv.notify_all();
  }
  lock.unlock();
  worker.join();

  r.completed = done;
  for (int i = 0; i < done; ++i)
    if (!blocked[i]) r.unblocked_us.push_back(took_us[i]);
  r.errors = v.errors();
  r.first_error = v.first_error();
  if (h.not_in_effect() > 0) r.notes += " hold_not_in_effect=" + std::to_string(h.not_in_effect());
  return r;
}

}  // namespace held_calls
