#pragma once
// Kubernetes resource quantities (resource.Quantity): 500m, 2, 1.5, 16Gi, 1e3, 64M.

#include <optional>
#include <string>
#include <string_view>

namespace ktrain {

/// Whether `s` is a Kubernetes quantity: a signed decimal number with an optional
/// suffix: decimal SI (m k M G T P E), binary (Ki Mi Gi Ti Pi Ei) or an exponent (e3, E-2).
bool is_quantity(std::string_view s);

/// The value of quantity `s` (16Gi -> 17179869184, 500m -> 0.5), or nullopt when `s`
/// is not a quantity.
std::optional<long double> parse_quantity(std::string_view s);

/// A hint for a near-miss such as "16GB" or "16gi" ("did you mean 16Gi?"), or "".
std::string quantity_hint(std::string_view s);

}  // namespace ktrain
