#include "npu_sycl_bridge/sycl_shim.hpp"
#include <sycl/sycl.hpp>
namespace npu_sycl_bridge {
std::size_t platform_count() { return sycl::platform::get_platforms().size(); }
}
