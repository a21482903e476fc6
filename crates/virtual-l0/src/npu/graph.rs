//! Graph objects and the `ZE_extension_graph` table.
//!
//! A graph handle is an [`Object<GraphObject>`](crate::objects::Object) of the NPU driver. The object
//! holds an `Arc<Graph>`: recorded `GraphExecute` commands hold another reference, so a command list
//! recorded before `pfnDestroy` stays runnable.
//!
//! **Argument snapshot rule.** `pfnSetArgumentValue` is graph-global in the API, but the NPU plugin's
//! infer requests call `SetArgumentValue × n` then `pfnAppendGraphExecute` concurrently from different
//! threads. This driver keeps the pending values **per (graph, calling thread)**, layered over the
//! graph-wide last values: `SetArgumentValue` writes both; `AppendGraphExecute` records a snapshot made of
//! the graph-wide values overridden by every value the calling thread set. A thread that sets all of its
//! arguments before appending is therefore isolated from every other thread, and a caller that sets
//! values on one thread and appends on another (not concurrently) still sees them. Later
//! `SetArgumentValue` calls never change a recorded command; only mutable-command-list updates do.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use crate::cmdlist::{collect_events, ArgValue, Command, GraphExecutable};
use crate::export::{guard, input, out, set_cstr, trace, ZeResult};
use crate::objects::{command_list_from, context_from, create, destroy, device_in, get, same_driver, DriverKind, Kind};
use crate::sys::npu::*;
use crate::sys::*;

use super::cache;
use super::engine::{self, Conversions, Elem};
use super::format::{self, BuildFlags};
use super::ir;

/// The counter of graph arguments in imported shareable memory, named once (it is counted on every
/// execution): `npu.graph_args.` and `memory::shared_counter`.
fn graph_args_shared() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| format!("npu.graph_args.{}", crate::memory::shared_counter()))
}

/// The graph extension version this driver implements and advertises.
pub const GRAPH_EXT_VERSION: u32 = ZE_GRAPH_EXT_VERSION_1_16;
/// The compiler version reported by `pfnDeviceGetGraphProperties` (≤ 7.26 makes the plugin run
/// EliminateIdentity before serialising).
pub const COMPILER_VERSION: ze_graph_compiler_version_info_t = ze_graph_compiler_version_info_t { major: 7, minor: 25 };
/// The highest OpenVINO opset the "compiler" accepts.
pub const MAX_OPSET: u32 = 16;

/// One graph argument as reported to the plugin.
#[derive(Debug, Clone)]
pub struct Arg {
    pub input: bool,
    /// Input: the Parameter's friendly name. Output: the producer node's friendly name.
    pub name: String,
    /// `debug_friendly_name`: the Parameter's or the Result's own friendly name.
    pub debug_name: String,
    pub tensor_names: Vec<String>,
    pub shape: Vec<u64>,
    /// The model's element type.
    pub network: Elem,
    /// The element type the argument memory holds (after build-flag conversions).
    pub device: Elem,
    /// `ze_graph_argument_layout_t`.
    pub layout: u32,
    /// Named in the build flags' `NPU_ENABLE_STRIDES_FOR` (by its Parameter or Result name): the
    /// argument accepts strides (`supportsDynamicStrides`).
    pub dynamic_strides: bool,
}

impl Arg {
    /// Bytes from the argument's pointer to the end of its last element: the dense size, or with
    /// element `strides` (innermost first) the extent they reach.
    fn extent(&self, strides: Option<[u32; 5]>) -> usize {
        let elems = match strides {
            None => self.shape.iter().product::<u64>() as usize,
            Some(st) => {
                if self.shape.contains(&0) {
                    return 0;
                }
                let rank = self.shape.len();
                1 + self
                    .shape
                    .iter()
                    .enumerate()
                    .map(|(d, &n)| (n as usize - 1) * st[rank - 1 - d] as usize)
                    .sum::<usize>()
            }
        };
        elems * self.device.size
    }
}

#[derive(Default)]
struct Pending {
    global: Vec<ArgValue>,
    per_thread: HashMap<ThreadId, Vec<Option<ArgValue>>>,
}

/// A compiled graph.
pub struct Graph {
    pub args: Vec<Arg>,
    pub n_inputs: usize,
    /// The native blob (owned by the graph; `pfnGetNativeBinary2` hands out a view of it).
    pub native: Vec<u8>,
    compiled: engine::Compiled,
    pending: Mutex<Pending>,
    /// The NPU context the graph was created on: its arguments are looked up there, as the real
    /// driver resolves buffer objects per context (`elf_parser.cpp` `applyInputOutputs`).
    pub context: usize,
    /// `ze_graph_properties_flags_t` as `pfnGetProperties3` reports them.
    pub props: u32,
    /// Built with `PERF_COUNT=YES` (or `ZE_GRAPH_FLAG_ENABLE_PROFILING`): executions need a
    /// profiling query and fill it.
    pub profiling: bool,
}

impl Graph {
    /// Changes argument `index` as the calling thread sees it.
    fn set_arg(&self, index: usize, change: impl FnOnce(&mut ArgValue)) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.args.len();
        p.global.resize(n, ArgValue::default());
        let tid = std::thread::current().id();
        let mut value = p.per_thread.get(&tid).and_then(|m| m[index]).unwrap_or(p.global[index]);
        change(&mut value);
        p.global[index] = value;
        let mine = p.per_thread.entry(tid).or_insert_with(|| vec![None; n]);
        mine[index] = Some(value);
    }

    fn snapshot(&self) -> Vec<ArgValue> {
        let p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut v = p.global.clone();
        v.resize(self.args.len(), ArgValue::default());
        if let Some(mine) = p.per_thread.get(&std::thread::current().id()) {
            for (slot, m) in v.iter_mut().zip(mine) {
                if let Some(x) = m {
                    *slot = *x;
                }
            }
        }
        v
    }
}

impl Graph {
    /// Like a real NPU, the graph can only reach memory mapped through its driver: every argument must
    /// lie inside an allocation or import of the NPU driver, with room for the whole tensor. Counts the
    /// arguments that are imports (`npu.graph_args.dma_buf` — `nt_handle` on Windows — and `npu.graph_args.sysmem`): those
    /// executions read or wrote the producer's memory itself.
    /// The allocation behind argument `i` (`v`), or why there is none: never set, not memory of
    /// the graph's context, or too small for the tensor (as its strides lay it out).
    fn resolve(&self, i: usize, v: &ArgValue) -> Result<crate::memory::AllocInfo, String> {
        let (a, arg) = (v.ptr, &self.args[i]);
        if a == 0 {
            return Err(format!("graph argument {i} ({:?}) was never set", arg.name));
        }
        let info = crate::memory::lookup_in(DriverKind::Npu, self.context, a as *const c_void).ok_or_else(|| {
            format!(
                "graph argument {i} ({:?}) at {a:#x} is not memory of the graph's NPU context (allocate or import it first)",
                arg.name
            )
        })?;
        let bytes = arg.extent(v.strides);
        if a + bytes > info.base + info.size {
            return Err(format!(
                "graph argument {i} ({:?}) needs {bytes} bytes at {a:#x} but its allocation ends at {:#x}",
                arg.name,
                info.base + info.size
            ));
        }
        Ok(info)
    }

    /// At append, the driver resolves every argument to a buffer object of the graph's context with
    /// room for the tensor, or refuses the command with UNINITIALIZED (linux-npu-driver 1.32.1
    /// `elf_parser.cpp` `applyInputOutputs` through `createInferenceExecuteCommand`).
    fn check_args_at_append(&self, args: &[ArgValue]) -> ZeResult {
        for (i, v) in args.iter().enumerate() {
            self.resolve(i, v).map_err(|e| {
                trace(format_args!("npu graph execute: {e}"));
                ZE_RESULT_ERROR_UNINITIALIZED
            })?;
        }
        Ok(())
    }

    /// At execution (arguments may have been updated through a mutable command list since).
    fn check_args(&self, args: &[ArgValue]) -> Result<(), (ze_result_t, String)> {
        let mut fd = 0;
        let mut sys = 0;
        for (i, (v, arg)) in args.iter().zip(&self.args).enumerate() {
            let a = v.ptr;
            let info = self.resolve(i, v).map_err(|e| (ZE_RESULT_ERROR_INVALID_ARGUMENT, e))?;
            // Inferred from the kernel: the job's MMU access faults and the job fails.
            if info.poisoned {
                return Err((ZE_RESULT_ERROR_UNKNOWN, format!(
                    "graph argument {i} ({:?}) at {a:#x} is a dma-buf import whose handle was closed when another import of the same buffer in this context was freed",
                    arg.name
                )));
            }
            if !arg.input && info.read_only {
                return Err((ZE_RESULT_ERROR_DEVICE_LOST, format!(
                    "graph output {i} ({:?}) at {a:#x} is read-only for the NPU (imported write-combined, as OpenVINO imports TensorType::Input memory): the NPU's write faults",
                    arg.name
                )));
            }
            match info.origin {
                crate::memory::Origin::ImportedFd => fd += 1,
                crate::memory::Origin::ImportedSysmem => sys += 1,
                _ => {}
            }
        }
        if fd > 0 {
            crate::counters::add(graph_args_shared(), fd);
        }
        if sys > 0 {
            crate::counters::add("npu.graph_args.sysmem", sys);
        }
        Ok(())
    }
}

impl GraphExecutable for Graph {
    fn execute(&self, args: &[ArgValue], profile: Option<&crate::cmdlist::ProfileOutput>) -> ze_result_t {
        if let Err((code, e)) = self.check_args(args) {
            eprintln!("[virtual NPU] graph execution refused: {e}");
            return code;
        }
        super::idle::busy(self.context);
        // Strided arguments go through dense staging buffers: the engine reads and writes dense
        // tensors (the NPU's DMA does the gathering on hardware).
        let mut staging: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut ptrs: Vec<usize> = args.iter().map(|v| v.ptr).collect();
        for (i, (v, arg)) in args.iter().zip(&self.args).enumerate() {
            if let Some(st) = v.strides {
                let mut dense = vec![0u8; arg.extent(None)];
                if arg.input {
                    // SAFETY: check_args found `extent(strides)` bytes of NPU memory at v.ptr.
                    unsafe { strided_copy(arg, st, v.ptr as *mut u8, dense.as_mut_ptr(), true) };
                }
                ptrs[i] = dense.as_mut_ptr() as usize;
                staging.push((i, dense));
            }
        }
        let result = match profile.filter(|_| self.profiling) {
            Some(out) => {
                let start = crate::os::monotonic_ns();
                self.compiled.infer_profiled(&ptrs).map(|layers| {
                    *out.lock().unwrap_or_else(|e| e.into_inner()) = super::profiling::encode(&layers, start);
                })
            }
            None => self.compiled.infer(&ptrs),
        };
        if result.is_ok() {
            for (i, dense) in &mut staging {
                let (arg, v) = (&self.args[*i], args[*i]);
                if let (false, Some(st)) = (arg.input, v.strides) {
                    // SAFETY: as above; the output's strided extent is NPU memory at v.ptr.
                    unsafe { strided_copy(arg, st, v.ptr as *mut u8, dense.as_mut_ptr(), false) };
                }
            }
        }
        match result {
            Ok(()) => {
                crate::counters::add("npu.inferences", 1);
                ZE_RESULT_SUCCESS
            }
            Err(e) => {
                eprintln!("[virtual NPU] graph execution failed: {e}");
                ZE_RESULT_ERROR_UNKNOWN
            }
        }
    }
}

/// What a graph handle points to.
pub struct GraphObject {
    pub graph: Arc<Graph>,
    pub log: String,
}
impl Kind for GraphObject {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0GRAPH");
}

/// What a build-log handle points to.
pub struct BuildLog {
    pub text: String,
}
impl Kind for BuildLog {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0BLDLG");
}

thread_local! {
    static LAST_LOG_THREAD: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}
static LAST_LOG: Mutex<String> = Mutex::new(String::new());

fn record_log(text: &str) {
    LAST_LOG_THREAD.with(|l| *l.borrow_mut() = Some(text.to_string()));
    *LAST_LOG.lock().unwrap_or_else(|e| e.into_inner()) = text.to_string();
}

fn last_log() -> String {
    LAST_LOG_THREAD
        .with(|l| l.borrow().clone())
        .unwrap_or_else(|| LAST_LOG.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// Validates a graph handle.
///
/// # Safety
/// As for [`crate::objects::get`].
pub unsafe fn graph_from<'a>(h: ze_graph_handle_t) -> ZeResult<&'a crate::objects::Object<GraphObject>> {
    // SAFETY: per the contract.
    let g = unsafe { get::<GraphObject, _>(h) }?;
    same_driver(DriverKind::Npu, g)?;
    Ok(g)
}

fn layout_code(s: &str) -> Option<u32> {
    Some(match s.trim().to_ascii_uppercase().as_str() {
        "ANY" | "..." | "" => ZE_GRAPH_ARGUMENT_LAYOUT_ANY,
        "NCHW" => ZE_GRAPH_ARGUMENT_LAYOUT_NCHW,
        "NHWC" => ZE_GRAPH_ARGUMENT_LAYOUT_NHWC,
        "NCDHW" => ZE_GRAPH_ARGUMENT_LAYOUT_NCDHW,
        "NDHWC" => ZE_GRAPH_ARGUMENT_LAYOUT_NDHWC,
        "OIHW" => ZE_GRAPH_ARGUMENT_LAYOUT_OIHW,
        "C" => ZE_GRAPH_ARGUMENT_LAYOUT_C,
        "CHW" => ZE_GRAPH_ARGUMENT_LAYOUT_CHW,
        "HW" => ZE_GRAPH_ARGUMENT_LAYOUT_HW,
        "NC" => ZE_GRAPH_ARGUMENT_LAYOUT_NC,
        "CN" => ZE_GRAPH_ARGUMENT_LAYOUT_CN,
        "BLOCKED" => ZE_GRAPH_ARGUMENT_LAYOUT_BLOCKED,
        _ => return None,
    })
}

fn default_layout(rank: usize) -> u32 {
    match rank {
        1 => ZE_GRAPH_ARGUMENT_LAYOUT_C,
        2 => ZE_GRAPH_ARGUMENT_LAYOUT_NC,
        3 => ZE_GRAPH_ARGUMENT_LAYOUT_CHW,
        4 => ZE_GRAPH_ARGUMENT_LAYOUT_NCHW,
        5 => ZE_GRAPH_ARGUMENT_LAYOUT_NCDHW,
        _ => ZE_GRAPH_ARGUMENT_LAYOUT_ANY,
    }
}

fn truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_uppercase().as_str(), "YES" | "TRUE" | "1" | "ON")
}

/// Resolves a build-flag key (an index, or a tensor/friendly name) to an argument position.
fn resolve_key(key: &str, names: &[(String, Vec<String>)]) -> Option<usize> {
    if let Ok(i) = key.parse::<usize>() {
        return (i < names.len()).then_some(i);
    }
    names.iter().position(|(n, t)| n == key || t.iter().any(|x| x == key))
}

/// Builds a graph from a validated descriptor. Errors are build-log text.
fn build(context: usize, format_: u32, data: &[u8], build_flags: &str) -> Result<Graph, String> {
    let (ir_in, flags_text) = match format_ {
        ZE_GRAPH_FORMAT_NGRAPH_LITE => (format::parse_ngraph_lite(data)?, build_flags.to_string()),
        ZE_GRAPH_FORMAT_NATIVE => format::parse_native(data)?,
        other => return Err(format!("graph format {other:#x} is not supported (NGRAPH_LITE 0x2 and NATIVE 0x1 are)")),
    };
    let flags: BuildFlags = format::parse_build_flags(&flags_text);
    for (k, v) in &flags.config {
        if !COMPILER_OPTIONS.contains(&k.as_str()) {
            return Err(format!("compiler option {k}={v:?} is not supported by the virtual NPU's compiler"));
        }
    }
    let profiling = flags.config.get("PERF_COUNT").is_some_and(|v| truthy(v));
    let xml = std::str::from_utf8(&ir_in.xml).map_err(|_| "the IR XML is not valid UTF-8".to_string())?;
    let summary = ir::summarize(xml)?;
    if !summary.stateful_ops.is_empty() {
        return Err(format!(
            "stateful models are not supported by the virtual NPU (found {})",
            summary.stateful_ops.join(", ")
        ));
    }
    let rm = engine::read_model(&ir_in.xml, &ir_in.weights)?;
    if rm.inputs.len() != summary.inputs.len() || rm.outputs.len() != summary.outputs.len() {
        return Err(format!(
            "the IR declares {} Parameters and {} Results but OpenVINO read {} inputs and {} outputs",
            summary.inputs.len(),
            summary.outputs.len(),
            rm.inputs.len(),
            rm.outputs.len()
        ));
    }

    // Model port k → IR layer, by tensor name first, then in order among the unmatched.
    fn match_ports<T>(ports: &[engine::PortInfo], layers: &[T], names: impl Fn(&T) -> &[String]) -> Vec<usize> {
        let mut used = vec![false; layers.len()];
        let mut m: Vec<Option<usize>> = ports
            .iter()
            .map(|p| {
                let n = p.any_name.as_ref()?;
                let i = (0..layers.len()).find(|&i| !used[i] && names(&layers[i]).iter().any(|x| x == n))?;
                used[i] = true;
                Some(i)
            })
            .collect();
        for slot in m.iter_mut().filter(|s| s.is_none()) {
            let i = (0..layers.len()).find(|&i| !used[i]).unwrap_or(0);
            if i < used.len() {
                used[i] = true;
            }
            *slot = Some(i);
        }
        m.into_iter().map(|x| x.unwrap_or(0)).collect()
    }
    let in_map = match_ports(&rm.inputs, &summary.inputs, |l| &l.tensor_names);
    let out_map = match_ports(&rm.outputs, &summary.outputs, |l| &l.tensor_names);

    let in_names: Vec<(String, Vec<String>)> =
        in_map.iter().map(|&i| (summary.inputs[i].name.clone(), summary.inputs[i].tensor_names.clone())).collect();
    let out_names: Vec<(String, Vec<String>)> = out_map
        .iter()
        .zip(&rm.outputs)
        .map(|(&i, p)| {
            let o = &summary.outputs[i];
            let mut t = o.tensor_names.clone();
            if t.is_empty() {
                t.extend(p.any_name.clone());
            }
            (o.producer.clone(), t)
        })
        .collect();

    // Precisions from the build flags: honoured as conversions where they differ from the model.
    let mut conv = Conversions::default();
    let precision = |list: &[(String, String)],
                     names: &[(String, Vec<String>)],
                     ports: &[engine::PortInfo],
                     into: &mut Vec<(usize, Elem)>,
                     what: &str|
     -> Result<(), String> {
        for (k, v) in list {
            let i = resolve_key(k, names)
                .ok_or_else(|| format!("--{what}_precisions names {k:?}, which is not a model {what}"))?;
            let el = Elem::from_flag(v).ok_or_else(|| {
                format!("--{what}_precisions {k}:{v}: precision {v} is not supported by the virtual NPU")
            })?;
            if el != ports[i].elem {
                into.push((i, el));
            }
        }
        Ok(())
    };
    precision(&flags.inputs_precisions, &in_names, &rm.inputs, &mut conv.inputs, "inputs")?;
    precision(&flags.outputs_precisions, &out_names, &rm.outputs, &mut conv.outputs, "outputs")?;
    // Layouts from the build flags describe the argument memory. The plugin derives them from the
    // model (its declared layout, else the default for the rank), so they are recorded as reported
    // layouts; one that contradicts the layout the model declares would need a transposition, which
    // this driver refuses rather than silently ignoring.
    let layouts = |list: &[(String, String)],
                   names: &[(String, Vec<String>)],
                   ports: &[engine::PortInfo],
                   declared: &[Option<String>],
                   what: &str|
     -> Result<Vec<u32>, String> {
        let mut v: Vec<u32> = ports.iter().map(|p| default_layout(p.shape.len())).collect();
        for (k, l) in list {
            let i = resolve_key(k, names)
                .ok_or_else(|| format!("--{what}_layouts names {k:?}, which is not a model {what}"))?;
            let code = layout_code(l)
                .ok_or_else(|| format!("--{what}_layouts {k}:{l}: layout {l} is not supported by the virtual NPU"))?;
            let letters = l.trim().to_ascii_uppercase();
            if code != ZE_GRAPH_ARGUMENT_LAYOUT_ANY && code != ZE_GRAPH_ARGUMENT_LAYOUT_BLOCKED {
                if letters.len() != ports[i].shape.len() {
                    return Err(format!(
                        "--{what}_layouts {k}:{l} does not match the rank-{} {what} tensor",
                        ports[i].shape.len()
                    ));
                }
                if let Some(d) = &declared[i] {
                    if *d != letters {
                        return Err(format!(
                            "--{what}_layouts {k}:{l} differs from the layout the model declares ({d}): layout conversion is not supported by the virtual NPU"
                        ));
                    }
                }
            }
            v[i] = code;
        }
        Ok(v)
    };
    let in_declared: Vec<Option<String>> = in_map.iter().map(|&i| summary.inputs[i].layout.clone()).collect();
    let out_declared: Vec<Option<String>> = out_map.iter().map(|&i| summary.outputs[i].layout.clone()).collect();
    let in_layouts = layouts(&flags.inputs_layouts, &in_names, &rm.inputs, &in_declared, "inputs")?;
    let out_layouts = layouts(&flags.outputs_layouts, &out_names, &rm.outputs, &out_declared, "outputs")?;

    let network_in: Vec<Elem> = rm.inputs.iter().map(|p| p.elem).collect();
    let network_out: Vec<Elem> = rm.outputs.iter().map(|p| p.elem).collect();
    let compiled = engine::compile(rm, &conv, profiling)?;

    // `NPU_ENABLE_STRIDES_FOR`: the arguments (by Parameter or Result name) the compiler makes
    // stride-capable. **Inferred**: only on NPU 40xx+ (the driver's own suite skips strides on 37xx).
    let strided: Vec<String> = flags
        .config
        .get("NPU_ENABLE_STRIDES_FOR")
        .filter(|_| crate::profile::current().npu_generation != crate::profile::NpuGeneration::Npu37xx)
        .map(|v| v.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect())
        .unwrap_or_default();
    let mut args = Vec::new();
    for (k, p) in compiled.inputs.iter().enumerate() {
        args.push(Arg {
            input: true,
            name: in_names[k].0.clone(),
            tensor_names: in_names[k].1.clone(),
            shape: p.shape.clone(),
            network: network_in[k],
            device: p.elem,
            layout: in_layouts[k],
            debug_name: in_names[k].0.clone(),
            dynamic_strides: strided.contains(&in_names[k].0),
        });
    }
    for (k, p) in compiled.outputs.iter().enumerate() {
        args.push(Arg {
            input: false,
            name: out_names[k].0.clone(),
            tensor_names: out_names[k].1.clone(),
            shape: p.shape.clone(),
            network: network_out[k],
            device: p.elem,
            layout: out_layouts[k],
            debug_name: summary.outputs[out_map[k]].result_name.clone(),
            dynamic_strides: strided.contains(&summary.outputs[out_map[k]].result_name),
        });
    }
    for a in &args {
        if a.shape.len() > ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE {
            return Err(format!(
                "argument {:?} has rank {}; graph arguments are limited to {} dimensions",
                a.name,
                a.shape.len(),
                ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE
            ));
        }
        if a.tensor_names.len() > ZE_MAX_GRAPH_TENSOR_NAMES_SIZE {
            return Err(format!("argument {:?} has more than {ZE_MAX_GRAPH_TENSOR_NAMES_SIZE} tensor names", a.name));
        }
    }
    let native = format::write_native(&ir_in.xml, &ir_in.weights, &flags_text);
    let n_inputs = compiled.inputs.len();
    let n = args.len();
    Ok(Graph {
        args,
        n_inputs,
        native,
        compiled,
        pending: Mutex::new(Pending { global: vec![ArgValue::default(); n], per_thread: HashMap::new() }),
        context,
        props: if profiling { ZE_GRAPH_PROPERTIES_FLAG_PROFILING_ENABLED } else { 0 },
        profiling,
    })
}

/// Copies between an argument's strided memory at `strided` (element strides `st`, innermost
/// first) and a dense buffer: into `dense` when `gather`, else out of it.
///
/// # Safety
/// `strided` has `arg.extent(Some(st))` bytes, `dense` `arg.extent(None)`; they do not overlap.
unsafe fn strided_copy(arg: &Arg, st: [u32; 5], strided: *mut u8, dense: *mut u8, gather: bool) {
    let rank = arg.shape.len();
    let elem = arg.device.size;
    let count = arg.shape.iter().product::<u64>() as usize;
    let mut index = vec![0u64; rank];
    for k in 0..count {
        let off: usize = (0..rank).map(|d| index[d] as usize * st[rank - 1 - d] as usize).sum::<usize>() * elem;
        // SAFETY: `off + elem` is within the strided extent and `k * elem + elem` within the dense size.
        unsafe {
            if gather {
                std::ptr::copy_nonoverlapping(strided.add(off), dense.add(k * elem), elem);
            } else {
                std::ptr::copy_nonoverlapping(dense.add(k * elem), strided.add(off), elem);
            }
        }
        for d in (0..rank).rev() {
            index[d] += 1;
            if index[d] < arg.shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// The text the driver keeps as a thread's last log after a successful creation: the cache status.
const CACHE_FOUND: &str = "ZE DynamicCaching cache_status_t: cache_status_t::found\n";
const CACHE_STORED: &str = "ZE DynamicCaching cache_status_t: cache_status_t::stored\n";

/// Whether the driver keeps a native blob in NPU memory rather than copying it
/// (linux-npu-driver 1.32.1 `graph.cpp` `getBlobContainerNative`): with
/// `ZE_GRAPH_FLAG_INPUT_GRAPH_PERSISTENT`, a blob inside memory of the context, or one it can import
/// read-only as user memory (`createUntrackedBufferObjectFromUserPtr`).
fn native_blob_imported(context: usize, create_flags: u32, data: &[u8]) -> bool {
    create_flags & ZE_GRAPH_FLAG_INPUT_GRAPH_PERSISTENT != 0
        && (crate::memory::lookup_in(DriverKind::Npu, context, data.as_ptr().cast()).is_some()
            || crate::memory::npu_can_pin(data.as_ptr() as usize, data.len(), true))
}

/// `pfnCreate*` after handle and pointer validation.
///
/// # Safety
/// `desc` fields describe a readable buffer; `build_flags` is NULL or a NUL-terminated string.
#[allow(clippy::too_many_arguments)]
unsafe fn create_graph(
    h_context: ze_context_handle_t,
    h_device: ze_device_handle_t,
    format_: u32,
    p_input: *const u8,
    input_size: usize,
    build_flags: *const c_char,
    create_flags: u32,
    input_hash: Option<u64>,
    ph_graph: *mut ze_graph_handle_t,
    ph_log: *mut ze_graph_build_log_handle_t,
) -> ZeResult {
    // SAFETY: per the contract of the exported functions (any handle we gave out is readable).
    let ctx = unsafe { context_from(h_context) }?;
    same_driver(DriverKind::Npu, ctx)?;
    // SAFETY: as above.
    unsafe { device_in(DriverKind::Npu, h_device) }?;
    // SAFETY: caller-provided out-parameter.
    let out_graph = unsafe { out(ph_graph) }?;
    *out_graph = std::ptr::null_mut();
    // linux-npu-driver 1.32.1 `graph.cpp` `Graph::initialize`: the pointer first, then the size.
    if p_input.is_null() {
        record_log("virtual NPU: graph input pointer is NULL");
        return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    }
    if input_size == 0 {
        record_log("virtual NPU: graph input size is 0");
        return Err(ZE_RESULT_ERROR_INVALID_SIZE);
    }
    // SAFETY: the caller guarantees `input_size` readable bytes at `p_input` (graph descriptor contract).
    let data = unsafe { std::slice::from_raw_parts(p_input, input_size) };
    let flags = if build_flags.is_null() {
        String::new()
    } else {
        // SAFETY: NUL-terminated per the descriptor contract.
        unsafe { CStr::from_ptr(build_flags) }.to_string_lossy().into_owned()
    };
    trace(format_args!(
        "npu graph create: format {format_:#x}, {input_size} bytes, flags {create_flags:#x}, build flags {flags:?}"
    ));
    let ctx = h_context as usize;
    // `Graph::addDeviceConfigToBuildFlags`: the profiling flag becomes a compiler option of the IR.
    let mut flags = flags;
    if format_ == ZE_GRAPH_FORMAT_NGRAPH_LITE && create_flags & ZE_GRAPH_FLAG_ENABLE_PROFILING != 0 {
        if !flags.contains("--config") {
            flags.push_str(" --config");
        }
        flags.push_str(" PERF_COUNT=\"YES\"");
    }
    // linux-npu-driver 1.32.1 `graph.cpp` `getBlobContainerNGraphLite`: IR graphs go through the
    // disk cache unless the caller disables it.
    let key = if format_ == ZE_GRAPH_FORMAT_NGRAPH_LITE && create_flags & ZE_GRAPH_FLAG_DISABLE_CACHING == 0 {
        let input = input_hash.map_or(cache::Input::Ir(data), cache::Input::Hash);
        cache::key(format_, &flags, create_flags, input)
    } else {
        None
    };
    let (result, status) = match key.as_deref().and_then(cache::get) {
        Some(blob) => {
            let g = build(ctx, ZE_GRAPH_FORMAT_NATIVE, &blob, "")
                .map(|g| Graph { props: g.props | ZE_GRAPH_PROPERTIES_FLAG_LOADED_FROM_CACHE, ..g });
            (g, CACHE_FOUND)
        }
        None => {
            let g = build(ctx, format_, data, &flags).map(|g| {
                let props = if format_ == ZE_GRAPH_FORMAT_NATIVE {
                    // A compiled blob always has its own memory; a native one only when imported.
                    if native_blob_imported(ctx, create_flags, data) {
                        ZE_GRAPH_PROPERTIES_FLAG_PRE_COMPILED
                    } else {
                        ZE_GRAPH_PROPERTIES_FLAG_PRE_COMPILED | ZE_GRAPH_PROPERTIES_FLAG_NO_STANDARD_ALLOCATION
                    }
                } else {
                    ZE_GRAPH_PROPERTIES_FLAG_COMPILED
                };
                Graph { props: g.props | props, ..g }
            });
            let status = match (&g, key.as_deref()) {
                (Ok(g), Some(k)) => {
                    cache::put(k, &g.native);
                    CACHE_STORED
                }
                _ => "",
            };
            (g, status)
        }
    };
    let (res, text, last) = match result {
        Ok(g) => {
            let text = format!(
                "virtual NPU: graph with {} inputs and {} outputs compiled for OpenVINO's CPU plugin\n{status}",
                g.n_inputs,
                g.args.len() - g.n_inputs
            );
            crate::counters::add("npu.graphs", 1);
            // Registered with the first graph, so they read 0 rather than "unknown" before any execution.
            crate::counters::add(graph_args_shared(), 0);
            crate::counters::add("npu.graph_args.sysmem", 0);
            *out_graph =
                create::<GraphObject, _>(DriverKind::Npu, GraphObject { graph: Arc::new(g), log: text.clone() });
            (Ok(()), text, status.to_string())
        }
        Err(e) => {
            let text = format!("virtual NPU: graph compilation failed: {e}");
            eprintln!("{text}");
            let code = if format_ != ZE_GRAPH_FORMAT_NGRAPH_LITE && format_ != ZE_GRAPH_FORMAT_NATIVE {
                ZE_RESULT_ERROR_INVALID_ENUMERATION
            } else if format_ == ZE_GRAPH_FORMAT_NATIVE {
                ZE_RESULT_ERROR_INVALID_NATIVE_BINARY
            } else {
                ZE_RESULT_ERROR_INVALID_ARGUMENT
            };
            (Err(code), text.clone(), text)
        }
    };
    // `Graph::create`: the thread's last log holds the whole log after a failure, the cache status
    // after a success.
    record_log(&last);
    if !ph_log.is_null() {
        // SAFETY: non-null caller-provided out-parameter.
        unsafe { *ph_log = create::<BuildLog, _>(DriverKind::Npu, BuildLog { text }) };
    }
    res
}

/// The caller's `ze_graph_input_hash_t`, which keys the disk cache instead of the IR.
///
/// # Safety
/// `first` is a well-formed `pNext` chain.
unsafe fn input_hash(first: *const c_void) -> Option<u64> {
    // SAFETY: per the contract.
    unsafe { crate::export::find::<ze_graph_input_hash_t>(first, ZE_STRUCTURE_TYPE_GRAPH_INPUT_HASH) }
        // SAFETY: the entry with this stype is that structure.
        .map(|h| unsafe { (*h).hash })
}

fn copy_log(text: &str, p_size: *mut u32, p_log: *mut c_char) -> ZeResult {
    // SAFETY: caller-provided in/out parameter.
    let size = unsafe { out(p_size) }?;
    let need = text.len() as u32 + 1;
    if p_log.is_null() || *size == 0 {
        *size = need;
        return Ok(());
    }
    let n = (*size as usize).min(need as usize);
    // SAFETY: the caller provided *size bytes at p_log; we write n <= *size bytes.
    let dst = unsafe { std::slice::from_raw_parts_mut(p_log as *mut u8, n) };
    dst[..n - 1].copy_from_slice(&text.as_bytes()[..n - 1]);
    dst[n - 1] = 0;
    *size = n as u32;
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Table entries
// ---------------------------------------------------------------------------------------------------------

unsafe extern "C" fn pfnCreate(
    hContext: ze_context_handle_t,
    hDevice: ze_device_handle_t,
    desc: *const ze_graph_desc_t,
    phGraph: *mut ze_graph_handle_t,
) -> ze_result_t {
    guard("pfnCreate", || {
        // SAFETY: caller-provided descriptor.
        let d = unsafe { input(desc) }?;
        // SAFETY: forwarded contract; `pNext` is the caller's well-formed chain.
        unsafe {
            create_graph(
                hContext,
                hDevice,
                d.format,
                d.pInput,
                d.inputSize,
                d.pBuildFlags,
                0,
                input_hash(d.pNext),
                phGraph,
                std::ptr::null_mut(),
            )
        }
    })
}

unsafe extern "C" fn pfnCreate2(
    hContext: ze_context_handle_t,
    hDevice: ze_device_handle_t,
    desc: *const ze_graph_desc_2_t,
    phGraph: *mut ze_graph_handle_t,
) -> ze_result_t {
    guard("pfnCreate2", || {
        // SAFETY: caller-provided descriptor.
        let d = unsafe { input(desc) }?;
        // SAFETY: forwarded contract; `pNext` is the caller's well-formed chain.
        unsafe {
            create_graph(
                hContext,
                hDevice,
                d.format,
                d.pInput,
                d.inputSize,
                d.pBuildFlags,
                d.flags,
                input_hash(d.pNext),
                phGraph,
                std::ptr::null_mut(),
            )
        }
    })
}

unsafe extern "C" fn pfnCreate3(
    hContext: ze_context_handle_t,
    hDevice: ze_device_handle_t,
    desc: *const ze_graph_desc_2_t,
    phGraph: *mut ze_graph_handle_t,
    phGraphBuildLog: *mut ze_graph_build_log_handle_t,
) -> ze_result_t {
    guard("pfnCreate3", || {
        // SAFETY: caller-provided descriptor.
        let d = unsafe { input(desc) }?;
        // SAFETY: forwarded contract; `pNext` is the caller's well-formed chain.
        unsafe {
            create_graph(
                hContext,
                hDevice,
                d.format,
                d.pInput,
                d.inputSize,
                d.pBuildFlags,
                d.flags,
                input_hash(d.pNext),
                phGraph,
                phGraphBuildLog,
            )
        }
    })
}

unsafe extern "C" fn pfnDestroy(hGraph: ze_graph_handle_t) -> ze_result_t {
    guard("pfnDestroy", || {
        // SAFETY: validated first; destroy checks the magic again atomically.
        unsafe { graph_from(hGraph) }?;
        // SAFETY: as above.
        drop(unsafe { destroy::<GraphObject, _>(hGraph) }?);
        Ok(())
    })
}

unsafe extern "C" fn pfnGetProperties(hGraph: ze_graph_handle_t, p: *mut ze_graph_properties_t) -> ze_result_t {
    guard("pfnGetProperties", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        p.numGraphArgs = g.graph.args.len() as u32;
        Ok(())
    })
}

unsafe extern "C" fn pfnGetProperties2(hGraph: ze_graph_handle_t, p: *mut ze_graph_properties_2_t) -> ze_result_t {
    guard("pfnGetProperties2", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        p.numGraphArgs = g.graph.args.len() as u32;
        // linux-npu-driver graph.cpp getProperties2/3: always INITIALIZE, so the plugin calls
        // pfnGraphInitialize.
        p.initStageRequired = ZE_GRAPH_STAGE_INITIALIZE;
        Ok(())
    })
}

unsafe extern "C" fn pfnGetProperties3(hGraph: ze_graph_handle_t, p: *mut ze_graph_properties_3_t) -> ze_result_t {
    guard("pfnGetProperties3", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        p.numGraphArgs = g.graph.args.len() as u32;
        // linux-npu-driver graph.cpp getProperties2/3: always INITIALIZE, so the plugin calls
        // pfnGraphInitialize.
        p.initStageRequired = ZE_GRAPH_STAGE_INITIALIZE;
        p.flags = g.graph.props;
        Ok(())
    })
}

macro_rules! fill_common {
    ($p:expr, $a:expr) => {{
        let a: &Arg = $a;
        set_cstr(&mut $p.name, &a.name);
        $p.type_ = if a.input { ZE_GRAPH_ARGUMENT_TYPE_INPUT } else { ZE_GRAPH_ARGUMENT_TYPE_OUTPUT };
        $p.dims = [1; ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE];
        for (d, s) in $p.dims.iter_mut().zip(&a.shape) {
            *d = *s as u32;
        }
        $p.networkPrecision = a.network.ze_precision;
        $p.networkLayout = a.layout;
        $p.devicePrecision = a.device.ze_precision;
        $p.deviceLayout = a.layout;
    }};
}

fn arg_of(g: &Graph, i: u32) -> ZeResult<&Arg> {
    g.args.get(i as usize).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)
}

unsafe extern "C" fn pfnGetArgumentProperties(
    hGraph: ze_graph_handle_t,
    argIndex: u32,
    p: *mut ze_graph_argument_properties_t,
) -> ze_result_t {
    guard("pfnGetArgumentProperties", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        let a = arg_of(&g.graph, argIndex)?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        fill_common!(p, a);
        // SAFETY: the caller's pNext chain.
        unsafe { answer_strides(p.pNext, a) };
        Ok(())
    })
}

unsafe extern "C" fn pfnGetArgumentProperties2(
    hGraph: ze_graph_handle_t,
    argIndex: u32,
    p: *mut ze_graph_argument_properties_2_t,
) -> ze_result_t {
    guard("pfnGetArgumentProperties2", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        let a = arg_of(&g.graph, argIndex)?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        fill_common!(p, a);
        p.quantReverseScale = quant_reverse_scale(a);
        p.quantZeroPoint = 0;
        // SAFETY: the caller's pNext chain.
        unsafe { answer_strides(p.pNext, a) };
        Ok(())
    })
}

/// 1 for inputs, 0 for outputs (linux-npu-driver 1.32.1 `elf_parser.cpp`
/// `ElfParser::getArgumentProperties`).
fn quant_reverse_scale(a: &Arg) -> f32 {
    if a.input {
        1.0
    } else {
        0.0
    }
}

/// Answers a chained `ze_graph_argument_property_strides_t` (linux-npu-driver 1.32.1 `graph.cpp`
/// `setArgumentProperties`, from the blob's dynamic-strides flag).
///
/// # Safety
/// `first` is a well-formed `pNext` chain.
unsafe fn answer_strides(first: *const c_void, a: &Arg) {
    // SAFETY: per the contract.
    if let Some(s) = unsafe {
        crate::export::find::<ze_graph_argument_property_strides_t>(
            first,
            ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_PROPERTY_STRIDES,
        )
    } {
        // SAFETY: the chain entry with this stype is that structure.
        unsafe { (*s).supportsDynamicStrides = a.dynamic_strides };
    }
}

unsafe extern "C" fn pfnGetArgumentProperties3(
    hGraph: ze_graph_handle_t,
    argIndex: u32,
    p: *mut ze_graph_argument_properties_3_t,
) -> ze_result_t {
    guard("pfnGetArgumentProperties3", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        let a = arg_of(&g.graph, argIndex)?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        fill_common!(p, a);
        p.quantReverseScale = quant_reverse_scale(a);
        p.quantZeroPoint = 0;
        p.dims_count = a.shape.len() as u32;
        set_cstr(&mut p.debug_friendly_name, &a.debug_name);
        for (slot, n) in p.associated_tensor_names.iter_mut().zip(&a.tensor_names) {
            set_cstr(slot, n);
        }
        p.associated_tensor_names_count = a.tensor_names.len().min(ZE_MAX_GRAPH_TENSOR_NAMES_SIZE) as u32;
        // SAFETY: the caller's pNext chain.
        unsafe { answer_strides(p.pNext, a) };
        Ok(())
    })
}

unsafe extern "C" fn pfnGraphGetArgumentMetadata(
    hGraph: ze_graph_handle_t,
    argIndex: u32,
    p: *mut ze_graph_argument_metadata_t,
) -> ze_result_t {
    guard("pfnGraphGetArgumentMetadata", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        let a = arg_of(&g.graph, argIndex)?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        p.type_ = if a.input { ZE_GRAPH_ARGUMENT_TYPE_INPUT } else { ZE_GRAPH_ARGUMENT_TYPE_OUTPUT };
        set_cstr(&mut p.friendly_name, &a.name);
        p.data_type = a.network.ze_metadata;
        p.shape = [0; ZE_MAX_GRAPH_TENSOR_REF_DIMS];
        for (d, s) in p.shape.iter_mut().zip(&a.shape) {
            *d = *s;
        }
        p.shape_size = a.shape.len() as u32;
        for (slot, n) in p.tensor_names.iter_mut().zip(&a.tensor_names) {
            set_cstr(slot, n);
        }
        p.tensor_names_count = a.tensor_names.len().min(ZE_MAX_GRAPH_TENSOR_NAMES_SIZE) as u32;
        set_cstr(&mut p.input_name, &a.name);
        Ok(())
    })
}

unsafe extern "C" fn pfnSetArgumentValue(
    hGraph: ze_graph_handle_t,
    argIndex: u32,
    pArgValue: *const c_void,
) -> ze_result_t {
    guard("pfnSetArgumentValue", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        arg_of(&g.graph, argIndex)?;
        if pArgValue.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // A plain value drops the argument's strides (`Graph::setArgumentValue`).
        g.graph.set_arg(argIndex as usize, |v| *v = ArgValue { ptr: pArgValue as usize, strides: None });
        Ok(())
    })
}

unsafe extern "C" fn pfnSetArgumentValue2(
    hGraph: ze_graph_handle_t,
    argIndex: u32,
    pArgValue: *const c_void,
) -> ze_result_t {
    guard("pfnSetArgumentValue2", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        let a = arg_of(&g.graph, argIndex)?;
        if pArgValue.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // linux-npu-driver 1.32.1 `graph.cpp` `setArgumentValue2` / `gatherArgumentValues`: the
        // strides are dropped, then each structure of the chain starting at pArgValue applies in
        // turn: a tensor sets the memory, strides set the strides of an argument that supports
        // them; anything else is INVALID_ARGUMENT.
        g.graph.set_arg(argIndex as usize, |v| v.strides = None);
        // SAFETY: pArgValue starts a chain of graph-argument structures (graph ext 1.15 contract).
        for e in unsafe { crate::export::chain(pArgValue) } {
            match e.stype {
                ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_TENSOR => {
                    // SAFETY: the stype says ze_graph_argument_value_tensor_t.
                    let t = unsafe { &*(e.ptr as *const ze_graph_argument_value_tensor_t) };
                    g.graph.set_arg(argIndex as usize, |v| v.ptr = t.pTensor as usize);
                }
                ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_STRIDES if a.dynamic_strides => {
                    // SAFETY: the stype says ze_graph_argument_value_strides_t.
                    let st = unsafe { &*(e.ptr as *const ze_graph_argument_value_strides_t) };
                    g.graph.set_arg(argIndex as usize, |v| v.strides = Some(st.userStrides));
                }
                _ => {
                    trace(format_args!("npu set argument {argIndex}: structure {:#x} refused", e.stype));
                    return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
                }
            }
        }
        Ok(())
    })
}

unsafe extern "C" fn pfnAppendGraphInitialize(
    hCommandList: ze_command_list_handle_t,
    hGraph: ze_graph_handle_t,
    hSignalEvent: ze_event_handle_t,
    numWaitEvents: u32,
    phWaitEvents: *mut ze_event_handle_t,
) -> ze_result_t {
    guard("pfnAppendGraphInitialize", || {
        // SAFETY: handle validation.
        let list = unsafe { command_list_from(hCommandList) }?;
        same_driver(DriverKind::Npu, list)?;
        // linux-npu-driver 1.32.1 `cmdlist.cpp` `CommandList::appendGraphInitialize`: "Graph object
        // is NULL" is UNINITIALIZED (only a NULL list is INVALID_NULL_HANDLE).
        if hGraph.is_null() {
            return Err(ZE_RESULT_ERROR_UNINITIALIZED);
        }
        // SAFETY: handle validation.
        unsafe { graph_from(hGraph) }?;
        // SAFETY: caller-provided event handles.
        let (signal, waits) = unsafe { collect_events(DriverKind::Npu, hSignalEvent, numWaitEvents, phWaitEvents) }?;
        // Nothing to initialise: a barrier keeps the event semantics.
        let r = list.append_with_events(Command::Barrier, signal, waits);
        if r == ZE_RESULT_SUCCESS {
            Ok(())
        } else {
            Err(r)
        }
    })
}

unsafe extern "C" fn pfnAppendGraphExecute(
    hCommandList: ze_command_list_handle_t,
    hGraph: ze_graph_handle_t,
    hProfilingQuery: ze_graph_profiling_query_handle_t,
    hSignalEvent: ze_event_handle_t,
    numWaitEvents: u32,
    phWaitEvents: *mut ze_event_handle_t,
) -> ze_result_t {
    guard("pfnAppendGraphExecute", || {
        // SAFETY: handle validation.
        let list = unsafe { command_list_from(hCommandList) }?;
        same_driver(DriverKind::Npu, list)?;
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        // `CommandList::appendGraphExecute`: a profiling graph needs a query; another ignores it.
        let profile = if g.graph.profiling {
            if hProfilingQuery.is_null() {
                return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
            }
            // SAFETY: handle validation.
            Some(unsafe { super::profiling::query_from(hProfilingQuery) }?.raw.clone())
        } else {
            None
        };
        // SAFETY: caller-provided event handles.
        let (signal, waits) = unsafe { collect_events(DriverKind::Npu, hSignalEvent, numWaitEvents, phWaitEvents) }?;
        let args = g.graph.snapshot();
        g.graph.check_args_at_append(&args)?;
        let graph: Arc<dyn GraphExecutable> = g.graph.clone();
        let r = list.append_with_events(Command::GraphExecute { graph, args, profile }, signal, waits);
        if r == ZE_RESULT_SUCCESS {
            Ok(())
        } else {
            Err(r)
        }
    })
}

unsafe extern "C" fn pfnGetNativeBinary(hGraph: ze_graph_handle_t, pSize: *mut usize, pBlob: *mut u8) -> ze_result_t {
    guard("pfnGetNativeBinary", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        // SAFETY: caller-provided in/out parameter.
        let size = unsafe { out(pSize) }?;
        let blob = &g.graph.native;
        if pBlob.is_null() {
            *size = blob.len();
            return Ok(());
        }
        if *size < blob.len() {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        // SAFETY: the caller provided *size >= blob.len() writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(blob.as_ptr(), pBlob, blob.len()) };
        *size = blob.len();
        Ok(())
    })
}

unsafe extern "C" fn pfnGetNativeBinary2(
    hGraph: ze_graph_handle_t,
    pSize: *mut usize,
    ppBlob: *mut *const u8,
) -> ze_result_t {
    guard("pfnGetNativeBinary2", || {
        // SAFETY: handle validation.
        let g = unsafe { graph_from(hGraph) }?;
        // SAFETY: caller-provided out-parameters.
        let size = unsafe { out(pSize) }?;
        // SAFETY: as above.
        let blob = unsafe { out(ppBlob) }?;
        *size = g.graph.native.len();
        // Owned by the graph: valid until pfnDestroy.
        *blob = g.graph.native.as_ptr();
        Ok(())
    })
}

fn fill_device_props(
    graph_ext: &mut u32,
    compiler: &mut ze_graph_compiler_version_info_t,
    formats: &mut u32,
    opset: &mut u32,
) {
    *graph_ext = GRAPH_EXT_VERSION;
    *compiler = COMPILER_VERSION;
    *formats = ZE_GRAPH_FORMAT_NGRAPH_LITE;
    *opset = MAX_OPSET;
}

unsafe extern "C" fn pfnDeviceGetGraphProperties(
    hDevice: ze_device_handle_t,
    p: *mut ze_device_graph_properties_t,
) -> ze_result_t {
    guard("pfnDeviceGetGraphProperties", || {
        // SAFETY: handle validation.
        unsafe { device_in(DriverKind::Npu, hDevice) }?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        fill_device_props(
            &mut p.graphExtensionVersion,
            &mut p.compilerVersion,
            &mut p.graphFormatsSupported,
            &mut p.maxOVOpsetVersionSupported,
        );
        Ok(())
    })
}

unsafe extern "C" fn pfnDeviceGetGraphProperties2(
    hDevice: ze_device_handle_t,
    p: *mut ze_device_graph_properties_2_t,
) -> ze_result_t {
    guard("pfnDeviceGetGraphProperties2", || {
        // SAFETY: handle validation.
        unsafe { device_in(DriverKind::Npu, hDevice) }?;
        // SAFETY: caller-provided out-parameter.
        let p = unsafe { out(p) }?;
        fill_device_props(
            &mut p.graphExtensionVersion,
            &mut p.compilerVersion,
            &mut p.graphFormatsSupported,
            &mut p.maxOVOpsetVersionSupported,
        );
        p.elfVersion = ze_graph_version_info_t { major: 1, minor: 0, patch: 0 };
        p.runtimeVersion = ze_graph_version_info_t { major: 1, minor: 0, patch: 0 };
        Ok(())
    })
}

/// A `ze_graph_query_network_handle_t`: the layers the "compiler" supports, as the plugin parses
/// them (`<name><name>…`, NUL-terminated).
pub struct QueryNetwork {
    layers: String,
}

impl Kind for QueryNetwork {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0QUERY");
}

/// `pfnQueryNetworkCreate*` (linux-npu-driver 1.32.1 `query_network.cpp` `QueryNetwork::create`):
/// IR only (else `UNSUPPORTED_ENUMERATION`). The virtual NPU's compiler is OpenVINO's CPU plugin, so
/// a model OpenVINO reads and compiles has every layer supported; one it cannot is
/// `INVALID_ARGUMENT` with the reason in the last log.
///
/// # Safety
/// As `create_graph`.
unsafe fn query_network(
    h_context: ze_context_handle_t,
    h_device: ze_device_handle_t,
    format_: u32,
    p_input: *const u8,
    input_size: usize,
    ph: *mut ze_graph_query_network_handle_t,
) -> ZeResult {
    // SAFETY: handle validation.
    same_driver(DriverKind::Npu, unsafe { context_from(h_context) }?)?;
    // SAFETY: handle validation.
    unsafe { device_in(DriverKind::Npu, h_device) }?;
    // SAFETY: caller-provided out-parameter.
    let out_q = unsafe { out(ph) }?;
    if format_ != ZE_GRAPH_FORMAT_NGRAPH_LITE {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
    }
    if p_input.is_null() {
        return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    }
    // SAFETY: the caller guarantees `input_size` readable bytes at `p_input`.
    let data = unsafe { std::slice::from_raw_parts(p_input, input_size) };
    let names = format::parse_ngraph_lite(data)
        .and_then(|ir| {
            let xml = std::str::from_utf8(&ir.xml).map_err(|_| "the IR XML is not valid UTF-8".to_string())?;
            let summary = ir::summarize(xml)?;
            engine::read_model(&ir.xml, &ir.weights)?;
            Ok(summary.layer_names)
        })
        .map_err(|e| {
            record_log(&format!("virtual NPU: query network failed: {e}"));
            ZE_RESULT_ERROR_INVALID_ARGUMENT
        })?;
    let layers: String = names.iter().map(|n| format!("<{n}>")).collect();
    *out_q = create::<QueryNetwork, _>(DriverKind::Npu, QueryNetwork { layers });
    Ok(())
}

unsafe extern "C" fn pfnQueryNetworkCreate(
    hContext: ze_context_handle_t,
    hDevice: ze_device_handle_t,
    desc: *const ze_graph_desc_t,
    ph: *mut ze_graph_query_network_handle_t,
) -> ze_result_t {
    guard("pfnQueryNetworkCreate", || {
        // SAFETY: caller-provided descriptor.
        let d = unsafe { input(desc) }?;
        // SAFETY: forwarded contract.
        unsafe { query_network(hContext, hDevice, d.format, d.pInput, d.inputSize, ph) }
    })
}

unsafe extern "C" fn pfnQueryNetworkCreate2(
    hContext: ze_context_handle_t,
    hDevice: ze_device_handle_t,
    desc: *const ze_graph_desc_2_t,
    ph: *mut ze_graph_query_network_handle_t,
) -> ze_result_t {
    guard("pfnQueryNetworkCreate2", || {
        // SAFETY: caller-provided descriptor.
        let d = unsafe { input(desc) }?;
        // SAFETY: forwarded contract.
        unsafe { query_network(hContext, hDevice, d.format, d.pInput, d.inputSize, ph) }
    })
}

unsafe extern "C" fn pfnQueryNetworkDestroy(h: ze_graph_query_network_handle_t) -> ze_result_t {
    guard("pfnQueryNetworkDestroy", || {
        // SAFETY: validated, then destroyed once.
        let q = unsafe { get::<QueryNetwork, _>(h) }?;
        same_driver(DriverKind::Npu, q)?;
        // SAFETY: as above.
        drop(unsafe { destroy::<QueryNetwork, _>(h) }?);
        Ok(())
    })
}

/// The size with the NUL when `pLayers` is NULL; else the layers, at most `*pSize` bytes.
unsafe extern "C" fn pfnQueryNetworkGetSupportedLayers(
    h: ze_graph_query_network_handle_t,
    pSize: *mut usize,
    pLayers: *mut c_char,
) -> ze_result_t {
    guard("pfnQueryNetworkGetSupportedLayers", || {
        // SAFETY: handle validation.
        let q = unsafe { get::<QueryNetwork, _>(h) }?;
        same_driver(DriverKind::Npu, q)?;
        // SAFETY: caller-provided in/out parameter.
        let size = unsafe { out(pSize) }?;
        let need = q.layers.len() + 1;
        if pLayers.is_null() {
            *size = need;
            return Ok(());
        }
        let n = (*size).min(need);
        if n == 0 {
            return Ok(());
        }
        // SAFETY: the caller provides *size >= n writable bytes at pLayers.
        unsafe {
            std::ptr::copy_nonoverlapping(q.layers.as_ptr(), pLayers.cast::<u8>(), n - 1);
            *pLayers.add(n - 1) = 0;
        }
        *size = n;
        Ok(())
    })
}

unsafe extern "C" fn pfnBuildLogGetString(
    hGraph: ze_graph_handle_t,
    pSize: *mut u32,
    pBuildLog: *mut c_char,
) -> ze_result_t {
    guard("pfnBuildLogGetString", || {
        // A NULL (or failed) graph asks for the latest build error, which is how the plugin reads it.
        let text = if hGraph.is_null() {
            last_log()
        } else {
            // SAFETY: handle validation.
            unsafe { graph_from(hGraph) }?.log.clone()
        };
        copy_log(&text, pSize, pBuildLog)
    })
}

unsafe extern "C" fn pfnBuildLogGetString2(
    hLog: ze_graph_build_log_handle_t,
    pSize: *mut u32,
    pBuildLog: *mut c_char,
) -> ze_result_t {
    guard("pfnBuildLogGetString2", || {
        // SAFETY: handle validation.
        let l = unsafe { get::<BuildLog, _>(hLog) }?;
        copy_log(&l.text, pSize, pBuildLog)
    })
}

unsafe extern "C" fn pfnBuildLogDestroy(hLog: ze_graph_build_log_handle_t) -> ze_result_t {
    guard("pfnBuildLogDestroy", || {
        // SAFETY: handle validation inside destroy.
        drop(unsafe { destroy::<BuildLog, _>(hLog) }?);
        Ok(())
    })
}

unsafe extern "C" fn pfnQueryContextMemory(
    hContext: ze_context_handle_t,
    type_: ze_graph_memory_query_type_t,
    query: *mut ze_graph_memory_query_t,
) -> ze_result_t {
    guard("pfnQueryContextMemory", || {
        // SAFETY: handle validation.
        same_driver(DriverKind::Npu, unsafe { context_from(hContext) }?)?;
        // SAFETY: caller-provided out-parameter.
        let q = unsafe { out(query) }?;
        // linux-npu-driver 1.32.1 `context.cpp` `Context::queryContextMemory`.
        match type_ {
            ZE_GRAPH_QUERY_MEMORY_DDR => {
                let ctx = hContext as usize;
                q.total = crate::memory::total_ram();
                q.allocated = (crate::memory::allocated_in(DriverKind::Npu, ctx)
                    + crate::cmdlist::npu_command_buffer_bytes(ctx)
                    + super::idle::cached_bytes(ctx)) as u64;
            }
            ZE_GRAPH_QUERY_MEMORY_DRIVER_CACHE | ZE_GRAPH_QUERY_MEMORY_PROGRAM_CACHE => {
                q.allocated = super::cache::size() as u64;
                q.total = super::cache::max_size() as u64;
            }
            _ => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        }
        Ok(())
    })
}

unsafe extern "C" fn pfnGraphInitialize(hGraph: ze_graph_handle_t) -> ze_result_t {
    guard("pfnGraphInitialize", || {
        // SAFETY: handle validation.
        unsafe { graph_from(hGraph) }?;
        // The real driver parses the blob here (no command is submitted); this graph was parsed at
        // creation. Counted so tests see the plugin take the INITIALIZE path.
        crate::counters::add("npu.graph_initializations", 1);
        Ok(())
    })
}

/// The `--config` options the virtual NPU's compiler takes: the ones the NPU plugin sends and the
/// ones this driver acts on. The list is this compiler's own (the real one comes from the closed
/// compiler library, `vclGetCompilerSupportedOptions`); any other option fails the compilation, as an
/// unknown option fails the real compiler's.
pub const COMPILER_OPTIONS: &[&str] = &[
    "LOG_LEVEL",
    "PERF_COUNT",
    "NPU_PLATFORM",
    "NPU_STEPPING",
    "NPU_MAX_TILES",
    "NPU_BATCH_MODE",
    "NPU_ENABLE_STRIDES_FOR",
];

/// linux-npu-driver 1.32.1 `graph.cpp` `Graph::getSupportedOptions`: the driver has no options of
/// its own (size 0); compiler options come from the compiler, as a space-separated list.
unsafe extern "C" fn pfnCompilerGetSupportedOptions(
    hDevice: ze_device_handle_t,
    type_: ze_npu_options_type_t,
    pSize: *mut usize,
    p: *mut c_char,
) -> ze_result_t {
    guard("pfnCompilerGetSupportedOptions", || {
        // SAFETY: handle validation.
        unsafe { device_in(DriverKind::Npu, hDevice) }?;
        // SAFETY: caller-provided in/out parameter.
        let size = unsafe { out(pSize) }?;
        let text = match type_ {
            ZE_NPU_DRIVER_OPTIONS => {
                *size = 0;
                return Ok(());
            }
            ZE_NPU_COMPILER_OPTIONS => COMPILER_OPTIONS.join(" "),
            _ => return Err(ZE_RESULT_ERROR_INVALID_ENUMERATION),
        };
        let need = text.len() + 1;
        if p.is_null() {
            *size = need;
            return Ok(());
        }
        if *size < need {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        // SAFETY: the caller provides *size >= need writable bytes at p.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), p.cast::<u8>(), text.len());
            *p.add(text.len()) = 0;
        }
        *size = need;
        Ok(())
    })
}

/// `Graph::isOptionSupported`: driver options never (`UNSUPPORTED_FEATURE`); a compiler option if
/// it is in [`COMPILER_OPTIONS`] (its value is not checked).
unsafe extern "C" fn pfnCompilerIsOptionSupported(
    hDevice: ze_device_handle_t,
    type_: ze_npu_options_type_t,
    opt: *const c_char,
    _val: *const c_char,
) -> ze_result_t {
    guard("pfnCompilerIsOptionSupported", || {
        // SAFETY: handle validation.
        unsafe { device_in(DriverKind::Npu, hDevice) }?;
        match type_ {
            ZE_NPU_DRIVER_OPTIONS => Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
            ZE_NPU_COMPILER_OPTIONS => {
                if opt.is_null() {
                    return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
                }
                // SAFETY: a NUL-terminated option name from the caller.
                let name = unsafe { CStr::from_ptr(opt) }.to_string_lossy();
                trace(format_args!("npu compiler option {name:?}"));
                if COMPILER_OPTIONS.contains(&name.as_ref()) {
                    Ok(())
                } else {
                    Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
                }
            }
            _ => Err(ZE_RESULT_ERROR_INVALID_ENUMERATION),
        }
    })
}

unsafe extern "C" fn pfnEvict(hGraph: ze_graph_handle_t) -> ze_result_t {
    guard("pfnEvict", || {
        // SAFETY: handle validation.
        unsafe { graph_from(hGraph) }?;
        Ok(())
    })
}

/// The `ZE_extension_graph` table (graph extension 1.16: 31 slots, all filled).
pub static GRAPH_TABLE: ze_graph_dditable_ext_t = ze_graph_dditable_ext_t {
    pfnCreate: Some(pfnCreate),
    pfnDestroy: Some(pfnDestroy),
    pfnGetProperties: Some(pfnGetProperties),
    pfnGetArgumentProperties: Some(pfnGetArgumentProperties),
    pfnSetArgumentValue: Some(pfnSetArgumentValue),
    pfnAppendGraphInitialize: Some(pfnAppendGraphInitialize),
    pfnAppendGraphExecute: Some(pfnAppendGraphExecute),
    pfnGetNativeBinary: Some(pfnGetNativeBinary),
    pfnDeviceGetGraphProperties: Some(pfnDeviceGetGraphProperties),
    pfnGraphGetArgumentMetadata: Some(pfnGraphGetArgumentMetadata),
    pfnGetArgumentProperties2: Some(pfnGetArgumentProperties2),
    pfnGetArgumentProperties3: Some(pfnGetArgumentProperties3),
    pfnQueryNetworkCreate: Some(pfnQueryNetworkCreate),
    pfnQueryNetworkDestroy: Some(pfnQueryNetworkDestroy),
    pfnQueryNetworkGetSupportedLayers: Some(pfnQueryNetworkGetSupportedLayers),
    pfnBuildLogGetString: Some(pfnBuildLogGetString),
    pfnCreate2: Some(pfnCreate2),
    pfnQueryNetworkCreate2: Some(pfnQueryNetworkCreate2),
    pfnQueryContextMemory: Some(pfnQueryContextMemory),
    pfnDeviceGetGraphProperties2: Some(pfnDeviceGetGraphProperties2),
    pfnGetNativeBinary2: Some(pfnGetNativeBinary2),
    pfnGetProperties2: Some(pfnGetProperties2),
    pfnGraphInitialize: Some(pfnGraphInitialize),
    pfnCompilerGetSupportedOptions: Some(pfnCompilerGetSupportedOptions),
    pfnCompilerIsOptionSupported: Some(pfnCompilerIsOptionSupported),
    pfnCreate3: Some(pfnCreate3),
    pfnGetProperties3: Some(pfnGetProperties3),
    pfnBuildLogGetString2: Some(pfnBuildLogGetString2),
    pfnBuildLogDestroy: Some(pfnBuildLogDestroy),
    pfnSetArgumentValue2: Some(pfnSetArgumentValue2),
    pfnEvict: Some(pfnEvict),
};
