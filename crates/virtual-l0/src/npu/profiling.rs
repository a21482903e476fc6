//! `ZE_extension_profiling_data`: profiling pools and queries of graphs created with
//! `ZE_GRAPH_FLAG_ENABLE_PROFILING` (or `PERF_COUNT=YES`), as linux-npu-driver 1.32.1 runs them
//! (`source/ext/profiling_data.cpp`, `graph.cpp` `createProfilingPool`, `cmdlist.cpp`
//! `appendGraphExecute`):
//!
//! - a pool has `count` query slots; a query takes one (`HANDLE_OBJECT_IN_USE` if taken,
//!   `INVALID_ARGUMENT` past the end); a pool with live queries cannot be destroyed;
//! - an execution of a profiling graph needs a query (`INVALID_NULL_HANDLE` without); a graph
//!   without profiling ignores one;
//! - the execution writes the query's raw buffer; `RAW` returns it, `LAYER_LEVEL` and
//!   `TASK_LEVEL` decode it into `ze_profiling_layer_info` / `ze_profiling_task_info` arrays (the
//!   driver asks the compiler library to decode; here the decoder is this module).
//!
//! The virtual NPU's compiler is OpenVINO's CPU plugin: the layers and times are the CPU plugin's
//! per-node performance counters of that execution (every executed layer is one `SW` task). The
//! raw format is this platform's own.

use std::ffi::c_char;
use std::sync::{Arc, Mutex};

use crate::export::{guard, out, set_cstr, ZeResult};
use crate::objects::{create, destroy, device_in, get, same_driver, DriverKind, Kind};
use crate::sys::npu::*;
use crate::sys::*;

use super::engine::LayerTime;
use super::graph::graph_from;

/// A query's raw profiling output, written by the execution that used the query.
pub type RawOutput = Arc<Mutex<Vec<u8>>>;

/// `ze_graph_profiling_pool_handle_t`.
pub struct Pool {
    /// Which slots hold a live query.
    taken: Mutex<Vec<bool>>,
}

/// `ze_graph_profiling_query_handle_t`.
pub struct Query {
    pool: usize,
    index: usize,
    pub raw: RawOutput,
}

impl Kind for Pool {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0PPOOL");
}
impl Kind for Query {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0PQERY");
}

/// Validates a query handle of the NPU driver.
///
/// # Safety
/// As for [`crate::objects::get`].
pub unsafe fn query_from<'a>(h: ze_graph_profiling_query_handle_t) -> ZeResult<&'a crate::objects::Object<Query>> {
    // SAFETY: per the contract.
    let q = unsafe { get::<Query, _>(h) }?;
    same_driver(DriverKind::Npu, q)?;
    Ok(q)
}

/// Encodes one execution's layer times (the raw buffer).
pub fn encode(layers: &[LayerTime], start_ns: u64) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&start_ns.to_le_bytes());
    for l in layers {
        for s in [&l.name, &l.node_type, &l.exec_type] {
            v.extend_from_slice(&(s.len() as u32).to_le_bytes());
            v.extend_from_slice(s.as_bytes());
        }
        v.push(l.status);
        v.extend_from_slice(&l.real_ns.to_le_bytes());
        v.extend_from_slice(&l.cpu_ns.to_le_bytes());
    }
    v
}

/// Reads the raw buffer back, front to back.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn text(&mut self) -> Option<String> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        Some(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
}

fn decode(raw: &[u8]) -> Option<(u64, Vec<LayerTime>)> {
    let mut c = Cursor(raw);
    let start = c.u64()?;
    let mut layers = Vec::new();
    while !c.0.is_empty() {
        layers.push(LayerTime {
            name: c.text()?,
            node_type: c.text()?,
            exec_type: c.text()?,
            status: c.take(1)?[0],
            real_ns: c.u64()?,
            cpu_ns: c.u64()?,
        });
    }
    Some((start, layers))
}

/// Copies `bytes` out as the driver does: `*pSize` 0 or too large means the whole size.
///
/// # Safety
/// `p_data` is NULL or has `*p_size` writable bytes (as the caller set it).
unsafe fn copy_out(bytes: &[u8], p_size: *mut u32, p_data: *mut u8) -> ZeResult {
    // SAFETY: caller-provided in/out parameter.
    let size = unsafe { out(p_size) }?;
    if *size == 0 || *size as usize > bytes.len() {
        *size = bytes.len() as u32;
    }
    if !p_data.is_null() {
        // SAFETY: per the contract, *size writable bytes at p_data.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p_data, *size as usize) };
    }
    Ok(())
}

fn as_bytes<T>(v: &[T]) -> &[u8] {
    // SAFETY: plain C structures, fully initialised (zeroed, then written).
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn layer_infos(start: u64, layers: &[LayerTime]) -> Vec<ze_profiling_layer_info> {
    let mut t = start;
    layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            // SAFETY: zero is a valid bit pattern for this plain C struct.
            let mut info: ze_profiling_layer_info = unsafe { std::mem::zeroed() };
            set_cstr(&mut info.name, &l.name);
            set_cstr(&mut info.layer_type, &l.node_type);
            info.status = match l.status {
                1 => ZE_LAYER_STATUS_OPTIMIZED_OUT,
                2 => ZE_LAYER_STATUS_EXECUTED,
                _ => ZE_LAYER_STATUS_NOT_RUN,
            };
            info.start_time_ns = t;
            info.duration_ns = l.real_ns;
            info.layer_id = i as u32;
            // Everything runs as software on the CPU plugin.
            info.sw_ns = l.cpu_ns;
            t += l.real_ns;
            info
        })
        .collect()
}

fn task_infos(start: u64, layers: &[LayerTime]) -> Vec<ze_profiling_task_info> {
    let mut t = start;
    let mut v = Vec::new();
    for l in layers {
        if l.status != 2 {
            continue;
        }
        // SAFETY: zero is a valid bit pattern for this plain C struct.
        let mut info: ze_profiling_task_info = unsafe { std::mem::zeroed() };
        set_cstr(&mut info.name, &l.name);
        set_cstr(&mut info.layer_type, &l.node_type);
        info.exec_type = ZE_TASK_EXECUTE_SW;
        info.start_time_ns = t;
        info.duration_ns = l.real_ns;
        info.task_id = v.len() as u32;
        t += l.real_ns;
        v.push(info);
    }
    v
}

pub unsafe extern "C" fn pfnProfilingPoolCreate(
    hGraph: ze_graph_handle_t,
    count: u32,
    ph: *mut ze_graph_profiling_pool_handle_t,
) -> ze_result_t {
    guard("pfnProfilingPoolCreate", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        if !g.graph.profiling {
            return Err(ZE_RESULT_ERROR_NOT_AVAILABLE);
        }
        if count == 0 {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        if ph.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: a non-NULL out-parameter.
        unsafe { *ph = create::<Pool, _>(DriverKind::Npu, Pool { taken: Mutex::new(vec![false; count as usize]) }) };
        Ok(())
    })
}

pub unsafe extern "C" fn pfnProfilingPoolDestroy(h: ze_graph_profiling_pool_handle_t) -> ze_result_t {
    guard("pfnProfilingPoolDestroy", || {
        // SAFETY: handle validation.
        let p = unsafe { get::<Pool, _>(h) }?;
        same_driver(DriverKind::Npu, p)?;
        if p.taken.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|&t| t) {
            return Err(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
        }
        // SAFETY: validated above; destroyed once.
        drop(unsafe { destroy::<Pool, _>(h) }?);
        Ok(())
    })
}

pub unsafe extern "C" fn pfnProfilingQueryCreate(
    hPool: ze_graph_profiling_pool_handle_t,
    index: u32,
    ph: *mut ze_graph_profiling_query_handle_t,
) -> ze_result_t {
    guard("pfnProfilingQueryCreate", || {
        // SAFETY: handle validation.
        let p = unsafe { get::<Pool, _>(hPool) }?;
        same_driver(DriverKind::Npu, p)?;
        let mut taken = p.taken.lock().unwrap_or_else(|e| e.into_inner());
        let slot = taken.get_mut(index as usize).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        if ph.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        if *slot {
            return Err(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
        }
        *slot = true;
        let q = Query { pool: hPool as usize, index: index as usize, raw: Arc::default() };
        // SAFETY: a non-NULL out-parameter.
        unsafe { *ph = create::<Query, _>(DriverKind::Npu, q) };
        Ok(())
    })
}

pub unsafe extern "C" fn pfnProfilingQueryDestroy(h: ze_graph_profiling_query_handle_t) -> ze_result_t {
    guard("pfnProfilingQueryDestroy", || {
        // SAFETY: handle validation.
        let q = unsafe { query_from(h) }?;
        // SAFETY: the pool handle is looked up in the live-object set, never read if destroyed.
        if let Ok(p) = unsafe { get::<Pool, _>(q.pool as ze_graph_profiling_pool_handle_t) } {
            if let Some(slot) = p.taken.lock().unwrap_or_else(|e| e.into_inner()).get_mut(q.index) {
                *slot = false;
            }
        }
        // SAFETY: validated above; destroyed once.
        drop(unsafe { destroy::<Query, _>(h) }?);
        Ok(())
    })
}

pub unsafe extern "C" fn pfnProfilingQueryGetData(
    h: ze_graph_profiling_query_handle_t,
    type_: ze_graph_profiling_type_t,
    pSize: *mut u32,
    pData: *mut u8,
) -> ze_result_t {
    guard("pfnProfilingQueryGetData", || {
        // SAFETY: handle validation.
        let q = unsafe { query_from(h) }?;
        if pSize.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let raw = q.raw.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // Nothing ran with this query yet: no layers.
        let decoded = || if raw.is_empty() { Ok((0, Vec::new())) } else { decode(&raw).ok_or(ZE_RESULT_ERROR_UNKNOWN) };
        match type_ {
            ZE_GRAPH_PROFILING_RAW => {
                // SAFETY: the caller's size and buffer, per the extension's contract.
                unsafe { copy_out(&raw, pSize, pData) }
            }
            ZE_GRAPH_PROFILING_LAYER_LEVEL => {
                let (start, layers) = decoded()?;
                // SAFETY: as above.
                unsafe { copy_out(as_bytes(&layer_infos(start, &layers)), pSize, pData) }
            }
            ZE_GRAPH_PROFILING_TASK_LEVEL => {
                let (start, layers) = decoded()?;
                // SAFETY: as above.
                unsafe { copy_out(as_bytes(&task_infos(start, &layers)), pSize, pData) }
            }
            _ => Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        }
    })
}

pub unsafe extern "C" fn pfnDeviceGetProfilingDataProperties(
    hDevice: ze_device_handle_t,
    p: *mut ze_device_profiling_data_properties_t,
) -> ze_result_t {
    guard("pfnDeviceGetProfilingDataProperties", || -> ZeResult {
        // SAFETY: handle validation.
        unsafe { device_in(DriverKind::Npu, hDevice) }?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        p.extensionVersion = ZE_PROFILING_DATA_EXT_VERSION_1_0;
        Ok(())
    })
}

/// The decoding log (`GraphProfilingQuery::getLogString`): decoding here never fails, so it is
/// empty. `*pSize` 0 asks for the size.
pub unsafe extern "C" fn pfnProfilingLogGetString(
    h: ze_graph_profiling_query_handle_t,
    pSize: *mut u32,
    pLog: *mut c_char,
) -> ze_result_t {
    guard("pfnProfilingLogGetString", || {
        // SAFETY: handle validation.
        unsafe { query_from(h) }?;
        // SAFETY: caller-provided in/out parameter.
        let size = unsafe { out(pSize) }?;
        let log = c"";
        if *size == 0 {
            *size = log.to_bytes_with_nul().len() as u32;
            return Ok(());
        }
        if pLog.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let n = (*size as usize).min(log.to_bytes_with_nul().len());
        // SAFETY: the caller provides *size >= n writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(log.as_ptr(), pLog, n) };
        *size = n as u32;
        Ok(())
    })
}

/// The `ZE_extension_profiling_data` table (1.0).
pub static PROFILING_TABLE: ze_graph_profiling_dditable_ext_t = ze_graph_profiling_dditable_ext_t {
    pfnProfilingPoolCreate: Some(pfnProfilingPoolCreate),
    pfnProfilingPoolDestroy: Some(pfnProfilingPoolDestroy),
    pfnProfilingQueryCreate: Some(pfnProfilingQueryCreate),
    pfnProfilingQueryDestroy: Some(pfnProfilingQueryDestroy),
    pfnProfilingQueryGetData: Some(pfnProfilingQueryGetData),
    pfnDeviceGetProfilingDataProperties: Some(pfnDeviceGetProfilingDataProperties),
    pfnProfilingLogGetString: Some(pfnProfilingLogGetString),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_output_round_trips_and_decodes_to_layers_and_tasks() {
        let layers = vec![
            LayerTime {
                name: "in".into(),
                node_type: "Parameter".into(),
                exec_type: "undef".into(),
                status: 0,
                real_ns: 0,
                cpu_ns: 0,
            },
            LayerTime {
                name: "mul".into(),
                node_type: "Multiply".into(),
                exec_type: "jit".into(),
                status: 2,
                real_ns: 5000,
                cpu_ns: 4000,
            },
        ];
        let raw = encode(&layers, 100);
        let (start, back) = decode(&raw).unwrap();
        assert_eq!((start, back.len(), back[1].name.as_str(), back[1].real_ns), (100, 2, "mul", 5000));
        let l = layer_infos(start, &back);
        assert_eq!(l[1].status, ZE_LAYER_STATUS_EXECUTED);
        assert_eq!((l[1].start_time_ns, l[1].duration_ns, l[1].sw_ns), (100, 5000, 4000));
        let t = task_infos(start, &back);
        assert_eq!(t.len(), 1, "one task per executed layer");
        assert_eq!(t[0].exec_type, ZE_TASK_EXECUTE_SW);
    }
}
