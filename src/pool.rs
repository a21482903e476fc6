//! [`NpuPool`]: the program's own memory, imported by the NPU once per buffer and handed out again
//! and again as tensors, so that the steady state has no allocation and no import.
//!
//! ```no_run
//! # fn f(npu: &npu_sycl_bridge::npu::NpuContext) -> npu_sycl_bridge::Result<()> {
//! use npu_sycl_bridge::memory::PageAlignedBuffer;
//! use npu_sycl_bridge::openvino::ElementType;
//! use npu_sycl_bridge::pool::{NpuPool, PoolLimits};
//!
//! let buffers = (0..4).map(|_| PageAlignedBuffer::new(1 << 20)).collect::<Result<Vec<_>, _>>()?;
//! let pool = NpuPool::from_buffers(npu, buffers)?;
//! let t = pool.tensor(ElementType::F32, [1, 1024])?; // imported on first use
//! drop(t); // back in the pool, still imported
//! let t = pool.tensor(ElementType::F32, [1, 1024])?; // the same tensor again: no import
//! assert_eq!(pool.stats().imports, 1);
//! # let _ = (t, PoolLimits::default()); Ok(()) }
//! ```
//!
//! # How tensors come back
//! A pool tensor is an ordinary [`NpuTensor`]; the pool keeps one clone of it. It is free again
//! once nothing else holds a clone: the caller dropped it **and** no [`InferRequest`] holds it
//! (a request holds what is bound to it, and a replaced tensor until its next inference finished).
//! So a tensor still bound, or still read by an inference, is never handed out twice.
//!
//! # Request affinity
//! A request keeps its bound tensor, so the next `tensor()` hands it another one, and binding a
//! different tensor makes the NPU plugin patch its recorded command list on every inference.
//! [`input_for`](NpuPool::input_for) / [`output_for`](NpuPool::output_for) hand a request back the
//! pool tensor it has bound at that port when nothing else holds it, so a steady loop costs what a
//! tensor kept bound costs (`cargo xtask bench`, "pool" against "dma_buf").
//!
//! # Import rules
//! Each buffer is imported by the one import call, [`NpuContext::import`], with its rules (CPU_VA
//! only where the driver imports user memory, page-aligned; one import per dma-buf per context).
//! Tensors are imported as [`TensorType::Binded`]: read-write for the NPU, so any pool tensor can
//! be an input or an output (an `Input` CPU_VA import would be read-only for the NPU). A buffer
//! keeps its import while its tensor has the same element type and shape; a request of another
//! shape re-imports a free buffer only when no free buffer of that shape (and no unused buffer) is
//! left.
//!
//! [`InferRequest`]: crate::openvino::InferRequest
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, ErrorKind, Result};
use crate::memory::NpuMemory;
use crate::memory::{round_up_to_page, tensor_bytes};
use crate::npu::{NpuContext, NpuTensor};
use crate::openvino::{ElementType, InferRequest, PortInfo, Shape, TensorType};

/// Bounds of a pool that allocates ([`NpuPool::with_allocator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// The most buffers the pool holds.
    pub max_buffers: usize,
    /// The most bytes the pool holds.
    pub max_bytes: usize,
}

impl Default for PoolLimits {
    /// 64 buffers, 1 GiB.
    fn default() -> Self {
        PoolLimits { max_buffers: 64, max_bytes: 1 << 30 }
    }
}

/// What a pool did and holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers the allocator made.
    pub allocations: u64,
    /// NPU imports made (first use of a buffer, or a buffer re-imported for another shape).
    pub imports: u64,
    /// Tensors handed out without an import.
    pub hits: u64,
    /// Tensors handed out after an import.
    pub misses: u64,
    /// Buffers held.
    pub buffers: usize,
    /// Bytes held.
    pub bytes: usize,
    /// Buffers whose tensor is in use now.
    pub in_use: usize,
}

impl fmt::Display for PoolStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} buffers ({} bytes, {} in use), {} allocations, {} imports, {} hits, {} misses",
            self.buffers, self.bytes, self.in_use, self.allocations, self.imports, self.hits, self.misses
        )
    }
}

type Allocator<M> = Box<dyn FnMut(usize) -> Result<M> + Send>;

/// A pool of NPU tensors over memory of kind `M` (any [`NpuMemory`]): a fixed set of buffers the
/// program allocated, or buffers an allocator callback makes on demand within [`PoolLimits`].
///
/// Thread-safe: share it (`&NpuPool` or `Arc<NpuPool>`) between threads.
pub struct NpuPool<M: NpuMemory> {
    npu: NpuContext,
    state: Mutex<State<M>>,
}

struct State<M> {
    buffers: Vec<Buffer<M>>,
    allocator: Option<Allocator<M>>,
    limits: PoolLimits,
    stats: PoolStats,
}

struct Buffer<M> {
    memory: Arc<M>,
    len: usize,
    /// Whether the pool allocated it (a trim may free it) or the program gave it.
    allocated: bool,
    tensor: Option<NpuTensor>,
}

/// Nothing but the pool holds the tensor: no caller, no request, no inference.
fn is_free(tensor: &NpuTensor) -> bool {
    tensor.handle_count() == 1
}

impl<M> Buffer<M> {
    fn is_free(&self) -> bool {
        self.tensor.as_ref().map_or(true, is_free)
    }
}

impl<M: NpuMemory> NpuPool<M> {
    /// A pool over buffers the program allocated: each is imported on its first use and never
    /// freed before the pool (and every tensor over it) is dropped.
    ///
    /// # Errors
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for an empty set.
    pub fn from_buffers(npu: &NpuContext, buffers: Vec<M>) -> Result<NpuPool<M>> {
        if buffers.is_empty() {
            return Err(Error::invalid_argument("NpuPool::from_buffers: no buffers"));
        }
        let buffers: Vec<Buffer<M>> = buffers
            .into_iter()
            .map(|m| Buffer { len: m.byte_len(), memory: Arc::new(m), allocated: false, tensor: None })
            .collect();
        let stats =
            PoolStats { buffers: buffers.len(), bytes: buffers.iter().map(|b| b.len).sum(), ..PoolStats::default() };
        let limits = PoolLimits { max_buffers: buffers.len(), max_bytes: stats.bytes };
        Ok(NpuPool { npu: npu.clone(), state: Mutex::new(State { buffers, allocator: None, limits, stats }) })
    }

    /// A pool that allocates with `allocate(byte_len)` (called with the tensor's byte size
    /// rounded up to whole pages) when no free buffer fits, within `limits`.
    pub fn with_allocator(
        npu: &NpuContext,
        limits: PoolLimits,
        allocate: impl FnMut(usize) -> Result<M> + Send + 'static,
    ) -> NpuPool<M> {
        NpuPool {
            npu: npu.clone(),
            state: Mutex::new(State {
                buffers: Vec::new(),
                allocator: Some(Box::new(allocate)),
                limits,
                stats: PoolStats::default(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<M>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A tensor of `element_type` and `shape` over a pool buffer: one that already has such a
    /// tensor and is free (no import), else an unused or free buffer that is large enough
    /// (imported now), else a new buffer from the allocator (allocated and imported now).
    ///
    /// # Errors
    /// [`Exhausted`](ErrorKind::Exhausted) when every buffer large enough is in use and the
    /// pool may not grow; the import errors of [`NpuContext::import`].
    pub fn tensor(&self, element_type: ElementType, shape: impl Into<Shape>) -> Result<NpuTensor> {
        let shape = shape.into();
        let needed = tensor_bytes(element_type, &shape)?;
        let mut state = self.lock();
        let st = &mut *state;
        let same = |b: &Buffer<M>| {
            b.tensor.as_ref().is_some_and(|t| is_free(t) && t.element_type() == element_type && t.shape() == &shape)
        };
        if let Some(b) = st.buffers.iter().find(|b| same(b)) {
            st.stats.hits += 1;
            return Ok(b.tensor.clone().expect("found with a tensor"));
        }
        // An unused buffer first, then the smallest free one: re-importing drops another shape's import.
        let fits = |b: &Buffer<M>| b.len >= needed && b.is_free();
        let pick = st.buffers.iter().position(|b| b.tensor.is_none() && b.len >= needed).or_else(|| {
            st.buffers.iter().enumerate().filter(|(_, b)| fits(b)).min_by_key(|(_, b)| b.len).map(|(i, _)| i)
        });
        let index = match pick {
            Some(i) => i,
            None => self.grow(st, needed)?,
        };
        let buffer = &mut st.buffers[index];
        buffer.tensor = None; // releases another shape's import before the new one
        let tensor = self.npu.import_shared(Arc::clone(&buffer.memory), element_type, shape, TensorType::Binded)?;
        st.stats.imports += 1;
        st.stats.misses += 1;
        buffer.tensor = Some(tensor.clone());
        Ok(tensor)
    }

    /// A tensor for input `index` of `request`: the pool tensor the request has bound there when
    /// only the pool and that binding hold it (and the request is idle), else
    /// [`tensor`](Self::tensor) of the port's element type and shape.
    ///
    /// # Errors
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for an index the model does not have;
    /// [`Shape`](ErrorKind::Shape) for a port with a dynamic shape; those of
    /// [`tensor`](Self::tensor).
    pub fn input_for(&self, request: &InferRequest, index: usize) -> Result<NpuTensor> {
        self.port_tensor(request, false, index)
    }

    /// [`input_for`](Self::input_for) for output `index`.
    ///
    /// # Errors
    /// Those of [`input_for`](Self::input_for).
    pub fn output_for(&self, request: &InferRequest, index: usize) -> Result<NpuTensor> {
        self.port_tensor(request, true, index)
    }

    fn port_tensor(&self, request: &InferRequest, output: bool, index: usize) -> Result<NpuTensor> {
        let ports: &[PortInfo] = if output { request.outputs() } else { request.inputs() };
        let what = if output { "output" } else { "input" };
        let port = ports.get(index).ok_or_else(|| {
            Error::invalid_argument(format!("the model has {} {what}s, not {what} {index}", ports.len()))
        })?;
        let shape = port.shape.as_ref().ok_or_else(|| {
            Error::shape(format!("{what} {index} ({:?}) has a dynamic shape; use NpuPool::tensor", port.name))
        })?;
        if let Some(bound) = request.sole_binding(output, index) {
            let mut st = self.lock();
            // Held by the pool and by that binding only: no caller clone, no other request.
            let back = st
                .buffers
                .iter()
                .filter_map(|b| b.tensor.as_ref())
                .find(|t| Arc::ptr_eq(&t.remote().handle, bound) && t.handle_count() == 2);
            if let Some(t) = back.cloned() {
                st.stats.hits += 1;
                return Ok(t);
            }
        }
        // Only a miss needs the shape as a value.
        self.tensor(port.element_type, shape.clone())
    }

    /// Allocates a buffer of at least `needed` bytes, first freeing free buffers that are too
    /// small when the limits demand it; returns its index.
    fn grow(&self, st: &mut State<M>, needed: usize) -> Result<usize> {
        let len = round_up_to_page(needed).ok_or_else(|| Error::size("a pool buffer", needed, usize::MAX))?;
        let Some(allocate) = st.allocator.as_mut() else {
            return Err(exhausted(&st.stats, needed, "the pool has only the buffers it was given"));
        };
        let over = |buffers: &[Buffer<M>]| {
            buffers.len() + 1 > st.limits.max_buffers
                || buffers.iter().map(|b| b.len).sum::<usize>() + len > st.limits.max_bytes
        };
        while over(&st.buffers) {
            let Some(i) = st.buffers.iter().position(|b| b.allocated && b.is_free()) else {
                let why = format!(
                    "its limits ({} buffers, {} bytes) leave no room for {len} more bytes",
                    st.limits.max_buffers, st.limits.max_bytes
                );
                return Err(exhausted(&st.stats, needed, &why));
            };
            st.buffers.swap_remove(i);
        }
        let memory = allocate(len)?;
        if memory.byte_len() < needed {
            return Err(Error::size("the pool allocator's buffer", needed, memory.byte_len()));
        }
        st.stats.allocations += 1;
        st.buffers.push(Buffer { len: memory.byte_len(), memory: Arc::new(memory), allocated: true, tensor: None });
        Ok(st.buffers.len() - 1)
    }

    /// What the pool did and holds now.
    pub fn stats(&self) -> PoolStats {
        let st = self.lock();
        PoolStats {
            buffers: st.buffers.len(),
            bytes: st.buffers.iter().map(|b| b.len).sum(),
            in_use: st.buffers.iter().filter(|b| !b.is_free()).count(),
            ..st.stats
        }
    }

    /// Releases what no tensor uses: the imports of free buffers, and the free buffers the
    /// allocator made (the program's own buffers stay). Returns what it released.
    pub fn trim(&self) -> Trimmed {
        let mut st = self.lock();
        let imports = st.buffers.iter().filter(|b| b.tensor.is_some() && b.is_free()).count();
        let (buffers, bytes) = (st.buffers.len(), st.buffers.iter().map(|b| b.len).sum::<usize>());
        st.buffers.retain(|b| !(b.allocated && b.is_free()));
        for b in st.buffers.iter_mut().filter(|b| b.is_free()) {
            b.tensor = None;
        }
        Trimmed {
            imports,
            buffers: buffers - st.buffers.len(),
            bytes: bytes - st.buffers.iter().map(|b| b.len).sum::<usize>(),
        }
    }

    /// The NPU context the pool imports into.
    pub fn npu_context(&self) -> &NpuContext {
        &self.npu
    }
}

/// What [`NpuPool::trim`] released.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// Imports of free buffers dropped: the next tensor over such a buffer imports it again.
    pub imports: usize,
    /// Free buffers the pool's allocator had made, freed now.
    pub buffers: usize,
    /// The bytes of those buffers.
    pub bytes: usize,
}

impl<M: NpuMemory> fmt::Debug for NpuPool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NpuPool").field("stats", &self.stats()).finish()
    }
}

fn exhausted(stats: &PoolStats, needed: usize, why: &str) -> Error {
    Error::new(
        ErrorKind::Exhausted,
        format!("the NPU pool has no free buffer of {needed} bytes: {why} ({} imports so far)", stats.imports),
    )
    .explain(
        "pool tensors come back when every clone is dropped and no InferRequest holds them (a request holds what \
         is bound to it, and a replaced tensor until its next inference finished); give the pool more buffers or \
         larger limits, or drop tensors (or rebind requests) sooner",
    )
}
