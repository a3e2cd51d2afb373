#pragma once
// Kubernetes name rules: DNS-1123 labels and subdomains, label keys and values,
// environment variable names.

#include <string>
#include <string_view>

namespace ktrain {

/// A DNS-1123 label: 1-63 of [a-z0-9-], starting and ending with a letter or digit.
bool is_dns1123_label(std::string_view s);

/// A DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters.
bool is_dns1123_subdomain(std::string_view s);

/// A domain-prefixed path, as Kubernetes' managedBy fields take it: a DNS-1123
/// subdomain, '/', then one or more characters of a URL path (RFC 3986), like
/// kueue.x-k8s.io/multikueue.
bool is_domain_path(std::string_view s);

/// A Kubernetes label (or annotation) key: [prefix/]name, prefix a DNS-1123 subdomain,
/// name 1-63 of [A-Za-z0-9-_.] starting and ending alphanumeric.
bool is_label_key(std::string_view s);

/// A Kubernetes label value: empty, or 1-63 of [A-Za-z0-9-_.] starting and ending alphanumeric.
bool is_label_value(std::string_view s);

/// A Kubernetes environment variable name: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool is_env_var_name(std::string_view s);

/// A lowercase DNS-1123 label made from `s` ("My_Project" -> "my-project"), at most
/// `max_length` characters; "" when nothing usable is left.
std::string to_dns1123_label(std::string_view s, std::size_t max_length = 63);

}  // namespace ktrain
