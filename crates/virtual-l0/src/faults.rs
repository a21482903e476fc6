//! Fault injection: make the `nth` (1-based) next call of a named export return a given result.
//!
//! Set with `vl0_fault_inject(function, nth, result)` or the environment
//! `VL0_FAULTS=zeMemAllocHost:3:0x70000002,…` (read at the first exported call), cleared with
//! `vl0_fault_clear()`. Several faults may be pending for one function; each fires once.
//! Applied generically by [`crate::export::guard`] before the body runs (a pointer-returning export
//! returns NULL instead).
use crate::sys::ze_result_t;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

struct Pending {
    function: String,
    remaining: u64,
    result: ze_result_t,
}

static ARMED: AtomicBool = AtomicBool::new(false);

fn table() -> &'static Mutex<Vec<Pending>> {
    static T: OnceLock<Mutex<Vec<Pending>>> = OnceLock::new();
    T.get_or_init(|| {
        let mut v = Vec::new();
        if let Ok(spec) = std::env::var("VL0_FAULTS") {
            for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                match parse(item) {
                    Some(p) => v.push(p),
                    None => eprintln!("[vl0] VL0_FAULTS: ignoring malformed entry {item:?} (want name:nth:result)"),
                }
            }
        }
        if !v.is_empty() {
            ARMED.store(true, Ordering::SeqCst);
        }
        Mutex::new(v)
    })
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse(item: &str) -> Option<Pending> {
    let mut it = item.rsplitn(3, ':');
    let result = parse_num(it.next()?)?;
    let nth = parse_num(it.next()?)?;
    let function = it.next()?.trim().to_string();
    if function.is_empty() || nth == 0 || result > u32::MAX as u64 {
        return None;
    }
    Some(Pending { function, remaining: nth, result: result as ze_result_t })
}

/// Arms a fault: the `nth` (1-based, 0 is treated as 1) next call of `function` returns `result`.
pub fn inject(function: &str, nth: u64, result: ze_result_t) {
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    t.push(Pending { function: function.to_string(), remaining: nth.max(1), result });
    ARMED.store(true, Ordering::SeqCst);
}

/// Removes every pending fault (including those from `VL0_FAULTS`).
pub fn clear() {
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    t.clear();
    ARMED.store(false, Ordering::SeqCst);
}

/// Called once per exported call: counts the call against the pending faults of `function` and
/// returns the result of one that fires now.
pub fn take(function: &str) -> Option<ze_result_t> {
    let t = table(); // parses VL0_FAULTS once
    if !ARMED.load(Ordering::Relaxed) {
        return None;
    }
    let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
    let mut fired = None;
    for p in t.iter_mut().filter(|p| p.function == function) {
        p.remaining -= 1;
        if p.remaining == 0 && fired.is_none() {
            fired = Some(p.result);
        }
    }
    t.retain(|p| p.remaining > 0);
    if t.is_empty() {
        ARMED.store(false, Ordering::SeqCst);
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_entries() {
        let p = parse("zeMemAllocHost:3:0x70000002").unwrap();
        assert_eq!((p.function.as_str(), p.remaining, p.result), ("zeMemAllocHost", 3, 0x7000_0002));
        assert!(parse("zeX:0:1").is_none());
        assert!(parse("junk").is_none());
    }
    #[test]
    fn fires_on_nth_call_once() {
        inject("unitTestFn", 2, 7);
        assert_eq!(take("unitTestFn"), None);
        assert_eq!(take("unitTestFn"), Some(7));
        assert_eq!(take("unitTestFn"), None);
    }
}
