// Wrapping a raw ze_context_handle_t is `unsafe`: the caller vouches for the handle's lifetime and driver.
use npu_sycl_bridge::sycl::{SyclContext, SyclDevice};
use npu_sycl_bridge::ownership::Foreign;

fn wrap(raw: level_zero_sys::ze_context_handle_t, devices: &[SyclDevice]) {
    let _ = SyclContext::from_level_zero(raw, devices, Foreign::Owned);
}

fn main() {}
