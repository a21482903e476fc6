//! In-order `sycl::queue`: memcpy / memset only (no kernels).

use std::fmt;
use std::sync::Arc;

use cxx::UniquePtr;
use level_zero_sys::{ze_command_list_handle_t, ze_command_queue_handle_t};

use super::ffi::bridge;
use super::usm::{element_size_for_read, Pod, SyclMemory};
use super::{sycl_error, Error, Result, SyclContext, SyclDevice};

/// The native Level Zero object behind a queue (`get_native<ext_oneapi_level_zero>(queue)`). The
/// handle stays owned by the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeQueue {
    /// A command queue (adapter v1).
    CommandQueue(ze_command_queue_handle_t),
    /// An immediate command list (adapter v2).
    CommandList(ze_command_list_handle_t),
}

/// An in-order `sycl::queue` on one device of a [`SyclContext`]. It holds an `Arc` to the context and
/// waits for its work in `Drop`.
pub struct Queue {
    // Dropped before `context`.
    raw: UniquePtr<bridge::SyclQueue>,
    device: SyclDevice,
    context: Arc<SyclContext>,
}

// SAFETY: `sycl::queue` is a reference-counted handle the bridge only uses through `const&` (it copies
// the handle to submit); SYCL 2020 requires queue submission and waiting to be thread-safe.
unsafe impl Send for Queue {}
// SAFETY: see `Send`.
unsafe impl Sync for Queue {}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue").field("device", &self.device.name).field("native", &self.native().ok()).finish()
    }
}

impl Queue {
    /// An in-order queue on `device`, which must be one of `context`'s devices.
    pub fn new(context: &Arc<SyclContext>, device: &SyclDevice) -> Result<Queue> {
        let (_, sd) = context.sycl_device(device)?;
        let raw = bridge::make_in_order_queue(context.raw(), sd).map_err(sycl_error("sycl::queue"))?;
        Ok(Queue { raw, device: device.clone(), context: Arc::clone(context) })
    }

    /// The queue's context.
    pub fn context(&self) -> &Arc<SyclContext> {
        &self.context
    }

    /// The queue's device.
    pub fn device(&self) -> &SyclDevice {
        &self.device
    }

    /// The native command queue or immediate command list.
    pub fn native(&self) -> Result<NativeQueue> {
        let n = bridge::queue_native(&self.raw).map_err(sycl_error("get_native(queue)"))?;
        Ok(if n.is_command_list {
            NativeQueue::CommandList(n.handle as ze_command_list_handle_t)
        } else {
            NativeQueue::CommandQueue(n.handle as ze_command_queue_handle_t)
        })
    }

    /// `wait_and_throw()`; then returns the oldest error deferred by a `Drop` in this context, if any.
    pub fn wait(&self) -> Result<()> {
        bridge::queue_wait(&self.raw).map_err(sycl_error("queue.wait"))?;
        self.context.check_deferred()
    }

    /// Submits `memcpy(dst, src, len)` without waiting.
    ///
    /// # Safety
    /// - `dst` and `src` must be valid for `len` bytes (host memory or USM of this queue's context) and
    ///   not overlap;
    /// - both must stay valid, and `dst` must not be read or written by anyone else and `src` not
    ///   written, until [`wait`](Self::wait) has returned.
    pub unsafe fn memcpy_raw(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { bridge::queue_memcpy(&self.raw, dst, src, len) }.map_err(sycl_error("queue.memcpy"))
    }

    /// Submits `memset(dst, value, len)` without waiting.
    ///
    /// # Safety
    /// `dst` must be valid for `len` bytes (host memory or USM of this context) and not accessed by
    /// anyone else until [`wait`](Self::wait) has returned.
    pub unsafe fn memset_raw(&self, dst: *mut u8, value: u8, len: usize) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { bridge::queue_memset(&self.raw, dst, value, len) }.map_err(sycl_error("queue.memset"))
    }

    fn same_context(&self, what: &str, m: &dyn SyclMemory) -> Result<()> {
        if Arc::ptr_eq(m.context(), &self.context) {
            Ok(())
        } else {
            Err(Error::invalid_argument(format!("{what}: the memory belongs to another context than the queue")))
        }
    }

    fn check_range(what: &str, m: &dyn SyclMemory, byte_offset: usize, bytes: usize) -> Result<()> {
        let end = byte_offset
            .checked_add(bytes)
            .ok_or_else(|| Error::invalid_argument(format!("{what}: range overflows")))?;
        if end > m.len() {
            return Err(Error::size(what, end, m.len()));
        }
        Ok(())
    }

    /// Copies `src` into `dst` at `byte_offset` and waits.
    pub fn write<T: Pod, M: SyclMemory>(&self, dst: &mut M, byte_offset: usize, src: &[T]) -> Result<()> {
        let bytes = std::mem::size_of_val(src);
        self.same_context("Queue::write", dst)?;
        Self::check_range("Queue::write", dst, byte_offset, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is exclusively borrowed and has room for `bytes` at `byte_offset` (checked);
        // `src` is borrowed for the whole call and we wait before returning.
        unsafe {
            self.memcpy_raw(dst.as_mut_ptr().add(byte_offset), src.as_ptr().cast(), bytes)?;
        }
        self.wait()
    }

    /// Copies `dst.len()` elements from `src` at `byte_offset` into `dst` and waits.
    pub fn read<T: Pod, M: SyclMemory>(&self, src: &M, byte_offset: usize, dst: &mut [T]) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        self.same_context("Queue::read", src)?;
        Self::check_range("Queue::read", src, byte_offset, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is exclusively borrowed for the whole call and `src` has `bytes` at
        // `byte_offset` (checked); we wait before returning.
        unsafe {
            self.memcpy_raw(dst.as_mut_ptr().cast(), src.as_ptr().add(byte_offset), bytes)?;
        }
        self.wait()
    }

    /// Reads the whole of `src` as `T`s. `src.len()` must be a multiple of `size_of::<T>()`.
    pub fn read_to_vec<T: Pod, M: SyclMemory>(&self, src: &M) -> Result<Vec<T>> {
        let size = element_size_for_read::<T>("Queue::read_to_vec")?;
        if src.len() % size != 0 {
            return Err(Error::invalid_argument(format!(
                "Queue::read_to_vec: {} bytes are not a whole number of {}-byte elements",
                src.len(),
                size
            )));
        }
        let n = src.len() / size;
        self.same_context("Queue::read_to_vec", src)?;
        let mut out: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `T` is not zero-sized (checked), so the spare capacity is an allocation with room for
        // `n` `T`s = `src.len()` bytes, all of which the copy writes before `set_len` (we wait first);
        // every bit pattern is a valid `T` (`Pod`).
        unsafe {
            self.memcpy_raw(out.as_mut_ptr().cast(), src.as_ptr(), src.len())?;
            self.wait()?;
            out.set_len(n);
        }
        Ok(out)
    }

    /// Sets every byte of `dst` to `value` (`memset`) and waits.
    pub fn fill<M: SyclMemory>(&self, dst: &mut M, value: u8) -> Result<()> {
        self.same_context("Queue::fill", dst)?;
        let len = dst.len();
        // SAFETY: `dst` is exclusively borrowed and valid for its length; we wait before returning.
        unsafe { self.memset_raw(dst.as_mut_ptr(), value, len)? };
        self.wait()
    }

    /// Copies `len` bytes from `src` to `dst` (both in this queue's context) and waits.
    pub fn copy<S: SyclMemory, D: SyclMemory>(&self, src: &S, dst: &mut D, len: usize) -> Result<()> {
        self.same_context("Queue::copy (source)", src)?;
        self.same_context("Queue::copy (destination)", dst)?;
        Self::check_range("Queue::copy (source)", src, 0, len)?;
        Self::check_range("Queue::copy (destination)", dst, 0, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both ranges are in bounds (checked), `dst` is exclusively borrowed and so cannot be
        // `src`; we wait before returning.
        unsafe { self.memcpy_raw(dst.as_mut_ptr(), src.as_ptr(), len)? };
        self.wait()
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        if let Err(e) = bridge::queue_wait(&self.raw) {
            self.context.defer_error(Error::sycl(format!("queue.wait at drop: {}", e.what())));
        }
    }
}
