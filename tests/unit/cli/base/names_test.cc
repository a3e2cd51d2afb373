#include "base/names.h"

#include <doctest/doctest.h>

#include <string>

using namespace ktrain;

TEST_CASE("names: DNS-1123 labels") {
  CHECK(is_dns1123_label("resnet50"));
  CHECK(is_dns1123_label("a"));
  CHECK(is_dns1123_label("a-b-1"));
  CHECK(is_dns1123_label(std::string(63, 'a')));
  CHECK_FALSE(is_dns1123_label(std::string(64, 'a')));
  CHECK_FALSE(is_dns1123_label(""));
  CHECK_FALSE(is_dns1123_label("-a"));
  CHECK_FALSE(is_dns1123_label("a-"));
  CHECK_FALSE(is_dns1123_label("ResNet"));
  CHECK_FALSE(is_dns1123_label("a.b"));
  CHECK_FALSE(is_dns1123_label("a_b"));
}

TEST_CASE("names: DNS-1123 subdomains") {
  CHECK(is_dns1123_subdomain("a.b-c.d"));
  CHECK(is_dns1123_subdomain("regcred"));
  CHECK_FALSE(is_dns1123_subdomain("a..b"));
  CHECK_FALSE(is_dns1123_subdomain(".a"));
  CHECK_FALSE(is_dns1123_subdomain("A.b"));
  CHECK_FALSE(is_dns1123_subdomain(std::string(254, 'a')));
}

TEST_CASE("names: label keys and values") {
  CHECK(is_label_key("team"));
  CHECK(is_label_key("topology.kubernetes.io/zone"));
  CHECK(is_label_key("example.com/Team_Name.x"));
  CHECK_FALSE(is_label_key(""));
  CHECK_FALSE(is_label_key("/team"));
  CHECK_FALSE(is_label_key("Example.com/team"));
  CHECK_FALSE(is_label_key("a/b/c"));
  CHECK_FALSE(is_label_key("team-"));
  CHECK(is_label_value(""));
  CHECK(is_label_value("NVIDIA-H100-80GB-HBM3"));
  CHECK_FALSE(is_label_value("a b"));
  CHECK_FALSE(is_label_value(std::string(64, 'a')));
}

TEST_CASE("names: environment variable names") {
  CHECK(is_env_var_name("NCCL_DEBUG"));
  CHECK(is_env_var_name("my.var-1"));
  CHECK_FALSE(is_env_var_name("1ABC"));
  CHECK_FALSE(is_env_var_name("A B"));
  CHECK_FALSE(is_env_var_name("A=B"));
  CHECK_FALSE(is_env_var_name(""));
}

TEST_CASE("names: making a label from a folder name") {
  CHECK(to_dns1123_label("My_Project") == "my-project");
  CHECK(to_dns1123_label("--x--") == "x");
  CHECK(to_dns1123_label("___") == "");
  CHECK(to_dns1123_label(std::string(50, 'a'), 40) == std::string(40, 'a'));
}
