// libcupti, loaded at run time for the CUPTI trace source (cupti_source.cpp):
// by soname, then the toolkit's folders, or the library SLUICE_CUPTI_LIBRARY
// names. cupti.h gives the types and the function signatures only; nothing
// links against libcupti. Defined in cupti_library.cpp.
#pragma once

#include <cupti.h>

#include <string>

namespace sluice::detail {

//! The CUPTI calls sluice makes, looked up with dlsym.
struct cupti_table {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop = nullptr;
  decltype(&cuptiGetStreamIdEx) stream_id = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
};

//! Loads libcupti and looks up every call of `t`; false with *why (what was
//! tried, or which calls the library lacks) where it cannot.
bool load_cupti(cupti_table& t, std::string* why);

}  // namespace sluice::detail
