#include "trace/spill_file.hpp"

#include "settings.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sluice::tool {

spill_file::spill_file() {
  const char* dir = sluice::detail::settings::value(sluice::detail::setting::tmpdir);
  std::string path =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/sluice-trace-report-XXXXXX";
  fd_ = ::mkstemp(path.data());
  if (fd_ < 0)
    throw std::runtime_error("cannot make a temporary file " + path + ": " + std::strerror(errno));
  ::unlink(path.c_str());
}

spill_file::~spill_file() { ::close(fd_); }

std::uint64_t spill_file::append(const void* data, std::size_t n) {
  const std::uint64_t at = end_;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(end_));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw std::runtime_error(std::string("cannot write the temporary file: ") +
                               std::strerror(errno));
    p += w;
    n -= static_cast<std::size_t>(w);
    end_ += static_cast<std::uint64_t>(w);
  }
  return at;
}

void spill_file::read(std::uint64_t at, void* data, std::size_t n) const {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw std::runtime_error(std::string("cannot read the temporary file: ") +
                               std::strerror(errno));
    p += r;
    n -= static_cast<std::size_t>(r);
    at += static_cast<std::uint64_t>(r);
  }
}

}  // namespace sluice::tool
