//! What the NPU plugin's Level Zero context has imported, so that the bridge imports each dma-buf
//! once per context and remembers which user-memory imports the driver mapped read-only.
//!
//! linux-npu-driver 1.32.1 turns a dma-buf fd into a GEM handle with `DRM_IOCTL_PRIME_FD_TO_HANDLE`
//! (`umd/vpu_driver/source/memory/vpu_buffer_object.cpp` `VPUBufferObject::importFromFd`); the
//! kernel returns the same handle for every import of one buffer through one device fd, and the
//! first `zeMemFree` closes it for both. So a second import of a buffer that is still imported
//! would break the first (or the first's free would break the second). The registry below keys live
//! imports by (context, buffer inode) and hands later tensors the first import's mapping.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};

use crate::error::{Error, Result};
use crate::openvino::tensor::TensorHandle;
use crate::openvino::KeepAlive;

/// A dma-buf, as the kernel names it: the device and inode of its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct BufferKey {
    context: usize,
    dev: u64,
    ino: u64,
}

/// An import in progress (other claimants wait) or done (they reuse it while it lives).
enum Entry {
    Importing,
    Live { tensor: Weak<TensorHandle>, va: usize, len: usize },
}

#[derive(Default)]
struct State {
    dma_bufs: HashMap<BufferKey, Entry>,
    /// (context, allocation id) of user-memory imports the driver mapped read-only.
    read_only: HashSet<(usize, u64)>,
}

struct Registry {
    state: Mutex<State>,
    changed: Condvar,
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry { state: Mutex::new(State::default()), changed: Condvar::new() })
}

fn lock() -> MutexGuard<'static, State> {
    registry().state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The first import of a buffer that is still alive in this context.
pub(crate) struct LiveImport {
    /// Keeps the first import (its tensor, and so the driver's buffer object) alive.
    pub owner: KeepAlive,
    /// The driver's host mapping of the whole buffer (the first tensor's `MEM_HANDLE`).
    pub va: *mut std::ffi::c_void,
    /// The bytes of the buffer the driver mapped.
    pub len: usize,
}

/// What the caller must do with a dma-buf.
pub(crate) enum DmaBufClaim {
    /// Import it with the record in the tensor's keep-alive list, then
    /// [`publish`](ImportRecord::publish) the tensor (dropping the record withdraws the claim).
    Import(Arc<ImportRecord>),
    /// It is imported already: use that import.
    Reuse(LiveImport),
}

/// Claims the dma-buf behind `fd` for an import into `context` (a raw `ze_context_handle_t`).
/// Waits while another thread imports the same buffer, or while its last import is being freed.
pub(crate) fn claim_dma_buf(context: usize, fd: BorrowedFd<'_>) -> Result<DmaBufClaim> {
    // SAFETY: a zeroed stat is a valid output buffer; fstat only writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on an open fd (borrowed for the call).
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(Error::io(format!("fstat of dma-buf fd {}", fd.as_raw_fd()), std::io::Error::last_os_error()));
    }
    let key = BufferKey { context, dev: st.st_dev, ino: st.st_ino };
    let mut state = lock();
    loop {
        match state.dma_bufs.get(&key) {
            None => {
                state.dma_bufs.insert(key, Entry::Importing);
                return Ok(DmaBufClaim::Import(Arc::new(ImportRecord { key })));
            }
            Some(Entry::Live { tensor, va, len }) => {
                if let Some(t) = tensor.upgrade() {
                    let owner: KeepAlive = t;
                    return Ok(DmaBufClaim::Reuse(LiveImport { owner, va: *va as *mut _, len: *len }));
                }
                // Its last tensor is gone but the driver has not freed it yet: its record's
                // drop (after the free) removes the entry.
            }
            Some(Entry::Importing) => {}
        }
        state = registry().changed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
}

/// A claim on one buffer in one context. Kept alive by the imported tensor (in its keep-alive
/// list, so it is dropped after OpenVINO freed the tensor and the driver its import); its drop
/// releases the claim.
pub(crate) struct ImportRecord {
    key: BufferKey,
}

impl ImportRecord {
    /// Records `tensor` (the driver's mapping `va` of `len` bytes) as the buffer's live import.
    pub(crate) fn publish(&self, tensor: &Arc<TensorHandle>, va: *mut std::ffi::c_void, len: usize) {
        lock().dma_bufs.insert(self.key, Entry::Live { tensor: Arc::downgrade(tensor), va: va as usize, len });
        registry().changed.notify_all();
    }
}

impl Drop for ImportRecord {
    fn drop(&mut self) {
        lock().dma_bufs.remove(&self.key);
        registry().changed.notify_all();
    }
}

/// Records that the driver mapped allocation `id` of `context` read-only for the NPU.
/// The returned guard (kept by the tensor) forgets it once the import is freed.
pub(crate) fn record_read_only(context: usize, id: u64) -> KeepAlive {
    struct Forget(usize, u64);
    impl Drop for Forget {
        fn drop(&mut self) {
            lock().read_only.remove(&(self.0, self.1));
        }
    }
    lock().read_only.insert((context, id));
    Arc::new(Forget(context, id))
}

/// Whether allocation `id` of `context` is a read-only import.
pub(crate) fn is_read_only(context: usize, id: u64) -> bool {
    lock().read_only.contains(&(context, id))
}
