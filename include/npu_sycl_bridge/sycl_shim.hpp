#pragma once
#include <cstddef>
namespace npu_sycl_bridge {
std::size_t platform_count();
}
