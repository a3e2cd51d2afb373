// ktrain-launch: placeholder entry point until the launcher lands.
#include <cstdio>
int main() {
  std::fprintf(stderr, "ktrain-launch: not implemented yet\n");
  return 78;
}
