//! The NPU memory paths: L0 host tensors, CPU_VA, dma-buf (SHARED_BUF), and host views of them.

use std::ffi::c_void;
use std::sync::Arc;

use super::imports;
#[cfg(unix)]
use super::imports::DmaBufClaim;
use super::tensor::{HostAccess, NpuTensor};
use super::NpuContext;
use crate::error::{Aligned, Error, ErrorKind, Path, Reason, Result};
use crate::level_zero::{L0Allocation, MemoryType};
#[cfg(unix)]
use crate::memory::fd_buffer;
use crate::memory::{tensor_bytes, NpuMemory, Region, SharedHandle, PAGE_SIZE};
use crate::openvino::{ElementType, KeepAlive, MemType, RemoteTensor, Shape, TensorProperties, TensorType};

/// A remote tensor just made over known memory, and what making it found out.
struct Made {
    remote: RemoteTensor,
    /// The host address of the memory (the CPU_VA pointer, the driver's mapping of a dma-buf).
    va: *mut c_void,
    /// The tensor may be the memory's only way in (not a reuse of another tensor's import).
    exclusive: bool,
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
    /// [`NpuTensor::host_data`] / [`NpuTensor::host_data_mut`] (through the VA OpenVINO
    /// reports as `MEM_HANDLE`). This is the "already resident" floor: binding it never copies.
    pub fn l0_host_tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<NpuTensor> {
        let shape = shape.into();
        let byte_size = tensor_bytes(element_type, &shape)?;
        let t = self.remote_context().create_l0_host_tensor(element_type, shape.clone(), tensor_type)?;
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
        Ok(NpuTensor::new(
            t,
            element_type,
            shape,
            byte_size,
            HostAccess::Exclusive(va as usize),
            #[cfg(feature = "sycl")]
            None,
        ))
    }

    /// **The one way to hand memory to the NPU**: imports `memory` (any [`NpuMemory`]: a
    /// [`PageAlignedBuffer`](crate::memory::PageAlignedBuffer), a dma-buf [`OwnedFd`](std::os::fd::OwnedFd), a [`L0Allocation`](crate::level_zero::L0Allocation),
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
    ///   [`TensorType::Input`] is imported read-only ([`NpuTensor::is_read_only_for_device`]).
    /// - **SHARED_BUF** (dma-buf): the driver lists `DMA_BUF` among its import types and the buffer
    ///   holds the tensor. A buffer this context has imported already (through any fd) is not
    ///   imported again (the driver would share one buffer object between the imports): the new
    ///   tensor uses the first import's mapping and keeps it alive.
    ///
    /// # Errors
    /// [`Alignment`](ErrorKind::Alignment), [`Size`](ErrorKind::Size),
    /// [`Unsupported`](ErrorKind::Unsupported) naming the path and what works instead,
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for an fd that is not open (it is not
    /// closed: it was not open); [`OpenVino`](ErrorKind::OpenVino) (the driver's refusal, through
    /// the plugin) for an open fd that is no dma-buf (a file, pipe, socket or memfd: only the
    /// driver's import can tell). On error the memory is released as if dropped.
    pub fn import<M: NpuMemory>(
        &self,
        memory: M,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<NpuTensor> {
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
    ) -> Result<NpuTensor> {
        if memory.level_zero_context() == Some(self.level_zero_context().as_raw() as usize) {
            return Err(Error::unsupported(
                Path::CpuVa,
                Reason::PluginContextMemory,
                "the allocation belongs to the NPU plugin's own Level Zero context",
            ));
        }
        let byte_size = tensor_bytes(element_type, &shape)?;
        let region = memory.region()?;
        let exclusive = memory.exclusive();
        let owner: KeepAlive = memory.clone();
        let made = match region {
            Region::Host { ptr, len } => {
                // SAFETY: `ptr` is `len` bytes of memory owned by `owner` (each NpuMemory kind
                // guarantees it: an owned mapping or allocation, or RawMemory's contract), which the
                // tensor keeps alive; the memory was moved into `owner`, so it is reached only
                // through the tensor's checked views (or, for non-exclusive kinds, not at all).
                unsafe {
                    self.import_host(ptr.as_ptr().cast(), len, Some(owner), element_type, shape.clone(), tensor_type)
                }
                .map_err(|e| match memory.memory_kind() {
                    kind @ crate::memory::MemoryKind::LevelZero(_)
                        if matches!(e.kind(), ErrorKind::OpenVino { .. }) =>
                    {
                        gpu_usm_not_pinnable(kind, e)
                    }
                    #[cfg(feature = "sycl")]
                    kind @ crate::memory::MemoryKind::SyclUsm(_) if matches!(e.kind(), ErrorKind::OpenVino { .. }) => {
                        gpu_usm_not_pinnable(kind, e)
                    }
                    _ => e,
                })?
            }
            #[cfg(unix)]
            Region::Shared { handle, len } => {
                self.import_dma_buf(handle, len, element_type, shape.clone(), tensor_type, vec![owner], exclusive)?
            }
            #[cfg(windows)]
            Region::Shared { handle, len } => {
                self.import_nt_handle(handle, len, element_type, shape.clone(), tensor_type, vec![owner])?
            }
        };
        let host = if exclusive && made.exclusive {
            if made.va.is_null() {
                return Err(Error::invalid_argument(
                    "the NPU plugin reported no MEM_HANDLE (host mapping) for the imported memory",
                ));
            }
            HostAccess::Exclusive(made.va as usize)
        } else {
            HostAccess::Shared
        };
        Ok(NpuTensor::new(
            made.remote,
            element_type,
            shape,
            byte_size,
            host,
            #[cfg(feature = "sycl")]
            memory.sycl().map(|(ptr, context)| crate::memory::SyclOrigin {
                addr: ptr.as_ptr() as usize,
                context,
                kind: memory.memory_kind(),
                len: memory.byte_len(),
            }),
        ))
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
    ///   else writes it while a host view of the tensor ([`NpuTensor::host_data`] and friends) is
    ///   alive.
    unsafe fn import_host(
        &self,
        ptr: *mut c_void,
        byte_len: usize,
        keepalive: Option<KeepAlive>,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
    ) -> Result<Made> {
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
        let imports = known.kind == MemoryType::Unknown;
        if !imports {
            // Already an allocation (or import) of the plugin's context: the plugin does not import
            // it again but reuses the allocation found by its id, at the allocation's START
            // (measured with 2026.4.1: the tensor's MEM_HANDLE is the base, and the graph reads
            // from there). An interior pointer would silently give the wrong bytes. Only ids are
            // compared: the driver's address ranges are NPU addresses, not CPU pointers.
            let start = ptr as usize;
            if start > 0 && l0.memory_properties((start - 1) as *const c_void)?.id == known.id {
                return Err(Error::unsupported(
                    Path::CpuVa, Reason::InsideNpuAllocation,
                    format!(
                        "{ptr:p} lies inside (not at the start of) an existing allocation of the NPU context ({:?}, id {})",
                        known.kind, known.id
                    ),
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
                return Err(Error::unsupported(
                    Path::CpuVa,
                    Reason::NoSystemMemoryImport,
                    format!(
                        "the NPU driver cannot import system memory (import types {:?})",
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
        let properties =
            TensorProperties { mem_type: MemType::CpuVa, mem_handle: Some(ptr), tensor_type: Some(tensor_type) };
        // SAFETY: the caller guarantees ptr is valid for byte_len ≥ needed bytes until keepalive
        // is dropped; alignment and size were checked above (or the pointer lies in an allocation
        // of the plugin's context, which the plugin bounds-checks); the tensor holds keepalive.
        let tensor =
            unsafe { self.remote_context().create_tensor_over(element_type, shape, properties, keep, read_only) }
                .map_err(|e| if imports { self.release_orphaned_import(ptr, e) } else { e })?;
        drop(hold);
        if read_only && imports {
            imports::record_read_only(context, l0.memory_properties(ptr)?.id, &tensor.handle);
        }
        Ok(Made { remote: tensor, va: ptr, exclusive: true })
    }

    /// After a failed CPU_VA tensor over memory the NPU did not know: the NPU plugin throws without
    /// freeing its import when the first query of the fresh import fails (seen by
    /// `tests/fault_sweep.rs`), which would leave the driver mapping (pinning, on hardware) pages the
    /// caller frees, and make every later import at that address look like a reuse. Such an import
    /// is nobody's now: release it.
    fn release_orphaned_import(&self, ptr: *mut c_void, cause: Error) -> Error {
        let l0 = self.level_zero_context();
        let Ok(info) = l0.memory_properties(ptr) else { return cause };
        if info.kind == MemoryType::Unknown {
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
    #[cfg(unix)]
    #[allow(clippy::too_many_arguments)]
    fn import_dma_buf(
        &self,
        fd: SharedHandle,
        byte_len: usize,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
        memory: Vec<KeepAlive>,
        exclusive: bool,
    ) -> Result<Made> {
        let needed = self.check_shared_import(element_type, &shape, byte_len)?;
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
                let made =
                    unsafe { self.import_host(live.va, live.len, Some(owner), element_type, shape, tensor_type) }?;
                Ok(Made { exclusive: false, ..made })
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
                let tensor =
                    unsafe { self.shared_buf_tensor(element_type, shape, tensor_type, MemType::fd_handle(raw), keep) }?;
                let va = tensor.params()?.mem_handle;
                record.publish(&tensor.handle, va, available);
                Ok(Made { remote: tensor, va, exclusive: true })
            }
        }
    }

    /// What a shareable-handle import checks first on both OSes: that the NPU driver imports this
    /// OS's handle type (`DMA_BUF` on Linux, `OPAQUE_WIN32` on Windows), and that the tensor fits the
    /// memory's length. The tensor's byte size.
    fn check_shared_import(&self, element_type: ElementType, shape: &Shape, byte_len: usize) -> Result<usize> {
        let needed = tensor_bytes(element_type, shape)?;
        let caps = self.capabilities();
        let (imports, reason, what) = if cfg!(windows) {
            (caps.nt_handle_import, Reason::NoNtHandleImport, "NT handles")
        } else {
            (caps.fd_import, Reason::NoDmaBufImport, "dma-buf fds")
        };
        if !imports {
            return Err(Error::unsupported(
                Path::SHARED_HANDLE,
                reason,
                format!("the NPU driver cannot import {what} (import types {:?})", caps.import_types),
            ));
        }
        if needed > byte_len {
            let what = format!("{} {element_type} tensor of shape {shape} (byte_len)", Path::SHARED_HANDLE);
            return Err(Error::size(what, needed, byte_len));
        }
        Ok(needed)
    }

    /// The one NT-handle import (Windows). No registry as for dma-bufs: the Windows driver is
    /// closed source, and the plugin imports every handle afresh (`ZeroMem` with a
    /// `ze_external_memory_import_win32_handle_t`); that a second import of one handle is
    /// independent of the first is inferred, not read. The plugin never closes the handle, so
    /// the tensor keeps it open until OpenVINO freed the tensor, then closes it once.
    #[cfg(windows)]
    fn import_nt_handle(
        &self,
        handle: SharedHandle,
        byte_len: usize,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
        memory: Vec<KeepAlive>,
    ) -> Result<Made> {
        self.check_shared_import(element_type, &shape, byte_len)?;
        let raw = handle.raw();
        let mut keep: Vec<KeepAlive> = handle.into_keepalive().into_iter().collect();
        keep.extend(memory);
        // SAFETY: `raw` is an open NT handle (checked, or a fresh export) to memory of at least the
        // tensor's byte size (the caller's length, checked above); the tensor keeps it open until
        // OpenVINO freed the tensor and every request let go of it, and then closes it once. If
        // the call fails, the keep-alives are dropped (the handle closed) before this returns.
        let tensor =
            unsafe { self.shared_buf_tensor(element_type, shape, tensor_type, MemType::nt_handle(raw), keep) }?;
        let va = tensor.params()?.mem_handle;
        Ok(Made { remote: tensor, va, exclusive: true })
    }

    /// The plugin's SHARED_BUF import of `mem_handle` (this OS's handle value), the tensor keeping
    /// `keep` until OpenVINO freed it.
    ///
    /// # Safety
    /// `mem_handle` is an open handle to memory of at least the tensor's byte size, and `keep` keeps
    /// it open until OpenVINO freed the tensor and every request let go of it.
    unsafe fn shared_buf_tensor(
        &self,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
        mem_handle: *mut c_void,
        keep: Vec<KeepAlive>,
    ) -> Result<RemoteTensor> {
        let properties = TensorProperties {
            mem_type: MemType::SharedBuf,
            mem_handle: Some(mem_handle),
            tensor_type: Some(tensor_type),
        };
        // SAFETY: the caller's contract; the device may write the memory.
        unsafe { self.remote_context().create_tensor_over(element_type, shape, properties, keep, false) }
    }
}

/// The NPU driver refused to import GPU-driver USM (SYCL or Level Zero host/shared memory of a GPU
/// context). On Intel laptops compute-runtime backs that memory with a CPU mapping of GPU buffer
/// objects (`drm_memory_manager.cpp` `createAllocWithAlignment`, mmap of the DRM fd), which the
/// NPU's kernel driver cannot pin (`pin_user_pages(FOLL_LONGTERM)` refuses `VM_PFNMAP|VM_IO`).
fn gpu_usm_not_pinnable(kind: crate::memory::MemoryKind, cause: Error) -> Error {
    Error::unsupported(
        Path::CpuVa,
        Reason::GpuUsmNotPinnable,
        format!("the NPU driver could not import this {kind:?} memory as system memory"),
    )
    .with_source(cause)
}

/// The owner of pages the NPU imported (CPU_VA), dropped with the tensor after OpenVINO freed it.
/// If the driver still maps the pages then (its `zeMemFree` of the import failed), they are kept:
/// unmapping them would leave the NPU with pinned pages of freed memory, and a later buffer at the
/// same address would look like that stale import. A leak, never a use-after-free.
struct ImportedPages {
    context: Arc<crate::level_zero::L0Context>,
    ptr: usize,
    owner: Option<KeepAlive>,
}

impl Drop for ImportedPages {
    fn drop(&mut self) {
        let still_imported = self
            .context
            .memory_properties(self.ptr as *const c_void)
            .is_ok_and(|info| info.kind != MemoryType::Unknown);
        if still_imported {
            std::mem::forget(self.owner.take());
        }
    }
}
