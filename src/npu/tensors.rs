//! The NPU memory paths: L0 host tensors, CPU_VA, dma-buf (SHARED_BUF), and host views of them.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use super::buffer::PAGE_SIZE;
use super::imports::{self, DmaBufClaim};
use super::NpuContext;
use crate::error::{Aligned, Error, ErrorKind, Path, Result};
use crate::level_zero::{L0Allocation, MemoryKind};
use crate::memory::{DmaBufFd, NpuMemory, Region};
use crate::openvino::{
    Element, ElementType, KeepAlive, MemType, RemoteTensor, Shape, TensorBytes, TensorBytesMut, TensorData,
    TensorDataMut, TensorType,
};

/// The byte size of a tensor of `element_type` and `shape`, rejecting element types without a
/// fixed size and empty shapes.
pub(crate) fn tensor_bytes(element_type: ElementType, shape: &Shape) -> Result<usize> {
    if element_type.bits() == 0 {
        return Err(Error::element_type(format!(
            "a tensor over shared memory needs a fixed-size element type, not {element_type}"
        )));
    }
    let elements = shape
        .dims()
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::shape(format!("shape {shape} has too many elements")))?;
    if elements == 0 {
        return Err(Error::shape(format!("shape {shape} has no elements; the NPU needs a non-empty tensor")));
    }
    element_type.checked_byte_size(elements).ok_or_else(|| Error::shape(format!("shape {shape} is too large")))
}

impl NpuContext {
    /// **L0 host tensor** (`MEM_TYPE=L0_INTERNAL_BUF`): memory the NPU plugin allocates with
    /// `zeMemAllocHost` (rounded up to 4 KiB) and frees when the tensor is dropped. The tensor owns
    /// the allocation, so it cannot outlive it.
    ///
    /// `tensor_type` decides the CPU caching:
    /// - [`TensorType::Input`]: **write-combined** memory. Fast for the CPU to write (stream the
    ///   input in), very slow for the CPU to read. Treat it as write-only.
    /// - [`TensorType::Output`] / [`TensorType::Binded`]: ordinary cached host memory; use these
    ///   for anything the CPU reads back (outputs).
    ///
    /// The memory is host-visible: read and write it with
    /// [`RemoteTensor::host_data`] / [`RemoteTensor::host_data_mut`] (through the VA OpenVINO
    /// reports as `MEM_HANDLE`). This is the "already resident" floor: binding it never copies.
    pub fn l0_host_tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<RemoteTensor> {
        let shape = shape.into();
        tensor_bytes(element_type, &shape)?;
        let t = self.remote_context().create_l0_host_tensor(element_type, shape, tensor_type)?;
        // The MEM_HANDLE must be an allocation of the plugin's context; check it once so that the
        // host views below rest on a verified fact.
        let va = t.params()?.mem_handle;
        let info = self.level_zero_context().memory_properties(va)?;
        if !info.kind.is_host_accessible() {
            return Err(Error::invalid_argument(format!(
                "the NPU plugin's L0 host tensor memory {va:p} is {:?} memory, not host memory",
                info.kind
            )));
        }
        Ok(t)
    }

    /// **The one way to hand memory to the NPU**: imports `memory` (any [`NpuMemory`]: a
    /// [`PageAlignedBuffer`](super::PageAlignedBuffer), a dma-buf [`OwnedFd`](std::os::fd::OwnedFd), a [`L0Allocation`](crate::level_zero::L0Allocation),
    /// SYCL USM or exportable device memory, or `unsafe` [`RawMemory`](crate::memory::RawMemory))
    /// as a remote tensor of `element_type` and `shape`, zero-copy. The tensor takes the memory and
    /// keeps it alive until OpenVINO freed the tensor and every request that bound it let go of it;
    /// an fd is closed exactly once after that. How each kind is imported, and which have host
    /// views, is in [the `memory` module](crate::memory).
    ///
    /// Import rules, checked here before OpenVINO is called:
    /// - **CPU_VA** (host memory): the address and the tensor's byte size are multiples of 4096,
    ///   and the driver imports system memory (NPU 40xx+ with the kernel's userptr import). Memory
    ///   that already is an allocation of the NPU's context is not imported again: the plugin
    ///   reuses it from its **start**, so a pointer inside one is refused. A tensor made with
    ///   [`TensorType::Input`] is imported read-only ([`RemoteTensor::is_read_only_for_device`]).
    /// - **SHARED_BUF** (dma-buf): the driver lists `DMA_BUF` among its import types and the buffer
    ///   holds the tensor. A buffer this context has imported already (through any fd) is not
    ///   imported again (the driver would share one buffer object between the imports): the new
    ///   tensor uses the first import's mapping and keeps it alive.
    ///
    /// # Errors
    /// [`Alignment`](ErrorKind::Alignment), [`Size`](ErrorKind::Size),
    /// [`Unsupported`](ErrorKind::Unsupported) naming the path and what works instead,
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for an fd that is not open (it is not
    /// closed: it was not open). On error the memory is released as if dropped.
    pub fn import<M: NpuMemory>(
        &self,
        memory: M,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<RemoteTensor> {
        if let Err(e) = memory.check() {
            memory.discard();
            return Err(e);
        }
        self.import_shared(Arc::new(memory), element_type, shape.into(), tensor_type)
    }

    /// [`import`](Self::import) of memory that stays shared with its other owners (a pool keeps
    /// the memory to import it again): the tensor holds a clone of the `Arc`.
    pub(crate) fn import_shared<M: NpuMemory>(
        &self,
        memory: Arc<M>,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
    ) -> Result<RemoteTensor> {
        if memory.level_zero_context() == Some(self.level_zero_context().as_raw() as usize) {
            return Err(Error::unsupported(
                Path::CpuVa,
                "the allocation belongs to the NPU plugin's own Level Zero context",
            )
            .explain(
                "OpenVINO's NPU plugin does not import memory of its own context: it reuses only allocations it \
                     made itself (L0 host tensors, its earlier imports) and refuses others. Use \
                     NpuContext::l0_host_tensor for memory of the plugin's context, or allocate in a GPU context and \
                     export a dma-buf",
            ));
        }
        let region = memory.region()?;
        let exclusive = memory.exclusive();
        let owner: KeepAlive = memory.clone();
        let mut tensor = match region {
            Region::Host { ptr, len } => {
                // SAFETY: `ptr` is `len` bytes of memory owned by `owner` (each NpuMemory kind
                // guarantees it: an owned mapping or allocation, or RawMemory's contract), which the
                // tensor keeps alive; the memory was moved into `owner`, so it is reached only
                // through the tensor's checked views (or, for non-exclusive kinds, not at all).
                unsafe { self.import_host(ptr.as_ptr().cast(), len, Some(owner), element_type, shape, tensor_type) }
                    .map_err(|e| match memory.memory_kind() {
                        kind @ crate::memory::MemoryKind::LevelZero(_)
                            if matches!(e.kind(), ErrorKind::OpenVino { .. }) =>
                        {
                            gpu_usm_not_pinnable(kind, e)
                        }
                        #[cfg(feature = "sycl")]
                        kind @ crate::memory::MemoryKind::SyclUsm(_)
                            if matches!(e.kind(), ErrorKind::OpenVino { .. }) =>
                        {
                            gpu_usm_not_pinnable(kind, e)
                        }
                        _ => e,
                    })?
            }
            Region::DmaBuf { fd, len } => {
                self.import_dma_buf(fd, len, element_type, shape, tensor_type, vec![owner], exclusive)?
            }
        };
        if !exclusive {
            tensor.exclusive_memory = false;
        }
        #[cfg(feature = "sycl")]
        {
            tensor.sycl_origin = memory.sycl().map(|(ptr, context)| crate::memory::SyclOrigin {
                addr: ptr.as_ptr() as usize,
                context,
                kind: memory.memory_kind(),
                len: memory.byte_len(),
            });
        }
        Ok(tensor)
    }

    /// **CPU_VA** tensor over `ptr` and `byte_len` (the memory available from `ptr`).
    /// `keepalive` is stored in the tensor and dropped only after OpenVINO freed the tensor and
    /// every request that bound it let go of it.
    ///
    /// A pointer that is the **start** of an allocation of the NPU's Level Zero context (an L0
    /// host tensor's VA, an earlier import) is not imported again: the plugin reuses that
    /// allocation (no alignment rule; the tensor must fit in it). A pointer *inside* such an
    /// allocation is refused: the plugin would use the allocation's start instead (measured), i.e.
    /// the wrong bytes. Any other `ptr` and the tensor's byte size must be multiples of 4096.
    ///
    /// # Safety
    /// - `ptr` is valid for reads and writes of `byte_len` bytes, and stays valid until
    ///   `keepalive` is dropped (or, with `None`, until the tensor, its clones and every request
    ///   that bound it are dropped);
    /// - nothing else accesses the memory while an inference using the tensor runs, no Rust
    ///   reference to it is alive while the tensor's host views or the device write it, and nothing
    ///   else writes it while a host view of the tensor ([`RemoteTensor::host_data`] and friends) is
    ///   alive.
    pub(crate) unsafe fn import_host(
        &self,
        ptr: *mut c_void,
        byte_len: usize,
        keepalive: Option<KeepAlive>,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
    ) -> Result<RemoteTensor> {
        let needed = tensor_bytes(element_type, &shape)?;
        if ptr.is_null() {
            return Err(Error::invalid_argument("CPU_VA: the pointer is null"));
        }
        if needed > byte_len {
            return Err(Error::size(format!("CPU_VA {element_type} tensor of shape {shape}"), needed, byte_len));
        }
        let l0 = self.level_zero_context();
        let context = l0.as_raw() as usize;
        let known = l0.memory_properties(ptr)?;
        let imports = known.kind == MemoryKind::Unknown;
        if !imports {
            // Already an allocation (or import) of the plugin's context: the plugin does not import
            // it again but reuses the allocation found by its id, at the allocation's START
            // (measured with 2026.4.1: the tensor's MEM_HANDLE is the base, and the graph reads
            // from there). An interior pointer would silently give the wrong bytes. Only ids are
            // compared: the driver's address ranges are NPU addresses, not CPU pointers.
            let start = ptr as usize;
            if start > 0 && l0.memory_properties((start - 1) as *const c_void)?.id == known.id {
                return Err(Error::unsupported(
                    Path::CpuVa,
                    format!(
                        "{ptr:p} lies inside (not at the start of) an existing allocation of the NPU context ({:?}, id {})",
                        known.kind, known.id
                    ),
                )
                .explain(
                    "OpenVINO's NPU plugin reuses such an allocation from its start and would silently use other \
                     bytes. Pass the allocation's start, or use a separate page-aligned buffer",
                ));
            }
            // The size is the driver's allocation size (the base it reports is an NPU address).
            let (_, size) = l0.address_range(ptr)?;
            if needed > size {
                return Err(Error::size(
                    format!("CPU_VA {element_type} tensor of shape {shape} inside an existing NPU allocation"),
                    needed,
                    size,
                ));
            }
        } else {
            if !self.capabilities().sysmem_import {
                return Err(Error::unsupported(Path::CpuVa, "the NPU driver cannot import system memory").explain(
                    format!(
                        "its import types {:?} lack STANDARD_ALLOCATION: NPU 37xx (Meteor/Arrow Lake), or a kernel \
                         without the userptr ioctl. Use a dma-buf tensor (zero-copy; from SYCL: DmaBuf), an L0 host \
                         tensor, or a plain tensor (copied) instead",
                        self.capabilities().import_types
                    ),
                ));
            }
            if ptr as usize % PAGE_SIZE != 0 {
                return Err(Error::alignment(Aligned::CpuVaPointer, PAGE_SIZE, ptr as usize));
            }
            if needed % PAGE_SIZE != 0 {
                return Err(Error::alignment(Aligned::CpuVaByteSize, PAGE_SIZE, needed));
            }
        }
        // The plugin imports an INPUT tensor with the write-combined flag, which the NPU driver turns
        // into a read-only buffer object (linux-npu-driver `umd/level_zero_driver/source/memory.cpp`
        // `Context::importUserPtr`); a reused allocation keeps whatever its import was.
        let read_only =
            if imports { tensor_type == TensorType::Input } else { imports::is_read_only(context, known.id) };
        // SAFETY: the caller guarantees ptr is valid for byte_len ≥ needed bytes until keepalive
        // is dropped; alignment and size were checked above (or the pointer lies in an allocation
        // of the plugin's context, which the plugin bounds-checks); the tensor holds keepalive.
        // Held across the call: if the plugin fails after its import succeeded, the pages must stay
        // mapped until that orphaned import is released below.
        let hold = keepalive.clone();
        // An import's pages are released only once the driver let go of them (ImportedPages).
        let keep: Vec<KeepAlive> = match keepalive {
            Some(owner) if imports => {
                vec![Arc::new(ImportedPages { context: Arc::clone(l0), ptr: ptr as usize, owner: Some(owner) })]
            }
            other => other.into_iter().collect(),
        };
        let tensor = unsafe {
            self.remote_context().create_tensor_raw(
                element_type,
                shape,
                MemType::CpuVa,
                Some(ptr),
                Some(tensor_type),
                keep,
            )
        }
        .map_err(|e| if imports { self.release_orphaned_import(ptr, e) } else { e })?;
        drop(hold);
        if read_only {
            tensor.handle.mark_read_only_for_device();
            if imports {
                imports::record_read_only(context, l0.memory_properties(ptr)?.id, &tensor.handle);
            }
        }
        Ok(tensor)
    }

    /// After a failed CPU_VA tensor over memory the NPU did not know: the NPU plugin throws without
    /// freeing its import when the first query of the fresh import fails (seen by
    /// `tests/fault_sweep.rs`), which would leave the driver mapping (pinning, on hardware) pages the
    /// caller frees, and make every later import at that address look like a reuse. Such an import
    /// is nobody's now: release it.
    fn release_orphaned_import(&self, ptr: *mut c_void, cause: Error) -> Error {
        let l0 = self.level_zero_context();
        let Ok(info) = l0.memory_properties(ptr) else { return cause };
        if info.kind == MemoryKind::Unknown {
            return cause;
        }
        let Ok((_, size)) = l0.address_range(ptr) else { return cause };
        // SAFETY: `ptr` starts an allocation of the plugin's context (the driver says so) that no
        // tensor owns: the only tensor that could have owned it failed to be made, and the memory
        // was unknown to the context before. It is freed once, here (dropping the allocation).
        match unsafe { L0Allocation::from_raw(Arc::clone(l0), ptr, size, info.kind, None) } {
            Ok(orphan) => {
                drop(orphan);
                cause.context("the NPU plugin failed after importing the memory; its import was released")
            }
            Err(_) => cause,
        }
    }

    /// The one dma-buf import: checks, then imports the buffer once per NPU context. `memory` is
    /// the buffer's owner (kept after the fd closes); `exclusive` says the tensor is the memory's
    /// only way in (so host views are allowed), which a buffer imported already cannot be.
    /// `byte_len` limits the bytes used (the buffer's own size limits them too).
    #[allow(clippy::too_many_arguments)]
    fn import_dma_buf(
        &self,
        fd: DmaBufFd,
        byte_len: usize,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
        memory: Vec<KeepAlive>,
        exclusive: bool,
    ) -> Result<RemoteTensor> {
        let needed = tensor_bytes(element_type, &shape)?;
        if !self.capabilities().fd_import {
            return Err(Error::unsupported(Path::DmaBuf, "the NPU driver cannot import dma-buf fds").explain(format!(
                "its import types {:?} lack DMA_BUF; use CPU_VA or an L0 host tensor",
                self.capabilities().import_types
            )));
        }
        if needed > byte_len {
            return Err(Error::size(
                format!("dma-buf {element_type} tensor of shape {shape} (byte_len)"),
                needed,
                byte_len,
            ));
        }
        let raw = fd.raw();
        let (available, buffer) = fd_buffer(raw)?;
        if needed > available {
            return Err(Error::size(
                format!("dma-buf {element_type} tensor of shape {shape} (the buffer behind fd {raw})"),
                needed,
                available,
            ));
        }
        let context = self.level_zero_context().as_raw() as usize;
        match imports::claim_dma_buf(context, buffer) {
            DmaBufClaim::Reuse(live) => {
                if exclusive {
                    return Err(Error::invalid_argument(format!(
                        "the dma-buf behind fd {raw} is already imported into this NPU context, so a tensor over it \
                         cannot be the memory's only way in"
                    )));
                }
                // The buffer is imported already: a second import would share the driver's buffer
                // object, and the first free would break the other. Use the first import's
                // mapping (the plugin reuses an allocation of its context found at its start).
                let mut keep: Vec<KeepAlive> = vec![live.owner];
                keep.extend(fd.into_keepalive());
                keep.extend(memory);
                let owner: KeepAlive = Arc::new(keep);
                // SAFETY: live.va is the driver's mapping of the whole buffer (live.len bytes),
                // valid while the first import lives, which `owner` keeps alive; host views are
                // disabled below, and the caller's other accesses go through the exporter.
                let mut tensor =
                    unsafe { self.import_host(live.va, live.len, Some(owner), element_type, shape, tensor_type) }?;
                tensor.exclusive_memory = false;
                Ok(tensor)
            }
            DmaBufClaim::Import(record) => {
                // Dropped in this order after OpenVINO freed the tensor: a fresh export's fd
                // closes, the claim is released, then the memory's owner goes (and its own fd).
                let mut keep: Vec<KeepAlive> = fd.into_keepalive().into_iter().collect();
                keep.push(record.clone());
                keep.extend(memory);
                // SAFETY: `raw` is an open fd whose buffer holds at least the tensor's byte size
                // (checked); it is kept open by the tensor until OpenVINO freed the tensor and every
                // request let go of it, and then closed once. If the call fails, the keep-alives are
                // dropped (the fd closed) before this returns. Host views are allowed only when the
                // caller says the tensor is the memory's only way in.
                let mut tensor = unsafe {
                    self.remote_context().create_tensor_raw(
                        element_type,
                        shape,
                        MemType::SharedBuf,
                        Some(MemType::fd_handle(raw)),
                        Some(tensor_type),
                        keep,
                    )
                }?;
                record.publish(&tensor.handle, tensor.params()?.mem_handle, available);
                tensor.exclusive_memory = exclusive;
                Ok(tensor)
            }
        }
    }
}

/// The NPU driver refused to import GPU-driver USM (SYCL or Level Zero host/shared memory of a GPU
/// context). On Intel laptops compute-runtime backs that memory with a CPU mapping of GPU buffer
/// objects (`drm_memory_manager.cpp` `createAllocWithAlignment`, mmap of the DRM fd), which the
/// NPU's kernel driver cannot pin (`pin_user_pages(FOLL_LONGTERM)` refuses `VM_PFNMAP|VM_IO`).
fn gpu_usm_not_pinnable(kind: crate::memory::MemoryKind, cause: Error) -> Error {
    Error::unsupported(Path::CpuVa, format!("the NPU driver could not import this {kind:?} memory as system memory"))
        .explain(
            "Intel's GPU driver maps host and shared USM from GPU buffer objects, which the NPU's kernel driver \
             cannot pin. Zero-copy works with GPU memory handed over as a dma-buf (SYCL exportable device memory, \
             a Level Zero exportable allocation: the dma-buf strategy, StrategyKind::DmaBuf, what Auto picks); CPU_VA works with ordinary \
             page-aligned process memory (PageAlignedBuffer, the SharedSystem strategy) that SYCL copies into",
        )
        .with_source(cause)
}

/// The owner of pages the NPU imported (CPU_VA), dropped with the tensor after OpenVINO freed it.
/// If the driver still maps the pages then (its `zeMemFree` of the import failed), they are kept:
/// unmapping them would leave the NPU with pinned pages of freed memory, and a later buffer at the
/// same address would look like that stale import. A leak, never a use-after-free.
struct ImportedPages {
    context: Arc<crate::level_zero::Context>,
    ptr: usize,
    owner: Option<KeepAlive>,
}

impl Drop for ImportedPages {
    fn drop(&mut self) {
        let still_imported = self
            .context
            .memory_properties(self.ptr as *const c_void)
            .is_ok_and(|info| info.kind != MemoryKind::Unknown);
        if still_imported {
            std::mem::forget(self.owner.take());
        }
    }
}

impl DmaBufFd {
    fn raw(&self) -> RawFd {
        match self {
            DmaBufFd::Owned(fd) => fd.as_raw_fd(),
            DmaBufFd::Borrowed(raw) => *raw,
        }
    }

    /// What the tensor must keep to keep the fd open: a fresh export's fd (a borrowed fd is kept
    /// open by the memory, which the tensor keeps anyway).
    fn into_keepalive(self) -> Option<KeepAlive> {
        match self {
            DmaBufFd::Owned(fd) => Some(Arc::new(fd)),
            DmaBufFd::Borrowed(_) => None,
        }
    }
}

/// `Ok` when `fd` refers to an open file (fstat succeeds).
pub(crate) fn check_open(fd: RawFd) -> Result<()> {
    // SAFETY: a zeroed stat is a valid output buffer; fstat only writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on any integer is safe; it fails with EBADF for a number that is not open.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let err = std::io::Error::last_os_error();
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "dma-buf fd {fd} is not an open file descriptor ({err}); pass an fd exported by the GPU \
                 (e.g. L0Allocation::export_dma_buf) and keep it open until it is handed over"
            ),
        )
        .with_source(err));
    }
    Ok(())
}

/// The size of the buffer behind `fd` and its identity (device, inode): `fstat`'s size (memfds,
/// files) or, for real dma-bufs (whose `st_size` is 0), `lseek(SEEK_END)`; the file offset is restored.
pub(crate) fn fd_buffer(raw: RawFd) -> Result<(usize, (u64, u64))> {
    // SAFETY: as in check_open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st` only.
    if unsafe { libc::fstat(raw, &mut st) } != 0 {
        return Err(Error::io(format!("fstat of dma-buf fd {raw}"), std::io::Error::last_os_error()));
    }
    let mut size = usize::try_from(st.st_size).unwrap_or(0);
    if size == 0 {
        // SAFETY: lseek on an open fd; the old offset is restored right after.
        let cur = unsafe { libc::lseek(raw, 0, libc::SEEK_CUR) };
        if cur >= 0 {
            // SAFETY: as above.
            let end = unsafe { libc::lseek(raw, 0, libc::SEEK_END) };
            // SAFETY: restores the offset read above.
            unsafe { libc::lseek(raw, cur, libc::SEEK_SET) };
            if end > 0 {
                size = end as usize;
            }
        }
    }
    Ok((size, (st.st_dev, st.st_ino)))
}

impl RemoteTensor {
    /// A read view of an **NPU** remote tensor's memory as `T` elements, through the virtual
    /// address OpenVINO reports as `MEM_HANDLE` (L0 host memory, the CPU_VA pages, or the host
    /// mapping of an imported dma-buf: host-visible in every case).
    ///
    /// Only for tensors whose memory is reached through the tensor alone: L0 host tensors, CPU_VA
    /// tensors over a moved-in [`PageAlignedBuffer`](super::PageAlignedBuffer), the strategies' shared tensors. A tensor from
    /// [`NpuContext::import`] of a caller's dma-buf fd has none: its exporter can write the pages under the view.
    ///
    /// Like [`Tensor::data`](crate::openvino::Tensor::data): the view cannot be taken while an
    /// inference that uses the tensor runs, and no inference can start while it lives. The tensor
    /// owns (or keeps alive) the memory, so the view cannot outlive it.
    ///
    /// Reading an [`TensorType::Input`] L0 host tensor works but is very slow on real hardware
    /// (write-combined memory).
    ///
    /// # Errors
    /// [`Unsupported { path: Path::HostView }`](ErrorKind::Unsupported) for tensors of other devices
    /// and for dma-buf tensors made from a caller's fd; [`ElementType`](ErrorKind::ElementType)
    /// when `T` does not match; usage errors as above.
    pub fn host_data<T: Element>(&self) -> Result<TensorData<'_, T>> {
        let va = self.npu_host_va()?;
        // SAFETY: va is the host-visible memory of this NPU tensor, valid for its byte size while
        // the tensor (which owns or keeps alive the memory) lives.
        unsafe { self.handle.data_at::<T>(va, false) }
    }

    /// A read view of the raw bytes, whatever the element type; see [`host_data`](Self::host_data).
    pub fn host_bytes(&self) -> Result<TensorBytes<'_>> {
        let va = self.npu_host_va()?;
        // SAFETY: as in host_data.
        unsafe { self.handle.data_at::<u8>(va, true) }
    }

    /// A write view of the raw bytes; see [`host_data_mut`](Self::host_data_mut).
    pub fn host_bytes_mut(&mut self) -> Result<TensorBytesMut<'_>> {
        let va = self.npu_host_va()?;
        // SAFETY: as in host_data_mut.
        unsafe { self.handle.data_mut_at::<u8>(va, true) }
    }

    /// A write view; see [`host_data`](Self::host_data). Writes are seen by the next inference
    /// of every request this tensor is bound to, without rebinding.
    pub fn host_data_mut<T: Element>(&mut self) -> Result<TensorDataMut<'_, T>> {
        let va = self.npu_host_va()?;
        // SAFETY: as in host_data; exclusivity against other views and inferences is enforced by
        // the tensor's use state.
        unsafe { self.handle.data_mut_at::<T>(va, false) }
    }

    fn npu_host_va(&self) -> Result<*mut c_void> {
        if !self.exclusive_memory {
            return Err(Error::unsupported(
                Path::HostView,
                "this tensor's memory stays its exporter's (a dma-buf fd, or device memory exported elsewhere)",
            )
            .explain(
                "the exporter (or another fd of the buffer) can write the pages at any time, so a host view (a Rust \
                 slice) of them could change under its reader. Read and write the data through the exporter \
                 (L0Allocation::read/write, a SYCL queue); the next inference sees such writes without rebinding",
            ));
        }
        let device = self.context().device_name()?;
        if !device.starts_with("NPU") {
            return Err(Error::unsupported(
                Path::HostView,
                format!("only NPU remote tensors have host-visible memory; this one belongs to {device:?}"),
            ));
        }
        let p = self.params()?;
        if p.mem_type.is_none() || p.mem_handle.is_null() {
            return Err(Error::unsupported(
                Path::HostView,
                format!("the remote tensor reports no usable MEM_HANDLE/MEM_TYPE ({:?})", p.raw),
            ));
        }
        Ok(p.mem_handle)
    }
}
