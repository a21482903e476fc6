//! [`SharedTensor`]: one buffer seen by SYCL (through the queue it remembers) and by the NPU (the
//! [`NpuTensor`] it binds as).

use std::fmt;
use std::mem::size_of_val;
use std::ptr::NonNull;
use std::sync::Arc;

use super::{shared_system_not_reached, StrategyKind};
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::npu::NpuTensor;
use crate::openvino::{BindableSealed, ElementType, InferRequest, RemoteTensor, Shape, TensorHandle, TensorUse};
use crate::sycl::{self, LentMemory, Pod, Queue, SyclMemory};

/// One buffer seen by SYCL and by the NPU: the SYCL memory (USM, exportable device memory, or for
/// `NpuToSycl` the plugin's host memory), the [`NpuTensor`] over it, and everything both need.
/// Its SYCL operations ask nothing of OpenVINO: the tensor's facts were fixed when it was made.
///
/// # SYCL side
/// [`write`](Self::write), [`read`](Self::read), [`read_to_vec`](Self::read_to_vec),
/// [`fill`](Self::fill), [`copy_from`](Self::copy_from) and [`copy_to`](Self::copy_to) are SYCL
/// `memcpy`/`memset`s on the tensor's own [`queue`](Self::queue) (the strategy's, or the one it
/// was made with) and wait. For the
/// zero-copy strategies [`sycl_mut`](Self::sycl_mut) gives a guard that is [`SyclMemory`], for
/// [`Queue::write`]/[`Queue::read`]/[`Queue::copy`]/[`Queue::fill`] and anything else that takes SYCL memory.
///
/// # NPU side
/// Bind it to an [`InferRequest`](crate::openvino::InferRequest) of a model compiled for the NPU
/// of the same Core (`request.set_input_tensor(0, &shared)`); the request holds its remote tensor. SYCL writes made after binding are seen by the
/// next inference without rebinding.
///
/// # Ownership
/// The remote tensor keeps the SYCL allocation alive (and closes a dma-buf fd once); the request
/// keeps the remote tensor. Dropping the `SharedTensor` before or after the request, the strategy,
/// the SYCL context, the NPU context or the Core is sound: the memory is freed once nothing uses it.
pub struct SharedTensor {
    tensor: NpuTensor,
    kind: StrategyKind,
    zero_copy: bool,
    /// The address SYCL uses: USM, a device pointer, or the plugin's host VA (`NpuToSycl`).
    ptr: NonNull<u8>,
    allocation_len: usize,
    queue: Arc<Queue>,
    /// `NpuExport`: the SYCL import of the NPU's dma-buf (the SYCL side of the memory).
    _imported: Option<sycl::ImportedMemory>,
}

// SAFETY: `ptr` is only an address of memory owned by the tensor's keep-alive (or by the plugin,
// through the tensor); it is used only by methods that hold the tensor's data-use state (so never
// concurrently with an inference or with a `&mut` access), through a queue that waits. The other
// fields are `Send + Sync` (`NpuTensor`, `Arc<Queue>`, `ImportedMemory`).
unsafe impl Send for SharedTensor {}
// SAFETY: see `Send`; `&self` methods only read through the queue under the tensor's read state.
unsafe impl Sync for SharedTensor {}

impl fmt::Debug for SharedTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedTensor")
            .field("kind", &self.kind)
            .field("sycl_ptr", &self.ptr)
            .field("allocation_len", &self.allocation_len)
            .field("tensor", &self.tensor)
            .finish()
    }
}

impl SharedTensor {
    /// A shared tensor over an NPU tensor imported from SYCL memory
    /// ([`NpuContext::import`](crate::npu::NpuContext::import) of a [`sycl::UsmBuffer`] or
    /// [`sycl::ExportableDeviceMemory`], or a [`NpuPool`](crate::pool::NpuPool) tensor over them),
    /// whose SYCL operations run on `queue`.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) when the tensor was not imported from
    /// SYCL memory, or its memory belongs to another SYCL context than the queue.
    pub fn new(queue: &Arc<Queue>, tensor: NpuTensor) -> Result<SharedTensor> {
        let kind = match tensor.sycl_origin().map(|o| o.kind) {
            Some(MemoryKind::SyclExportable) => StrategyKind::DmaBuf,
            _ => StrategyKind::CpuVa,
        };
        Self::over_sycl_memory(kind, queue, tensor)
    }

    /// `tensor`, imported from SYCL memory of `queue`'s context, reached by SYCL at that memory.
    pub(crate) fn over_sycl_memory(kind: StrategyKind, queue: &Arc<Queue>, tensor: NpuTensor) -> Result<SharedTensor> {
        let Some(origin) = tensor.sycl_origin().cloned() else {
            return Err(Error::invalid_argument(
                "SharedTensor::new: the tensor was not imported from SYCL memory (import a UsmBuffer or \
                 ExportableDeviceMemory with NpuContext::import)",
            ));
        };
        if !Arc::ptr_eq(&origin.context, queue.context()) {
            return Err(Error::invalid_argument(
                "SharedTensor::new: the tensor's SYCL memory belongs to another SYCL context than the queue",
            ));
        }
        let ptr = NonNull::new(origin.addr as *mut u8).expect("SYCL memory is never null");
        Ok(Self::over(kind, queue, tensor, true, ptr, origin.len))
    }

    /// The one constructor: `tensor` reached by SYCL at `ptr` (zero-copy or by copies).
    pub(crate) fn over(
        kind: StrategyKind,
        queue: &Arc<Queue>,
        tensor: NpuTensor,
        zero_copy: bool,
        ptr: NonNull<u8>,
        allocation_len: usize,
    ) -> SharedTensor {
        SharedTensor { tensor, kind, zero_copy, ptr, allocation_len, queue: Arc::clone(queue), _imported: None }
    }

    /// NPU memory (`tensor`) that SYCL reaches through `imported`, its import of the NPU's
    /// dma-buf: zero-copy, at the imported pointer.
    pub(crate) fn over_imported(
        kind: StrategyKind,
        queue: &Arc<Queue>,
        tensor: NpuTensor,
        mut imported: sycl::ImportedMemory,
    ) -> SharedTensor {
        let ptr = NonNull::new(imported.as_mut_ptr()).expect("an imported mapping is never null");
        let len = imported.len();
        SharedTensor { _imported: Some(imported), ..Self::over(kind, queue, tensor, true, ptr, len) }
    }

    /// Which strategy made it (for a tensor of the program's own SYCL memory: the strategy of that
    /// kind of memory, `CpuVa` for USM and `DmaBuf` for exportable device memory).
    pub fn kind(&self) -> StrategyKind {
        self.kind
    }

    /// Whether SYCL and the NPU use the same bytes: `false` for `NpuToSycl` (its SYCL operations
    /// are copies, and SYCL kernels cannot use the memory) and for `SharedSystem` on a SYCL device
    /// without shared-system USM (SYCL reaches the pages by copies there).
    pub fn is_zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The NPU tensor (the shared tensor binds as it). Clones share the tensor (and keep the
    /// memory alive).
    pub fn npu_tensor(&self) -> &NpuTensor {
        &self.tensor
    }

    /// The OpenVINO remote tensor under it.
    pub fn remote_tensor(&self) -> &RemoteTensor {
        self.tensor.remote()
    }

    /// The tensor's element type.
    pub fn element_type(&self) -> ElementType {
        self.tensor.element_type()
    }

    /// The tensor's shape.
    pub fn shape(&self) -> &Shape {
        self.tensor.shape()
    }

    /// The tensor's byte size: the range [`write`](Self::write)/[`read`](Self::read) address.
    pub fn byte_size(&self) -> usize {
        self.tensor.byte_size()
    }

    /// The size of the underlying SYCL allocation: the byte size rounded up to 4096 (0 for
    /// `NpuToSycl`, whose allocation belongs to the plugin).
    pub fn allocation_len(&self) -> usize {
        self.allocation_len
    }

    /// The SYCL context the memory belongs to.
    pub fn sycl_context(&self) -> &Arc<sycl::SyclContext> {
        self.queue.context()
    }

    /// The queue the tensor's SYCL operations run on.
    pub fn queue(&self) -> &Arc<Queue> {
        &self.queue
    }

    /// The address SYCL uses (a USM pointer of [`sycl_context`](Self::sycl_context), a device
    /// pointer for `DmaBuf`, the plugin's host memory for `NpuToSycl`), for passing to SYCL
    /// code elsewhere (C++ kernels). Valid while this tensor (or a clone of the remote tensor, or a
    /// request bound to it) lives. Using it bypasses the inference exclusion: do not touch the
    /// memory while an inference that uses the tensor runs.
    pub fn sycl_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Exclusive SYCL access: a guard that is [`SyclMemory`] of [`sycl_context`](Self::sycl_context),
    /// usable with [`Queue::write`], [`Queue::read`], [`Queue::copy`] and [`Queue::fill`]. No
    /// inference that uses the tensor can start while it lives.
    ///
    /// ```no_run
    /// # use npu_sycl_bridge::strategy::SharedTensor;
    /// # use npu_sycl_bridge::sycl::UsmBuffer;
    /// # fn f(t: &mut SharedTensor, staging: &UsmBuffer) -> npu_sycl_bridge::Result<()> {
    /// let queue = t.queue().clone();
    /// let mut access = t.sycl_mut()?;
    /// queue.copy(staging, &mut access, 4096)?; // SYCL device copy straight into the NPU's input
    /// # Ok(()) }
    /// ```
    ///
    /// The guard borrows the tensor, so the tensor cannot go away (or be written another way) while
    /// SYCL has the memory:
    /// ```compile_fail
    /// # use npu_sycl_bridge::strategy::SharedTensor;
    /// # fn f(mut t: SharedTensor) -> npu_sycl_bridge::Result<()> {
    /// let access = t.sycl_mut()?;
    /// drop(t);
    /// drop(access);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Unsupported { path: NpuToSyclZeroCopy, reason: NotSyclMemory }`](crate::ErrorKind::Unsupported) for `NpuToSycl`
    /// tensors (the memory is not SYCL memory; use [`copy_from`](Self::copy_from) /
    /// [`copy_to`](Self::copy_to)); [`Busy`](crate::ErrorKind::Busy) while an
    /// inference uses the tensor or a view of it is alive.
    pub fn sycl_mut(&mut self) -> Result<LentMemory<'_>> {
        if !self.is_zero_copy() {
            return Err(match self.kind {
                StrategyKind::SharedSystem => shared_system_not_reached(),
                _ => super::not_sycl_memory(),
            });
        }
        let using = self.tensor.begin_use(true)?;
        // SAFETY: `ptr` is SYCL memory of the queue's context (zero-copy strategies only, checked
        // above) of at least the tensor's byte size, kept alive by the tensor that `using` borrows;
        // `using` is the tensor's write state, which keeps inferences and views away while held.
        Ok(unsafe { LentMemory::new(self.ptr, self.tensor.byte_size(), self.queue.context(), using) })
    }

    fn check_range(&self, what: &str, byte_offset: usize, bytes: usize) -> Result<()> {
        let end = byte_offset
            .checked_add(bytes)
            .ok_or_else(|| Error::invalid_argument(format!("SharedTensor::{what}: range overflows")))?;
        if end > self.byte_size() {
            return Err(Error::size(format!("SharedTensor::{what} ({} tensor)", self.kind), end, self.byte_size()));
        }
        Ok(())
    }

    /// Copies `data` into the tensor at `byte_offset` with a SYCL `memcpy` and waits.
    /// For the zero-copy strategies this writes the very bytes the NPU reads.
    ///
    /// # Errors
    /// [`Size`](crate::ErrorKind::Size) past the tensor's end; [`Busy`](crate::ErrorKind::Busy)
    /// while an inference uses the tensor; SYCL errors.
    pub fn write<T: Pod>(&mut self, byte_offset: usize, data: &[T]) -> Result<()> {
        let bytes = size_of_val(data);
        self.check_range("write", byte_offset, bytes)?;
        let _using = self.tensor.begin_use(true)?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the destination is the tensor's memory, valid for `byte_size ≥ byte_offset + bytes`
        // (checked) while the tensor lives; the write view excludes inferences and other views for
        // the duration; `data` is borrowed for the call and we wait before returning.
        unsafe { self.queue.memcpy_raw(self.ptr.as_ptr().add(byte_offset), data.as_ptr().cast(), bytes)? };
        self.queue.wait()
    }

    /// Submits a SYCL `memcpy` of `data` into the tensor at `byte_offset` and returns without
    /// waiting, so the program can do other work (an inference on another tensor) meanwhile. The
    /// returned [`PendingSycl`] keeps the tensor and `data` borrowed and holds the tensor's data-use
    /// state: no inference can use the tensor until it is waited for (an inference bound to it
    /// fails with [`Busy`](crate::ErrorKind::Busy)), so the NPU never reads
    /// memory a pending SYCL write still changes. Dropping it waits.
    ///
    /// # Errors
    /// As [`write`](Self::write), for the submission; the copy's own errors come from
    /// [`PendingSycl::wait`].
    pub fn write_async<'a, T: Pod>(&'a mut self, byte_offset: usize, data: &'a [T]) -> Result<PendingSycl<'a>> {
        let bytes = size_of_val(data);
        self.check_range("write_async", byte_offset, bytes)?;
        let using = self.tensor.begin_use(true)?;
        let queue = &*self.queue;
        if bytes > 0 {
            // SAFETY: the destination is the tensor's memory, valid for the checked range while the
            // tensor lives; the write view (held by the result) excludes inferences and other views
            // until the copy was waited for; `data` stays borrowed by the result until then.
            unsafe { queue.memcpy_raw(self.ptr.as_ptr().add(byte_offset), data.as_ptr().cast(), bytes)? };
        }
        Ok(PendingSycl { queue, _using: using, waited: false })
    }

    /// Submits a SYCL `memcpy` of the tensor's bytes at `byte_offset` into `out` and returns without
    /// waiting; `out` holds the data once [`PendingSycl::wait`] returned. See
    /// [`write_async`](Self::write_async): the tensor cannot be written by an inference meanwhile.
    pub fn read_async<'a, T: Pod>(&'a self, byte_offset: usize, out: &'a mut [T]) -> Result<PendingSycl<'a>> {
        let bytes = size_of_val(out);
        self.check_range("read_async", byte_offset, bytes)?;
        let using = self.tensor.begin_use(false)?;
        if bytes > 0 {
            // SAFETY: the source is the tensor's memory under the read view (held by the result,
            // which excludes inferences until the copy was waited for); `out` stays exclusively
            // borrowed by the result until then.
            unsafe { self.queue.memcpy_raw(out.as_mut_ptr().cast(), self.ptr.as_ptr().add(byte_offset), bytes)? };
        }
        Ok(PendingSycl { queue: &self.queue, _using: using, waited: false })
    }

    /// Copies `out.len()` elements from the tensor at `byte_offset` into `out` with a SYCL
    /// `memcpy` and waits.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn read<T: Pod>(&self, byte_offset: usize, out: &mut [T]) -> Result<()> {
        let bytes = size_of_val(out);
        self.check_range("read", byte_offset, bytes)?;
        let _using = self.tensor.begin_use(false)?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the source is the tensor's memory, valid for the checked range; the read view
        // excludes inferences and writers; `out` is exclusively borrowed and we wait.
        unsafe { self.queue.memcpy_raw(out.as_mut_ptr().cast(), self.ptr.as_ptr().add(byte_offset), bytes)? };
        self.queue.wait()
    }

    /// The whole tensor as `T`s, read with a SYCL `memcpy`. The byte size must be a
    /// multiple of `size_of::<T>()`.
    pub fn read_to_vec<T: Pod>(&self) -> Result<Vec<T>> {
        let size = sycl::element_size_for_read::<T>("SharedTensor::read_to_vec")?;
        if self.byte_size() % size != 0 {
            return Err(Error::invalid_argument(format!(
                "SharedTensor::read_to_vec: {} bytes are not a whole number of {size}-byte elements",
                self.byte_size()
            )));
        }
        let mut out: Vec<T> = Vec::with_capacity(self.byte_size() / size);
        let _using = self.tensor.begin_use(false)?;
        // SAFETY: `T` is not zero-sized (checked), so the spare capacity is an allocation of
        // `byte_size` bytes, all written by the copy before `set_len` (we wait first); every bit
        // pattern is a valid `T` (`Pod`); the source is the tensor's memory under the read view.
        unsafe {
            self.queue.memcpy_raw(out.as_mut_ptr().cast(), self.ptr.as_ptr(), self.byte_size())?;
            self.queue.wait()?;
            out.set_len(self.byte_size() / size);
        }
        Ok(out)
    }

    /// Sets every byte of the tensor to `value` with a SYCL `memset` and waits.
    pub fn fill(&mut self, value: u8) -> Result<()> {
        let _using = self.tensor.begin_use(true)?;
        // SAFETY: the tensor's memory, valid for `byte_size`, under the write view; we wait.
        unsafe { self.queue.memset_raw(self.ptr.as_ptr(), value, self.byte_size())? };
        self.queue.wait()
    }

    /// Copies the first `len` bytes of the SYCL memory `src` (of the tensor's SYCL context) into the
    /// tensor and waits. For `NpuToSycl` this is the transfer that makes SYCL results visible
    /// to the NPU (a copy); for the zero-copy strategies it is an ordinary device copy.
    pub fn copy_from<M: SyclMemory>(&mut self, src: &M, len: usize) -> Result<()> {
        let queue = &*self.queue;
        check_memory("copy_from (source)", queue, src, len)?;
        self.check_range("copy_from", 0, len)?;
        let _using = self.tensor.begin_use(true)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: `src` holds `len` bytes (checked) and is borrowed for the call; the destination
        // is the tensor's memory under the write view; they cannot overlap (the tensor's memory is
        // not `src`'s allocation: `src` is borrowed while we hold the tensor mutably); we wait.
        unsafe { queue.memcpy_raw(self.ptr.as_ptr(), src.as_ptr(), len)? };
        queue.wait()
    }

    /// Copies the first `len` bytes of the tensor into the SYCL memory `dst` and waits. For
    /// `NpuToSycl` this is how NPU results reach SYCL kernels (a copy).
    pub fn copy_to<M: SyclMemory>(&self, dst: &mut M, len: usize) -> Result<()> {
        let queue = &*self.queue;
        check_memory("copy_to (destination)", queue, dst, len)?;
        self.check_range("copy_to", 0, len)?;
        let _using = self.tensor.begin_use(false)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is exclusively borrowed and holds `len` bytes; the source is the tensor's
        // memory under the read view; we wait.
        unsafe { queue.memcpy_raw(dst.as_mut_ptr(), self.ptr.as_ptr(), len)? };
        queue.wait()
    }
}

/// A SYCL copy into or out of a [`SharedTensor`] that was submitted and not yet waited for
/// ([`SharedTensor::write_async`], [`SharedTensor::read_async`]). While it lives the tensor is
/// borrowed and no inference can use it. [`wait`](Self::wait) returns the copy's errors; dropping it
/// waits too (an error is then kept by the SYCL context and returned by its next call).
#[must_use = "the copy is waited for when this is dropped; call wait() to see its errors"]
pub struct PendingSycl<'a> {
    queue: &'a Queue,
    /// The tensor's data-use state, held until the copy was waited for.
    _using: TensorUse<'a>,
    waited: bool,
}

impl PendingSycl<'_> {
    /// Waits for the copy (and everything submitted before it on the tensor's in-order queue).
    pub fn wait(mut self) -> Result<()> {
        self.waited = true;
        self.queue.wait()
    }

    /// Waits for the copy, then starts `request`'s inference (which may use the tensor now): the
    /// inference starts only after the SYCL write it depends on has finished.
    pub fn then_start(self, request: &mut InferRequest) -> Result<()> {
        self.wait()?;
        request.start_async()
    }
}

impl Drop for PendingSycl<'_> {
    fn drop(&mut self) {
        if !self.waited {
            if let Err(e) = self.queue.wait() {
                self.queue.context().defer_error(e);
            }
        }
    }
}

impl fmt::Debug for PendingSycl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingSycl").field("waited", &self.waited).finish()
    }
}

fn check_memory(what: &str, queue: &Queue, m: &dyn SyclMemory, len: usize) -> Result<()> {
    if !Arc::ptr_eq(m.context(), queue.context()) {
        return Err(Error::invalid_argument(format!(
            "SharedTensor::{what}: the memory belongs to another SYCL context than the tensor's"
        )));
    }
    if len > m.len() {
        return Err(Error::size(format!("SharedTensor::{what}"), len, m.len()));
    }
    Ok(())
}

impl BindableSealed for SharedTensor {
    fn handle(&self) -> &Arc<TensorHandle> {
        self.tensor.handle()
    }
}
impl crate::openvino::Bindable for SharedTensor {}
