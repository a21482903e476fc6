//! The internal buffers the NPU driver caches per context between jobs, and the idle pruning that
//! releases them (linux-npu-driver 1.32.1 `context.cpp` `Context::releaseMemory`,
//! `ResourceCleaner`, `setProperties`, `setIdlePruningTimeout`; `cmdqueue.cpp` takes a preemption
//! buffer at execution and marks the context idle after a synchronization; `vpu_device_context`
//! `preemptionCachePrune`, `scratchCachePrune`):
//!
//! - an execution that runs a graph leaves buffers in the context's cache (counted by
//!   `pfnQueryContextMemory`); `pfnReleaseMemory` frees them;
//! - on NPU 40xx+ a cleaner, on by default (`Context::Context`), frees them once the context has
//!   been idle (synchronized, nothing submitted since) for the pruning timeout: 30 s by default,
//!   `zexContextSetIdlePruningTimeout`; `ZE_NPU_CONTEXT_OPTION_IDLE_OPTIMIZATIONS` turns it on and
//!   off. 37xx has none.
//!
//! What the cache holds and its size are **inferred**: on hardware, the preemption buffers (firmware
//! sized) and the blobs' shared scratch buffers; here one [`CACHED_BYTES`] buffer per context. The
//! cleaner is evaluated when the memory is looked at, which no caller can tell from a thread.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The bytes an execution leaves cached (**inferred**, see the module docs).
pub const CACHED_BYTES: usize = 64 << 10;

#[derive(Debug)]
struct State {
    cached: usize,
    idle_since: Option<Instant>,
    cleaner: bool,
    timeout: Duration,
}

fn table() -> MutexGuard<'static, HashMap<usize, State>> {
    static T: OnceLock<Mutex<HashMap<usize, State>>> = OnceLock::new();
    T.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

fn has_cleaner() -> bool {
    crate::profile::current().npu_generation != crate::profile::NpuGeneration::Npu37xx
}

fn state(t: &mut HashMap<usize, State>, context: usize) -> &mut State {
    t.entry(context).or_insert_with(|| State {
        cached: 0,
        idle_since: None,
        cleaner: has_cleaner(),
        timeout: Duration::from_secs(30),
    })
}

/// A new NPU context (a handle may be reused after `zeContextDestroy`): the driver's defaults.
pub fn reset(context: usize) {
    table().remove(&context);
}

/// A job with a graph was submitted on `context`: its buffers are in use, then cached.
pub fn busy(context: usize) {
    let mut t = table();
    let s = state(&mut t, context);
    s.cached = s.cached.max(CACHED_BYTES);
    s.idle_since = None;
}

/// A synchronization found `context`'s work done (`Context::setIdle`).
pub fn set_idle(context: usize) {
    let mut t = table();
    let s = state(&mut t, context);
    if s.idle_since.is_none() {
        s.idle_since = Some(Instant::now());
    }
}

/// `pfnReleaseMemory`: the cached buffers are freed.
pub fn release(context: usize) {
    let mut t = table();
    state(&mut t, context).cached = 0;
}

/// `pfnSetProperties`: idle optimizations on or off (NPU 40xx+ only; 37xx accepts and ignores).
pub fn set_cleaner(context: usize, on: bool) {
    let mut t = table();
    let s = state(&mut t, context);
    s.cleaner = on && has_cleaner();
}

/// `zexContextSetIdlePruningTimeout`.
pub fn set_timeout(context: usize, ms: u64) {
    let mut t = table();
    state(&mut t, context).timeout = Duration::from_millis(ms);
}

/// The bytes cached for `context` now, after the cleaner's pruning if it is due.
pub fn cached_bytes(context: usize) -> usize {
    let mut t = table();
    let s = state(&mut t, context);
    if s.cleaner && s.idle_since.is_some_and(|at| at.elapsed() >= s.timeout) {
        s.cached = 0;
        s.idle_since = None;
    }
    s.cached
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_buffers_go_on_release_or_after_the_idle_timeout() {
        let ctx = 0x5eed_0001;
        reset(ctx);
        assert_eq!(cached_bytes(ctx), 0);
        busy(ctx);
        assert_eq!(cached_bytes(ctx), CACHED_BYTES);
        release(ctx);
        assert_eq!(cached_bytes(ctx), 0);

        busy(ctx);
        set_timeout(ctx, 0);
        assert_eq!(cached_bytes(ctx), CACHED_BYTES, "not idle yet");
        set_idle(ctx);
        let after = cached_bytes(ctx);
        if has_cleaner() {
            assert_eq!(after, 0, "idle for the whole (zero) timeout");
        } else {
            assert_eq!(after, CACHED_BYTES, "37xx has no cleaner");
        }
        busy(ctx);
        set_cleaner(ctx, false);
        set_idle(ctx);
        assert_eq!(cached_bytes(ctx), CACHED_BYTES, "the cleaner is off");
        reset(ctx);
    }
}
