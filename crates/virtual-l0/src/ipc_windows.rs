//! Windows: IPC handles (NT handles in compute-runtime's WDDM build) are not modelled. An event
//! pool here never has shared memory: [`EventPoolMemory::create`] refuses, so no [`EventSlot`] is
//! ever made and its methods are never reached.
use crate::export::ZeResult;
use crate::sys::*;
use std::sync::Arc;
use std::time::Duration;

/// `ZE_MAX_IPC_HANDLE_SIZE`.
pub const HANDLE_SIZE: usize = 64;

/// IPC event pool memory: none on Windows.
pub struct EventPoolMemory;

impl EventPoolMemory {
    pub fn create(_count: u32) -> ZeResult<Arc<Self>> {
        Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    }
}

/// An event's slot in IPC event pool memory: never made on Windows.
pub struct EventSlot;

impl EventSlot {
    pub fn new(_pool: Arc<EventPoolMemory>, _index: u32) -> Self {
        EventSlot
    }
    pub fn is_signaled(&self) -> bool {
        false
    }
    pub fn begin(&self, _start: u64) {}
    pub fn signal(&self, _start: u64, _end: u64) {}
    pub fn reset(&self) {}
    pub fn timestamps(&self) -> (u64, u64) {
        (0, 0)
    }
    pub fn wait_for(&self, max: Duration) {
        std::thread::sleep(max);
    }
}

pub fn event_pool_handle(_mem: &Arc<EventPoolMemory>, _count: u32, _flags: u32) -> ZeResult<[u8; HANDLE_SIZE]> {
    Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
}

pub fn open_event_pool(_d: &[u8; HANDLE_SIZE]) -> ZeResult<(Arc<EventPoolMemory>, u32, u32)> {
    Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
}
