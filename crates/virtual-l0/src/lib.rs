//! The virtual Level Zero platform: one `cdylib` with SONAME `libze_loader.so.1` that plays the
//! Level Zero loader, a virtual Intel GPU driver and a virtual Intel NPU driver in one process.
//!
//! The unmodified DPC++ 2026.2 runtime (UR adapters v1/v2, UMF) and the OpenVINO 2026.4.1 NPU
//! plugin load it in place of the real loader (see `../shared/reference/virtual-l0-platform.md`).
//!
//! Module map:
//! - [`export`]: the wrapper every `extern "C"` export goes through (`catch_unwind`, `VL0_TRACE`,
//!   fault injection) and the raw-pointer helpers (out-parameters, `pNext` chains).
//! - [`objects`]: the object model (`Object<T>` headers naming their driver, handle validation,
//!   the two static drivers and devices, contexts).
//! - [`memory`]: per-driver allocation registries, real backing memory, the drivers' export and
//!   import rules (dma-buf fds on Linux, NT handles on Windows) and sysmem import.
//! - [`ipc`]: the GPU's IPC handles of memory and event pools (Linux; none on Windows).
//! - [`os`]: what the drivers get from the OS (memfds or sections, mappings, the pin check).
//! - [`cmdlist`]: command lists, queues, fences, events and the synchronous executor.
//! - [`counters`], [`faults`]: the control ABI (`vl0_counter`, `vl0_fault_inject`, `vl0_fault_clear`).
//! - [`api`]: the exported Level Zero entry points, by area.
//! - [`profile`]: the laptop profile in force (`VL0_PROFILE`): every value that differs between
//!   Lunar, Meteor, Arrow and Panther Lake.
//! - [`npu`]: the NPU extensions (graph, driver_npu, ...): owned by the NPU half of the project.
//!
//! OpenVINO is never linked into this library; the NPU module loads it at run time.
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub(crate) use level_zero_sys as sys;

#[macro_use]
pub mod export;
pub mod api;
pub mod cmdlist;
pub mod counters;
pub mod faults;
#[cfg(unix)]
pub mod ipc;
#[cfg(windows)]
#[path = "ipc_windows.rs"]
pub mod ipc;
pub mod memory;
pub mod npu;
pub mod objects;
pub mod os;
pub mod profile;
pub mod stypes;
