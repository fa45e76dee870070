#include "cli/backend_programs.hpp"

#include "cli/commands.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>

namespace sluice::tool {

namespace {

//! A device-count probe that has not answered after this long counts as "no devices".
constexpr int probe_timeout_ms = 60'000;

}  // namespace

std::string program_of(const std::string& directory, const std::string& backend) {
  return directory + "/sluice-" + backend;
}

bool is_built(const std::string& directory, const std::string& backend) {
  return access(program_of(directory, backend).c_str(), X_OK) == 0;
}

std::optional<int> device_count(const std::string& program) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return std::nullopt;
  const pid_t child = fork();
  if (child < 0) {
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    return std::nullopt;
  }
  if (child == 0) {
    dup2(pipe_ends[1], STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    const char* const argv[] = {program.c_str(), "info", "--device-count", nullptr};
    execv(program.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  close(pipe_ends[1]);
  std::string output;
  pollfd readable{pipe_ends[0], POLLIN, 0};
  bool timed_out = false;
  for (;;) {
    const int ready = poll(&readable, 1, probe_timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      break;
    }
    char chunk[64];
    const ssize_t got = read(pipe_ends[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(chunk, static_cast<std::size_t>(got));
  }
  close(pipe_ends[0]);
  if (timed_out) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  char* end = nullptr;
  const long count = std::strtol(output.c_str(), &end, 10);
  if (end == output.c_str() || count < 0 || count > INT_MAX) return std::nullopt;
  return static_cast<int>(count);
}

backend_choice default_backend(const std::string& directory) {
  for (const char* gpu : known_backends) {
    if (std::string(gpu) == "host" || !is_built(directory, gpu)) continue;
    const auto count = device_count(program_of(directory, gpu));
    if (count && *count > 0) return {gpu, "the first GPU backend built that has a device"};
  }
  if (is_built(directory, "host")) return {"host", "no GPU backend built that has a device"};
  throw dispatch_error("no sluice-<backend> program next to this one in " + directory);
}

backend_choice chosen_backend(const std::string& directory, const std::string& requested,
                              const char* source) {
  if (!sluice::tool::is_known_backend(requested)) {
    throw dispatch_error(sluice::tool::unknown_backend_message(source, requested));
  }
  if (!is_built(directory, requested)) {
    throw dispatch_error("the " + requested + " backend was not built: no " +
                         program_of(directory, requested) + " (see 'sluice backends')");
  }
  return {requested, std::string("chosen by ") + source};
}

int list_backends(const std::string& directory, const std::optional<backend_choice>& requested) {
  std::cout << "backends next to " << directory << ":\n";
  for (const char* backend : known_backends) {
    std::string name = backend;
    name.resize(6, ' ');
    std::cout << "  " << name;
    if (!is_built(directory, backend)) {
      std::cout << "not built\n";
      continue;
    }
    const auto count = device_count(program_of(directory, backend));
    std::cout << "sluice-" << backend << ", ";
    if (count) {
      std::cout << *count << (*count == 1 ? " device\n" : " devices\n");
    } else {
      std::cout << "cannot start (run 'sluice --backend " << backend << " info')\n";
    }
  }
  const backend_choice chosen = requested ? *requested : default_backend(directory);
  std::cout << "default: " << chosen.backend << " (" << chosen.reason << ")\n";
  return 0;
}

}  // namespace sluice::tool
