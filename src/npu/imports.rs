//! What the NPU plugin's Level Zero context has imported, so that the bridge imports each dma-buf
//! once per context (Linux) and remembers which user-memory imports the driver mapped read-only.
//!
//! linux-npu-driver 1.32.1 turns a dma-buf fd into a GEM handle with `DRM_IOCTL_PRIME_FD_TO_HANDLE`
//! (`umd/vpu_driver/source/memory/vpu_buffer_object.cpp` `VPUBufferObject::importFromFd`); the
//! kernel returns the same handle for every import of one buffer through one device fd, and the
//! first `zeMemFree` closes it for both. So a second import of a buffer that is still imported
//! would break the first (or the first's free would break the second). The registry below keys live
//! imports by (context, buffer inode) and hands later tensors the first import's mapping.

use std::collections::HashMap;
#[cfg(unix)]
use std::sync::Condvar;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use crate::openvino::tensor::TensorHandle;
#[cfg(unix)]
use crate::ownership::KeepAlive;

#[cfg(unix)]
/// A dma-buf in a context: the context, and the device and inode of the buffer's file.
type BufferKey = (usize, (u64, u64));

#[cfg(unix)]
/// An import in progress (other claimants wait) or done (they reuse it while it lives).
enum Entry {
    Importing,
    Live { tensor: Weak<TensorHandle>, va: usize, len: usize },
}

#[derive(Default)]
struct State {
    #[cfg(unix)]
    dma_bufs: HashMap<BufferKey, Entry>,
    /// User-memory imports the driver mapped read-only, by (context, allocation id), while the
    /// tensor that made them lives (allocation ids are never reused).
    read_only: HashMap<(usize, u64), Weak<TensorHandle>>,
}

struct Registry {
    state: Mutex<State>,
    #[cfg(unix)]
    changed: Condvar,
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry {
        state: Mutex::new(State::default()),
        #[cfg(unix)]
        changed: Condvar::new(),
    })
}

fn lock() -> MutexGuard<'static, State> {
    registry().state.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(unix)]
/// The first import of a buffer that is still alive in this context.
pub(crate) struct LiveImport {
    /// Keeps the first import (its tensor, and so the driver's buffer object) alive.
    pub owner: KeepAlive,
    /// The driver's host mapping of the whole buffer (the first tensor's `MEM_HANDLE`).
    pub va: *mut std::ffi::c_void,
    /// The bytes of the buffer the driver mapped.
    pub len: usize,
}

#[cfg(unix)]
/// What the caller must do with a dma-buf.
pub(crate) enum DmaBufClaim {
    /// Import it with the record in the tensor's keep-alive list, then
    /// [`publish`](ImportRecord::publish) the tensor (dropping the record withdraws the claim).
    Import(Arc<ImportRecord>),
    /// It is imported already: use that import.
    Reuse(LiveImport),
}

#[cfg(unix)]
/// Claims the dma-buf `buffer` (device and inode of its file) for an import into `context` (a raw
/// `ze_context_handle_t`). Waits while another thread imports the same buffer, or while its last
/// import is being freed.
pub(crate) fn claim_dma_buf(context: usize, buffer: (u64, u64)) -> DmaBufClaim {
    let key = (context, buffer);
    let mut state = lock();
    loop {
        match state.dma_bufs.get(&key) {
            None => {
                state.dma_bufs.insert(key, Entry::Importing);
                return DmaBufClaim::Import(Arc::new(ImportRecord { key }));
            }
            Some(Entry::Live { tensor, va, len }) => {
                if let Some(t) = tensor.upgrade() {
                    let owner: KeepAlive = t;
                    return DmaBufClaim::Reuse(LiveImport { owner, va: *va as *mut _, len: *len });
                }
                // Its last tensor is gone but the driver has not freed it yet: its record's
                // drop (after the free) removes the entry.
            }
            Some(Entry::Importing) => {}
        }
        state = registry().changed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
}

#[cfg(unix)]
/// A claim on one buffer in one context. Kept alive by the imported tensor (in its keep-alive
/// list, so it is dropped after OpenVINO freed the tensor and the driver its import); its drop
/// releases the claim.
pub(crate) struct ImportRecord {
    key: BufferKey,
}

#[cfg(unix)]
impl ImportRecord {
    /// Records `tensor` (the driver's mapping `va` of `len` bytes) as the buffer's live import.
    pub(crate) fn publish(&self, tensor: &Arc<TensorHandle>, va: *mut std::ffi::c_void, len: usize) {
        lock().dma_bufs.insert(self.key, Entry::Live { tensor: Arc::downgrade(tensor), va: va as usize, len });
        registry().changed.notify_all();
    }
}

#[cfg(unix)]
impl Drop for ImportRecord {
    fn drop(&mut self) {
        lock().dma_bufs.remove(&self.key);
        registry().changed.notify_all();
    }
}

/// Records that the driver mapped allocation `id` of `context` read-only for the NPU, for as long as
/// `tensor` (the import) lives.
pub(crate) fn record_read_only(context: usize, id: u64, tensor: &Arc<TensorHandle>) {
    let mut state = lock();
    state.read_only.retain(|_, t| t.strong_count() > 0);
    state.read_only.insert((context, id), Arc::downgrade(tensor));
}

/// Whether allocation `id` of `context` is a live read-only import.
pub(crate) fn is_read_only(context: usize, id: u64) -> bool {
    lock().read_only.get(&(context, id)).is_some_and(|t| t.strong_count() > 0)
}
