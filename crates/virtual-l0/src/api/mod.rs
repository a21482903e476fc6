//! The exported Level Zero entry points, by area. Every export goes through
//! [`crate::export::guard`] (via `ze_api!` / `ze_api_ptr!` / `ze_unsupported!`).
pub mod cmd;
pub mod context;
pub mod control;
pub mod device;
pub mod driver;
pub mod loader;
pub mod memory;
pub mod stubs;
pub mod sysman;
#[cfg(unix)]
pub mod virtual_mem;
#[cfg(windows)]
pub mod virtual_mem_windows;
