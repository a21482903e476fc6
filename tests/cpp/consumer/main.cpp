#include <npu_sycl_bridge/sycl_core.hpp>

#include <iostream>

int main() {
  try {
    for (const auto& p : npu_sycl_bridge::list_platforms()) std::cout << p.backend << ": " << p.name << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
