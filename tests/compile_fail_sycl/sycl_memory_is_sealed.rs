// Only the crate's memory types can be handed to a queue's copies (their pointers are known to be USM
// of a context of this crate).
use std::sync::Arc;
use npu_sycl_bridge::sycl::{SyclContext, SyclMemory};

struct Fake(Arc<SyclContext>);

impl SyclMemory for Fake {
    fn as_ptr(&self) -> *const u8 { std::ptr::null() }
    fn as_mut_ptr(&mut self) -> *mut u8 { std::ptr::null_mut() }
    fn len(&self) -> usize { 1 << 20 }
    fn context(&self) -> &Arc<SyclContext> { &self.0 }
}

fn main() {}
