// sluice/sluice.hpp: the umbrella header. One API for GPU streams, events,
// stream priorities and peer copies over CUDA, HIP and a CPU reference backend.
#pragma once

#include <sluice/backend.hpp>
#include <sluice/device.hpp>
#include <sluice/error.hpp>
#include <sluice/event.hpp>
#include <sluice/flag.hpp>
#include <sluice/graph.hpp>
#include <sluice/memory.hpp>
#include <sluice/peer.hpp>
#include <sluice/stream.hpp>
#include <sluice/trace.hpp>
#include <sluice/version.hpp>
