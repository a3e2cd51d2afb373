#include "backend/run_id.h"

#include <random>

namespace ktrain::backend {

std::string random_run_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::uniform_int_distribution<int> pick(0, 35);
  std::string id;
  for (int i = 0; i < 5; ++i) id += kAlphabet[pick(rd)];
  return id;
}

bool is_valid_run_id(const std::string& id) {
  if (id.empty() || id.size() > 12) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

}  // namespace ktrain::backend
