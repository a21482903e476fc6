//! Named `u64` counters, read through `vl0_counter(name, &value)`.
//!
//! Pre-registered names (DEVELOPERS.md): `gpu.bytes_copied`, `npu.bytes_copied` (bytes moved by
//! each driver's copy and fill commands), `gpu.live_allocations`, `npu.live_allocations`
//! (registry entries, imports included), `{gpu,npu}.exports.dma_buf`, `{gpu,npu}.imports.dma_buf`,
//! `{gpu,npu}.imports.sysmem`, `npu.graphs`, `npu.inferences`, `npu.graph_arg_updates`. [`add`] on any other name registers
//! it, so other modules may add their own.
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

const NAMES: &[&str] = &[
    "gpu.bytes_copied",
    "npu.bytes_copied",
    "gpu.live_allocations",
    "npu.live_allocations",
    "gpu.exports.dma_buf",
    "npu.exports.dma_buf",
    "gpu.imports.dma_buf",
    "npu.imports.dma_buf",
    "gpu.imports.sysmem",
    "npu.imports.sysmem",
    "npu.graphs",
    "npu.inferences",
    // Graph arguments patched in recorded NPU command lists (zeCommandListUpdateMutableCommandsExp).
    "npu.graph_arg_updates",
    // Regular lists run through zeCommandListImmediateAppendCommandListsExp (DPC++'s graphs, adapter v2).
    "gpu.immediate_appends",
];

fn map() -> &'static Mutex<BTreeMap<String, u64>> {
    static M: OnceLock<Mutex<BTreeMap<String, u64>>> = OnceLock::new();
    // Shareable-memory counters say `nt_handle` on Windows where they say `dma_buf` on Linux.
    let name = |n: &str| n.replace("dma_buf", crate::memory::shared_counter());
    M.get_or_init(|| Mutex::new(NAMES.iter().map(|n| (name(n), 0)).collect()))
}

fn with<R>(f: impl FnOnce(&mut BTreeMap<String, u64>) -> R) -> R {
    f(&mut map().lock().unwrap_or_else(|e| e.into_inner()))
}

/// Adds `n` to counter `name` (registering it if new).
pub fn add(name: &str, n: u64) {
    // Looked up before any allocation: this runs on every graph execution, and an allocation per
    // call would make imported memory look slower than the plugin's own in the benchmarks.
    with(|m| match m.get_mut(name) {
        Some(c) => *c = c.wrapping_add(n),
        None => {
            m.insert(name.to_string(), n);
        }
    })
}

/// Subtracts `n` from counter `name`, saturating at 0 (for gauges such as live allocations).
pub fn sub(name: &str, n: u64) {
    with(|m| {
        let c = m.entry(name.to_string()).or_insert(0);
        *c = c.saturating_sub(n);
    })
}

/// The value of counter `name`, or `None` for a name never registered.
pub fn get(name: &str) -> Option<u64> {
    with(|m| m.get(name).copied())
}

/// All counters, for diagnostics.
pub fn snapshot() -> Vec<(String, u64)> {
    with(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn add_sub_get() {
        assert_eq!(super::get("npu.graphs").map(|_| ()), Some(()));
        assert_eq!(super::get("no.such"), None);
        super::add("unit.test", 5);
        super::sub("unit.test", 7);
        assert_eq!(super::get("unit.test"), Some(0));
    }
}
