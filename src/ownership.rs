//! Who owns what: the one keep-alive type, the one "owned or borrowed" shape of a foreign handle,
//! and the one store of errors that destructors find. The ground floor: every layer uses these,
//! and this module names no layer.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// Keeps something alive for as long as whatever holds it: the owner of memory a native object
/// points into, a file descriptor, a parent handle, a program's release callback. Holders drop it
/// only after they released the native object that depends on it.
pub type KeepAlive = Arc<dyn Any + Send + Sync>;

/// Who releases a foreign handle (a Level Zero context, the native context of a SYCL context):
/// the wrapper, or the handle's owner. As wgpu-hal's `texture_from_raw` with or without a drop
/// callback, and SYCL's `ownership::transfer` / `ownership::keep`.
#[derive(Clone)]
pub enum Foreign {
    /// The wrapper owns the handle and releases it once, when it is dropped (`transfer`).
    Owned,
    /// The handle stays its owner's and the wrapper never releases it (`keep`). The wrapper holds
    /// `owner` until it is done with the handle, so the owner cannot release the handle first; a
    /// `Drop` impl on `owner` runs when the wrapper is done (the drop callback).
    Borrowed {
        /// What keeps the handle alive; `None` when the caller guarantees that another way.
        owner: Option<KeepAlive>,
    },
}

impl Foreign {
    /// Borrowed, with `owner` kept alive while the handle is used.
    pub fn borrowed_by(owner: impl Any + Send + Sync) -> Foreign {
        Foreign::Borrowed { owner: Some(Arc::new(owner)) }
    }

    /// Whether the wrapper releases the handle.
    pub fn is_owned(&self) -> bool {
        matches!(self, Foreign::Owned)
    }
}

impl fmt::Debug for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Foreign::Owned => f.write_str("Owned"),
            Foreign::Borrowed { owner } => {
                f.debug_struct("Borrowed").field("owner", &owner.as_ref().map(|_| "..")).finish()
            }
        }
    }
}

/// Errors found by destructors (a failing free, a wait that failed at drop), which cannot return
/// them: kept here, oldest first, and returned by the owner's next call that can fail
/// ([`check`](Self::check)) or handed over all at once ([`take_all`](Self::take_all)).
#[derive(Debug, Default)]
pub(crate) struct DeferredErrors(Mutex<Vec<Error>>);

impl DeferredErrors {
    pub(crate) fn push(&self, e: Error) {
        self.lock().push(e);
    }

    /// Every kept error, oldest first; the store is emptied.
    pub(crate) fn take_all(&self) -> Vec<Error> {
        std::mem::take(&mut *self.lock())
    }

    /// The oldest kept error, if any (removed from the store).
    pub(crate) fn check(&self) -> Result<()> {
        let mut errors = self.lock();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.remove(0))
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Error>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
