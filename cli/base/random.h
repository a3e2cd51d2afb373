#pragma once
// Secrets from the kernel's random source (getrandom(2)): rendezvous tokens and
// secrets that must not be guessable.

#include <cstddef>
#include <string>

namespace ktrain {

/// `bytes` random bytes as 2*`bytes` lowercase hex digits. Throws Error when the
/// kernel's random source fails.
std::string random_hex(std::size_t bytes);

}  // namespace ktrain
