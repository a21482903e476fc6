#[cxx::bridge(namespace = "npu_sycl_bridge")]
pub(crate) mod bridge {
    unsafe extern "C++" {
        include!("npu_sycl_bridge/sycl_shim.hpp");
        fn platform_count() -> Result<usize>;
    }
}
