//! Executes graphs with OpenVINO's CPU plugin, inside the process that loaded the virtual platform.
//!
//! OpenVINO is never linked into this library. At the first graph creation the C library is located
//! in the process: `dlopen("libopenvino_c.so.2641", RTLD_NOLOAD)` first; if the C library is not
//! loaded yet, the directory of the already-loaded `libopenvino.so.*` is found with
//! `dl_iterate_phdr` and `libopenvino_c.so.*` is opened from there (it binds to the loaded core by
//! soname). `openvino-sys` (runtime linking, a private static copy inside this cdylib) is then pointed
//! at that file. No OpenVINO in the process means no graph: creation fails with a clear build log.
//!
//! One `ov_core_t` is created lazily and kept for the life of the process. A graph is read from its
//! IR (`ov_core_read_model_from_memory_buffer`), optionally given pre/post-processing for the build
//! flags' precisions, and compiled for `"CPU"`. Each execution takes an infer request from the
//! graph's pool (creating one when the pool is empty, so concurrent executions each get their own),
//! wraps every argument pointer with `ov_tensor_create_from_host_ptr` (no copy), and runs `infer`.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use openvino_sys as ov;

/// An element type this driver can carry through a graph argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elem {
    pub ov: ov::ov_element_type_e,
    /// `ze_graph_argument_precision_t`.
    pub ze_precision: u32,
    /// `ze_graph_metadata_type`.
    pub ze_metadata: u32,
    /// Bytes per element.
    pub size: usize,
    pub name: &'static str,
}

macro_rules! elems {
    ($($v:ident $p:literal $m:literal $s:literal $n:literal;)*) => {
        const ELEMS: &[Elem] = &[$(Elem { ov: ov::ov_element_type_e::$v, ze_precision: $p, ze_metadata: $m, size: $s, name: $n }),*];
    };
}
elems! {
    F32 0x01 5 4 "FP32";
    F16 0x02 4 2 "FP16";
    BF16 0x09 3 2 "BF16";
    F64 0x0F 6 8 "FP64";
    U8 0x04 14 1 "U8";
    I8 0x07 8 1 "I8";
    U16 0x03 15 2 "U16";
    I16 0x06 9 2 "I16";
    U32 0x0A 16 4 "U32";
    I32 0x05 10 4 "I32";
    U64 0x10 17 8 "U64";
    I64 0x11 11 8 "I64";
    OV_BOOLEAN 0x0E 2 1 "BOOL";
}

impl Elem {
    /// The entry for an OpenVINO element type.
    pub fn from_ov(t: ov::ov_element_type_e) -> Option<Elem> {
        ELEMS.iter().copied().find(|e| e.ov == t)
    }

    /// The entry for a precision string of the build flags (`FP32`, `F32`, `U8`, `BOOL`, `BOOLEAN`, …).
    pub fn from_flag(s: &str) -> Option<Elem> {
        let u = s.trim().to_ascii_uppercase();
        let canon = match u.as_str() {
            "F32" => "FP32",
            "F16" => "FP16",
            "F64" => "FP64",
            "BOOLEAN" => "BOOL",
            other => other,
        };
        ELEMS.iter().copied().find(|e| e.name == canon)
    }
}

/// The shape and element type of one port.
#[derive(Debug, Clone)]
pub struct PortInfo {
    pub elem: Elem,
    pub shape: Vec<u64>,
    /// `ov_port_get_any_name` of the source model's port, when it has a name.
    pub any_name: Option<String>,
}

impl PortInfo {
    /// Bytes of a dense tensor of this port.
    pub fn bytes(&self) -> usize {
        self.shape.iter().product::<u64>() as usize * self.elem.size
    }
}

struct Engine {
    core: *mut ov::ov_core_t,
}

// SAFETY: ov::Core is documented thread-safe for read_model/compile_model; the pointer is never freed.
unsafe impl Send for Engine {}
// SAFETY: as above.
unsafe impl Sync for Engine {}

fn last_error() -> String {
    // SAFETY: ov_get_last_err_msg returns NULL or a NUL-terminated string owned by OpenVINO.
    let p = unsafe { ov::ov_get_last_err_msg() };
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: non-null NUL-terminated string (see above), copied before anything else runs.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().trim().to_string()
    }
}

fn check(what: &str, st: ov::ov_status_e) -> Result<(), String> {
    if st == ov::ov_status_e::OK {
        Ok(())
    } else {
        let msg = last_error();
        Err(if msg.is_empty() { format!("{what} failed ({st:?})") } else { format!("{what} failed ({st:?}): {msg}") })
    }
}

#[cfg(unix)]
/// The soname of the C library of the pinned OpenVINO (2026.4.1).
const OPENVINO_C_SONAME: &str = "libopenvino_c.so.2641";

#[cfg(unix)]
/// The path of a loaded shared object whose file name starts with `prefix`.
fn loaded_library(prefix: &str) -> Option<PathBuf> {
    struct Search<'a> {
        prefix: &'a str,
        found: Option<PathBuf>,
    }
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> i32 {
        // SAFETY: data is the &mut Search passed below; info is valid for the callback's duration.
        let s = unsafe { &mut *(data as *mut Search<'_>) };
        // SAFETY: dlpi_name is NULL or a NUL-terminated string owned by the dynamic linker.
        let name = unsafe { (*info).dlpi_name };
        if name.is_null() {
            return 0;
        }
        // SAFETY: see above.
        let path = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        let file = path.rsplit('/').next().unwrap_or("");
        if file.starts_with(s.prefix) {
            s.found = Some(PathBuf::from(path));
            return 1;
        }
        0
    }
    let mut s = Search { prefix, found: None };
    // SAFETY: the callback only reads the entries it is given and writes into `s`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut s as *mut Search<'_> as *mut c_void) };
    s.found
}

#[cfg(unix)]
/// Finds the process's `libopenvino_c`, as described in the module docs.
fn locate_openvino_c() -> Result<PathBuf, String> {
    if let Some(p) = loaded_library("libopenvino_c.so") {
        return Ok(p);
    }
    let soname = OPENVINO_C_SONAME;
    let c = CString::new(soname).unwrap();
    // SAFETY: RTLD_NOLOAD never loads anything new; it only returns a handle to a loaded object.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if !h.is_null() {
        // SAFETY: balances the reference taken by the successful dlopen above.
        unsafe { libc::dlclose(h) };
        return Ok(loaded_library("libopenvino_c.so").unwrap_or_else(|| PathBuf::from(soname)));
    }
    let core = loaded_library("libopenvino.so.").ok_or_else(|| {
        "OpenVINO is not loaded in this process: the virtual NPU executes graphs with the process's own \
         OpenVINO (libopenvino.so.*) and never loads a second one"
            .to_string()
    })?;
    let dir = core.parent().map(PathBuf::from).unwrap_or_default();
    let suffix = core.file_name().and_then(|f| f.to_str()).and_then(|f| f.strip_prefix("libopenvino.so")).unwrap_or("");
    let c = dir.join(format!("libopenvino_c.so{suffix}"));
    if c.exists() {
        Ok(c)
    } else {
        Err(format!("OpenVINO is loaded from {} but {} does not exist", core.display(), c.display()))
    }
}

/// Finds the process's `openvino_c.dll` (Windows): the loaded module of that name, else the one beside
/// the loaded `openvino.dll` (as on Linux, the process's own OpenVINO, never a second one).
#[cfg(windows)]
fn locate_openvino_c() -> Result<PathBuf, String> {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleFileNameW, GetModuleHandleW};
    let loaded = |name: &str| -> Option<PathBuf> {
        let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
        // SAFETY: a NUL-terminated name; GetModuleHandleW takes no reference and loads nothing.
        let m = unsafe { GetModuleHandleW(wide.as_ptr()) };
        if m.is_null() {
            return None;
        }
        let mut buf = vec![0u16; 32768];
        // SAFETY: buf is writable for its length.
        let n = unsafe { GetModuleFileNameW(m, buf.as_mut_ptr(), buf.len() as u32) } as usize;
        (n > 0).then(|| PathBuf::from(String::from_utf16_lossy(&buf[..n])))
    };
    if let Some(p) = loaded("openvino_c.dll") {
        return Ok(p);
    }
    let core = loaded("openvino.dll").ok_or_else(|| {
        "OpenVINO is not loaded in this process: the virtual NPU executes graphs with the process's own \
         OpenVINO (openvino.dll) and never loads a second one"
            .to_string()
    })?;
    let c = core.with_file_name("openvino_c.dll");
    if c.exists() {
        Ok(c)
    } else {
        Err(format!("OpenVINO is loaded from {} but {} does not exist", core.display(), c.display()))
    }
}

fn engine() -> Result<&'static Engine, String> {
    // A success is kept for the life of the process (the core is never freed); a failure is not: the
    // process may load OpenVINO after a first, failed graph creation.
    static E: OnceLock<Engine> = OnceLock::new();
    static INIT: Mutex<()> = Mutex::new(());
    if let Some(e) = E.get() {
        return Ok(e);
    }
    let _g = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = E.get() {
        return Ok(e);
    }
    let path = locate_openvino_c()?;
    ov::library::load_from(path.clone())
        .map_err(|e| format!("cannot bind to OpenVINO's C library {}: {e}", path.display()))?;
    let mut core = std::ptr::null_mut();
    // SAFETY: out-parameter is valid; the library is loaded.
    check("ov_core_create", unsafe { ov::ov_core_create(&mut core) })?;
    Ok(E.get_or_init(|| Engine { core }))
}

/// Reads the port description through the C API.
///
/// # Safety
/// `port` is a valid const port.
unsafe fn port_info(port: *const ov::ov_output_const_port_t) -> Result<PortInfo, String> {
    let mut t = ov::ov_element_type_e::DYNAMIC;
    // SAFETY: valid port and out-parameter.
    check("ov_port_get_element_type", unsafe { ov::ov_port_get_element_type(port, &mut t) })?;
    let elem = Elem::from_ov(t).ok_or_else(|| format!("element type {t:?} is not supported by the virtual NPU"))?;
    let mut shape = ov::ov_shape_t { rank: 0, dims: std::ptr::null_mut() };
    // SAFETY: valid port and out-parameter; freed below.
    check("ov_const_port_get_shape", unsafe { ov::ov_const_port_get_shape(port, &mut shape) })?;
    let dims = (0..shape.rank.max(0) as usize)
        // SAFETY: dims has `rank` elements.
        .map(|i| unsafe { *shape.dims.add(i) } as u64)
        .collect();
    // SAFETY: shape was filled by OpenVINO.
    unsafe { ov::ov_shape_free(&mut shape) };
    let mut name: *mut c_char = std::ptr::null_mut();
    // SAFETY: valid port; a port without names reports an error, which only means "no name".
    let st = unsafe { ov::ov_port_get_any_name(port, &mut name) };
    let any_name = if st == ov::ov_status_e::OK && !name.is_null() {
        // SAFETY: OpenVINO returned a NUL-terminated string to be freed with ov_free.
        let s = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        // SAFETY: allocated by OpenVINO for us.
        unsafe { ov::ov_free(name) };
        Some(s)
    } else {
        None
    };
    Ok(PortInfo { elem, shape: dims, any_name })
}

/// The ports of a model (`model == true`) or compiled model.
///
/// # Safety
/// `obj` is a valid `ov_model_t` or `ov_compiled_model_t` as told by `is_model`.
unsafe fn ports(obj: *const c_void, is_model: bool, inputs: bool) -> Result<Vec<PortInfo>, String> {
    let mut n = 0usize;
    // SAFETY: obj is valid per the contract; out-parameters are valid.
    let st = unsafe {
        match (is_model, inputs) {
            (true, true) => ov::ov_model_inputs_size(obj as *const _, &mut n),
            (true, false) => ov::ov_model_outputs_size(obj as *const _, &mut n),
            (false, true) => ov::ov_compiled_model_inputs_size(obj as *const _, &mut n),
            (false, false) => ov::ov_compiled_model_outputs_size(obj as *const _, &mut n),
        }
    };
    check("ports size", st)?;
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let mut p = std::ptr::null_mut();
        // SAFETY: as above; i < n.
        let st = unsafe {
            match (is_model, inputs) {
                (true, true) => ov::ov_model_const_input_by_index(obj as *const _, i, &mut p),
                (true, false) => ov::ov_model_const_output_by_index(obj as *const _, i, &mut p),
                (false, true) => ov::ov_compiled_model_input_by_index(obj as *const _, i, &mut p),
                (false, false) => ov::ov_compiled_model_output_by_index(obj as *const _, i, &mut p),
            }
        };
        check("port by index", st)?;
        // SAFETY: p is a valid port until freed.
        let info = unsafe { port_info(p) };
        // SAFETY: p was created by OpenVINO for us.
        unsafe { ov::ov_output_const_port_free(p) };
        v.push(info?);
    }
    Ok(v)
}

/// Element-type overrides from the build flags, by model input/output index.
#[derive(Debug, Default, Clone)]
pub struct Conversions {
    pub inputs: Vec<(usize, Elem)>,
    pub outputs: Vec<(usize, Elem)>,
}

struct Handles {
    model: *mut ov::ov_model_t,
    compiled: *mut ov::ov_compiled_model_t,
    pool: Mutex<Vec<*mut ov::ov_infer_request_t>>,
}

/// One node's counters from an execution of a `PERF_COUNT` model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerTime {
    pub name: String,
    pub node_type: String,
    pub exec_type: String,
    /// 0 not run, 1 optimized out, 2 executed (`ov_profiling_info_t::Status`).
    pub status: u8,
    pub real_ns: u64,
    pub cpu_ns: u64,
}

/// The per-node counters of the request's last inference.
fn layer_times(req: *mut ov::ov_infer_request_t) -> Result<Vec<LayerTime>, String> {
    // SAFETY: zero is a valid empty list.
    let mut list: ov::ov_profiling_info_list_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid request after an inference; list is an out-parameter freed below.
    check("ov_infer_request_get_profiling_info", unsafe { ov::ov_infer_request_get_profiling_info(req, &mut list) })?;
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: NUL-terminated strings owned by the list.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let infos = if list.profiling_infos.is_null() {
        &[][..]
    } else {
        // SAFETY: the list holds `size` entries.
        unsafe { std::slice::from_raw_parts(list.profiling_infos, list.size) }
    };
    let v = infos
        .iter()
        .map(|i| LayerTime {
            name: text(i.node_name),
            node_type: text(i.node_type),
            exec_type: text(i.exec_type),
            status: i.status as u8,
            real_ns: i.real_time.max(0) as u64 * 1000,
            cpu_ns: i.cpu_time.max(0) as u64 * 1000,
        })
        .collect();
    // SAFETY: the list filled above, freed once.
    unsafe { ov::ov_profiling_info_list_free(&mut list) };
    Ok(v)
}

/// A model compiled for OpenVINO's CPU plugin.
pub struct Compiled {
    h: Handles,
    /// Kept alive for the model: OpenVINO may share constant data with the weights tensor.
    _weights: Box<[u8]>,
    /// Ports of the model as read (network precision, names).
    pub network_inputs: Vec<PortInfo>,
    pub network_outputs: Vec<PortInfo>,
    /// Ports after pre/post-processing (device precision): what arguments must hold.
    pub inputs: Vec<PortInfo>,
    pub outputs: Vec<PortInfo>,
}

// SAFETY: an ov::CompiledModel is thread-safe (create_infer_request from any thread); each infer request
// is used by one thread at a time because it is taken out of the pool under the mutex for an execution.
unsafe impl Send for Compiled {}
// SAFETY: as above.
unsafe impl Sync for Compiled {}

impl Drop for Compiled {
    fn drop(&mut self) {
        let reqs = std::mem::take(&mut *self.h.pool.lock().unwrap_or_else(|e| e.into_inner()));
        for r in reqs {
            // SAFETY: created by OpenVINO and owned by the pool.
            unsafe { ov::ov_infer_request_free(r) };
        }
        // SAFETY: owned pointers, freed once.
        unsafe {
            ov::ov_compiled_model_free(self.h.compiled);
            ov::ov_model_free(self.h.model);
        }
    }
}

/// Reads the IR and reports its ports, without compiling (used to validate build flags first).
pub struct ReadModel {
    model: *mut ov::ov_model_t,
    weights: Box<[u8]>,
    pub inputs: Vec<PortInfo>,
    pub outputs: Vec<PortInfo>,
}

impl Drop for ReadModel {
    fn drop(&mut self) {
        if !self.model.is_null() {
            // SAFETY: owned pointer.
            unsafe { ov::ov_model_free(self.model) };
        }
    }
}

/// Reads an IR with the process's OpenVINO.
pub fn read_model(xml: &[u8], weights: &[u8]) -> Result<ReadModel, String> {
    let e = engine()?;
    let weights: Box<[u8]> = weights.to_vec().into_boxed_slice();
    let mut wt: *mut ov::ov_tensor_t = std::ptr::null_mut();
    if !weights.is_empty() {
        let mut dims = [weights.len() as i64];
        let shape = ov::ov_shape_t { rank: 1, dims: dims.as_mut_ptr() };
        // SAFETY: the weights live in `ReadModel`/`Compiled` for as long as the model does.
        check("ov_tensor_create_from_host_ptr (weights)", unsafe {
            ov::ov_tensor_create_from_host_ptr(
                ov::ov_element_type_e::U8,
                shape,
                weights.as_ptr() as *mut c_void,
                &mut wt,
            )
        })?;
    }
    let mut model = std::ptr::null_mut();
    // SAFETY: valid core, xml buffer of the given length, weights tensor or NULL, out-parameter.
    let st = unsafe {
        ov::ov_core_read_model_from_memory_buffer(e.core, xml.as_ptr() as *const c_char, xml.len(), wt, &mut model)
    };
    if !wt.is_null() {
        // SAFETY: the model keeps its own reference to the tensor's data holder.
        unsafe { ov::ov_tensor_free(wt) };
    }
    check("reading the IR (ov_core_read_model_from_memory_buffer)", st)?;
    let mut rm = ReadModel { model, weights, inputs: Vec::new(), outputs: Vec::new() };
    // SAFETY: model is valid.
    if unsafe { ov::ov_model_is_dynamic(model) } {
        return Err("the model has dynamic shapes; the virtual NPU supports static shapes only".into());
    }
    // SAFETY: model is a valid ov_model_t.
    rm.inputs = unsafe { ports(model as *const c_void, true, true) }?;
    // SAFETY: as above.
    rm.outputs = unsafe { ports(model as *const c_void, true, false) }?;
    Ok(rm)
}

/// Applies the element-type conversions and compiles for the CPU plugin.
pub fn compile(mut rm: ReadModel, conv: &Conversions, perf_count: bool) -> Result<Compiled, String> {
    let e = engine()?;
    let mut model = rm.model;
    if !conv.inputs.is_empty() || !conv.outputs.is_empty() {
        model = with_conversions(model, conv)?;
        // SAFETY: the pre/post-processed model holds its own reference to the original graph.
        unsafe { ov::ov_model_free(rm.model) };
        rm.model = model;
    }
    let dev = CString::new("CPU").unwrap();
    // f32 inference on the CPU plugin (it may otherwise pick bf16/f16 on capable CPUs): the virtual NPU
    // computes what the model says, like OpenVINO's CPU reference.
    // PERF_COUNT for a profiling graph: the CPU plugin's per-node counters become its profiling data.
    let props = [
        ov::ov_property_t { key: c"INFERENCE_PRECISION_HINT".as_ptr(), value: c"f32".as_ptr().cast() },
        ov::ov_property_t {
            key: c"PERF_COUNT".as_ptr(),
            value: if perf_count { c"YES" } else { c"NO" }.as_ptr().cast(),
        },
    ];
    let mut compiled = std::ptr::null_mut();
    // SAFETY: valid core and model; the properties point to static strings.
    check("compiling for OpenVINO's CPU plugin", unsafe {
        ov::ov_core_compile_model_props(e.core, model, dev.as_ptr(), props.len(), props.as_ptr(), &mut compiled)
    })?;
    let model_ptr = std::mem::replace(&mut rm.model, std::ptr::null_mut());
    let weights = std::mem::take(&mut rm.weights);
    let mut c = Compiled {
        h: Handles { model: model_ptr, compiled, pool: Mutex::new(Vec::new()) },
        _weights: weights,
        network_inputs: std::mem::take(&mut rm.inputs),
        network_outputs: std::mem::take(&mut rm.outputs),
        inputs: Vec::new(),
        outputs: Vec::new(),
    };
    // SAFETY: compiled is valid.
    c.inputs = unsafe { ports(compiled as *const c_void, false, true) }?;
    // SAFETY: as above.
    c.outputs = unsafe { ports(compiled as *const c_void, false, false) }?;
    Ok(c)
}

fn with_conversions(model: *mut ov::ov_model_t, conv: &Conversions) -> Result<*mut ov::ov_model_t, String> {
    let mut ppp = std::ptr::null_mut();
    // SAFETY: valid model and out-parameter.
    check("ov_preprocess_prepostprocessor_create", unsafe {
        ov::ov_preprocess_prepostprocessor_create(model, &mut ppp)
    })?;
    let r = (|| {
        for &(i, el) in &conv.inputs {
            let mut info = std::ptr::null_mut();
            // SAFETY: valid ppp; i is a valid input index (checked by the caller).
            check("ppp input", unsafe {
                ov::ov_preprocess_prepostprocessor_get_input_info_by_index(ppp, i, &mut info)
            })?;
            let mut ti = std::ptr::null_mut();
            // SAFETY: valid input info.
            let st = unsafe { ov::ov_preprocess_input_info_get_tensor_info(info, &mut ti) };
            let r = check("ppp input tensor", st).and_then(|_| {
                // SAFETY: valid tensor info.
                check("ppp input element type", unsafe {
                    ov::ov_preprocess_input_tensor_info_set_element_type(ti, el.ov)
                })
            });
            // SAFETY: owned by us.
            unsafe {
                if !ti.is_null() {
                    ov::ov_preprocess_input_tensor_info_free(ti);
                }
                ov::ov_preprocess_input_info_free(info);
            }
            r?;
        }
        for &(i, el) in &conv.outputs {
            let mut info = std::ptr::null_mut();
            // SAFETY: valid ppp; i is a valid output index.
            check("ppp output", unsafe {
                ov::ov_preprocess_prepostprocessor_get_output_info_by_index(ppp, i, &mut info)
            })?;
            let mut ti = std::ptr::null_mut();
            // SAFETY: valid output info.
            let st = unsafe { ov::ov_preprocess_output_info_get_tensor_info(info, &mut ti) };
            let r = check("ppp output tensor", st).and_then(|_| {
                // SAFETY: valid tensor info.
                check("ppp output element type", unsafe { ov::ov_preprocess_output_set_element_type(ti, el.ov) })
            });
            // SAFETY: owned by us.
            unsafe {
                if !ti.is_null() {
                    ov::ov_preprocess_output_tensor_info_free(ti);
                }
                ov::ov_preprocess_output_info_free(info);
            }
            r?;
        }
        let mut out = std::ptr::null_mut();
        // SAFETY: valid ppp and out-parameter.
        check("applying precision conversions", unsafe { ov::ov_preprocess_prepostprocessor_build(ppp, &mut out) })?;
        Ok(out)
    })();
    // SAFETY: owned by us.
    unsafe { ov::ov_preprocess_prepostprocessor_free(ppp) };
    r
}

impl Compiled {
    /// Runs one inference on the argument memory: `args` holds the inputs, then the outputs, as
    /// addresses of dense tensors of [`Compiled::inputs`] / [`Compiled::outputs`].
    pub fn infer(&self, args: &[usize]) -> Result<(), String> {
        self.infer_with(args, false).map(drop)
    }

    /// [`infer`](Self::infer), returning the CPU plugin's per-node times of this execution (the
    /// model must have been compiled with `perf_count`).
    pub fn infer_profiled(&self, args: &[usize]) -> Result<Vec<LayerTime>, String> {
        self.infer_with(args, true).map(Option::unwrap_or_default)
    }

    fn infer_with(&self, args: &[usize], profile: bool) -> Result<Option<Vec<LayerTime>>, String> {
        let n_in = self.inputs.len();
        if args.len() != n_in + self.outputs.len() {
            return Err(format!("{} arguments given, the graph has {}", args.len(), n_in + self.outputs.len()));
        }
        if let Some(i) = args.iter().position(|&a| a == 0) {
            return Err(format!("graph argument {i} was never set"));
        }
        let req = {
            let mut pool = self.h.pool.lock().unwrap_or_else(|e| e.into_inner());
            pool.pop()
        };
        let req = match req {
            Some(r) => r,
            None => {
                let mut r = std::ptr::null_mut();
                // SAFETY: valid compiled model; thread-safe call.
                check("ov_compiled_model_create_infer_request", unsafe {
                    ov::ov_compiled_model_create_infer_request(self.h.compiled, &mut r)
                })?;
                r
            }
        };
        let result = self.run(req, args).and_then(|()| if profile { layer_times(req).map(Some) } else { Ok(None) });
        self.h.pool.lock().unwrap_or_else(|e| e.into_inner()).push(req);
        result
    }

    fn run(&self, req: *mut ov::ov_infer_request_t, args: &[usize]) -> Result<(), String> {
        let n_in = self.inputs.len();
        for (k, (port, &addr)) in self.inputs.iter().chain(self.outputs.iter()).zip(args).enumerate() {
            let mut dims: Vec<i64> = port.shape.iter().map(|&d| d as i64).collect();
            let shape = ov::ov_shape_t { rank: dims.len() as i64, dims: dims.as_mut_ptr() };
            let mut t = std::ptr::null_mut();
            // SAFETY: addr is the argument the caller bound: L0 memory of at least the port's size that
            // stays valid for this execution (the Level Zero contract for graph arguments).
            check("ov_tensor_create_from_host_ptr", unsafe {
                ov::ov_tensor_create_from_host_ptr(port.elem.ov, shape, addr as *mut c_void, &mut t)
            })?;
            // SAFETY: req and t are valid; the request takes its own reference to the tensor.
            let st = unsafe {
                if k < n_in {
                    ov::ov_infer_request_set_input_tensor_by_index(req, k, t)
                } else {
                    ov::ov_infer_request_set_output_tensor_by_index(req, k - n_in, t)
                }
            };
            // SAFETY: our reference, released once.
            unsafe { ov::ov_tensor_free(t) };
            check("binding a graph argument", st)?;
        }
        // SAFETY: valid request with every tensor bound.
        check("ov_infer_request_infer", unsafe { ov::ov_infer_request_infer(req) })
    }
}
