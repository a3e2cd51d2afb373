#include "runtime/version.h"

#ifndef KTRAIN_VERSION
#define KTRAIN_VERSION "0.0.0"
#endif

namespace ktrain::launch {

const char* version() {
  return KTRAIN_VERSION;
}

}  // namespace ktrain::launch
