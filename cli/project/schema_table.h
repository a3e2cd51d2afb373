#pragma once
// The keys of ktrain.yaml, section by section: one table that the parser takes its
// key lists and enumerations from (project/parse.cc) and that the JSON Schema is
// generated from (project/json_schema.cc), so that the two cannot drift apart.
// How a value is checked in detail (messages, cross-field rules) stays in the parser.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktrain::project {

/// What a key's value is, as the parser reads it and the schema describes it.
enum class ValueKind {
  kNone,           ///< no scalar form: only a map of `KeySpec::section`
  kDnsLabel,       ///< a DNS-1123 label of at most `max_length` characters
  kDnsSubdomain,   ///< a DNS-1123 subdomain of at most `max_length` characters
  kImage,          ///< an image reference, [registry/]path[:tag][@digest]
  kRepository,     ///< an image reference without a tag or digest
  kText,           ///< any string
  kScalar,         ///< a string, number or boolean, kept as written (command items)
  kAbsolutePath,   ///< an absolute path without '..' or ':'
  kHttpPath,       ///< an HTTP path, starting with '/'
  kDomainPath,     ///< a domain-prefixed path like acme.io/foo, at most `max_length` characters
  kWhole,          ///< a whole number from `min` to `max`
  kBoolean,        ///< true or false
  kEnum,           ///< one of `values`
  kQuantity,       ///< a Kubernetes quantity greater than 0 (500m, 2, 16Gi)
  kDuration,       ///< a duration like 90s or 1h30m; greater than 0 when `min` is 1
  kSurge,          ///< a whole number >= 0 or a percentage like 25%
  kNodeCount,      ///< a whole number >= 1, or elastic nodes min..max like 2..8
  kMigProfile,     ///< a MIG profile like 1g.10gb
  kGpuProduct,     ///< a GPU product name: a label value, not empty
  kCudaVersion,    ///< a CUDA version like 12.1 (a number or a string)
  kEnvFrom,        ///< secret/NAME or configMap/NAME
  kCapability,     ///< a Linux capability in upper case, like IPC_LOCK
  kMetricName,     ///< a metric name: no spaces or '/'
  kTaintKey,       ///< a taint key (a label key), or empty
  kLabelValue,     ///< a label value, maybe empty; numbers and booleans as written
  kToleration,     ///< the short form of a toleration: key[=value][:Effect]
  kEmptyDir,       ///< {} or true
  kEnvMap,         ///< environment variable names to scalar values (free-form keys)
  kLabelMap,       ///< label keys to label values (free-form keys)
  kProjectLabels,  ///< kLabelMap without the keys that ktrain sets itself
  kSweep,          ///< parameter names to non-empty lists of distinct scalar values
  kPatches,        ///< rendered kinds (`values`) to JSON merge patches
};

/// One key of a section of ktrain.yaml.
struct KeySpec {
  std::string name;
  ValueKind kind = ValueKind::kNone;
  /// The section whose keys a map value has (a name in project_sections()); with a
  /// `kind` too, the value is either that scalar or such a map.
  std::string section;
  bool list = false;          ///< the value is a list of such values
  std::size_t min_items = 0;  ///< for a list: the fewest items
  bool required = false;      ///< the parser reports the key missing (null counts as missing)
  std::int64_t min = 0;       ///< kWhole: the smallest value; kDuration: 1 refuses 0
  std::int64_t max = std::numeric_limits<std::int32_t>::max();  ///< kWhole: the largest
  std::size_t max_length = 0;       ///< kDnsLabel, kDnsSubdomain: the longest name
  std::vector<std::string> values;  ///< kEnum: the values; kPatches: the kinds
  std::string description;          ///< one line, for editors
  std::string example;              ///< a valid value, as JSON (which is also YAML)
};

/// A map of fixed keys: the top level of the file, a section, or an item of a list.
struct SectionSpec {
  std::string name;         ///< "project" for the top level; "train", "volume", ...
  std::string description;  ///< one line, for editors
  std::vector<KeySpec> keys;
};

/// Every section; the first is the top level ("project").
const std::vector<SectionSpec>& project_sections();

/// The section named `name`; throws std::out_of_range when there is none.
const SectionSpec& project_section(std::string_view name);

/// The key `key` of section `section`; throws std::out_of_range when there is none.
const KeySpec& project_key(std::string_view section, std::string_view key);

/// The key names of section `name`, in table order.
std::vector<std::string> key_names(std::string_view section);

/// Where each section is in the file, top level first and then depth first in key
/// order: {"", project}, {"image", image}, {"image.build", build}, {"train", train},
/// {"train.volumes[]", volume}, ... (a list's items are "key[]").
std::vector<std::pair<std::string, const SectionSpec*>> section_paths();

/// The key paths of the maps whose keys are free-form ("labels", "train.env",
/// "scheduling.nodeSelector", ...): the rest of a --set path after one is one key.
std::vector<std::string> free_form_map_paths();

}  // namespace ktrain::project
