// The LOCAL:REMOTE arguments of `ktrain port-forward`.

#include <doctest/doctest.h>

#include "base/error.h"
#include "cmd/port_forward.h"

using ktrain::UsageError;
using ktrain::cmd::parse_port_pair;

TEST_CASE("port-forward: LOCAL:REMOTE, PORT and :REMOTE") {
  auto p = parse_port_pair("8080:80");
  CHECK(p.local == 8080);
  CHECK(p.remote == 80);
  p = parse_port_pair("6006");
  CHECK(p.local == 6006);
  CHECK(p.remote == 6006);
  p = parse_port_pair(":9000");
  CHECK(p.local == 0);
  CHECK(p.remote == 9000);
  p = parse_port_pair("0:9000");
  CHECK(p.local == 0);
  CHECK(p.remote == 9000);
}

TEST_CASE("port-forward: what is not a port is a usage error naming it") {
  for (const char* bad :
       {"", ":", "80:", "0", "65536", "99999:80", "a:80", "80:b", "-1", "1:2:3", "123456"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_port_pair(bad), UsageError);
  }
  try {
    parse_port_pair("8080:http");
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) ==
          "port-forward 8080:http: \"http\" is not a port (1-65535); expected LOCAL:REMOTE, "
          "REMOTE or :REMOTE");
  }
}
