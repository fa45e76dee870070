// A program of a project that uses sluice from outside: it must compile
// against the public headers alone and link with nothing but sluice::host.
#include <sluice/sluice.hpp>

#include <cstdio>
#include <vector>

int main() {
  const sluice::device device(0);
  sluice::stream stream(device, {sluice::priority::high});
  sluice::event done(device);

  std::vector<int> input(1024, 7);
  std::vector<int> output(input.size(), 0);
  sluice::device_buffer<int> buffer(stream, input.size());
  sluice::copy(stream, buffer.data(), input.data(), input.size() * sizeof(int));
  sluice::copy(stream, output.data(), buffer.data(), output.size() * sizeof(int));
  int host_functions = 0;
  stream.host_func([&] { ++host_functions; });
  done.record(stream);
  done.synchronize();

  const bool ok = output == input && host_functions == 1;
  std::printf("sluice %s on the %s backend: %s\n", SLUICE_VERSION_STRING, sluice::backend_name(),
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
