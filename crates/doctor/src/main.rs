//! `npu-sycl-doctor`: what works on this machine, tried rather than guessed.
//!
//! ```text
//! cargo run -p npu-sycl-doctor [-- --json] [-- --virtual]
//! ```
//!
//! It reports
//! - the Level Zero loader in use (path, component versions from `zelLoaderGetVersions`, virtual or not);
//! - every Level Zero driver (uuid, driver version, API version, extensions) with its devices, and
//!   whether SYCL lists it as a platform;
//! - OpenVINO's version and devices, and the NPU's capabilities as its driver reports them;
//! - the SYCL platforms and devices;
//! - the NPU memory paths that need no SYCL (the iGPU's dma-buf, an NT handle on Windows; CPU_VA; L0
//!   host tensors), each run end to end on the model (`npu_paths.rs`);
//! - every SYCL ⇄ NPU sharing strategy of `npu_sycl_bridge::strategy`, each **run end to end** on a
//!   small model (`models::fully_connected`): create the strategy and its shared tensors, write the
//!   input through SYCL, bind, infer on the NPU, read the output through SYCL, compare with
//!   OpenVINO's CPU plugin; on the virtual platform the copy counters say whether it was zero-copy;
//! - what `Auto` chooses, with its decision report.
//!
//! The platform is chosen like the `forum_port` example does
//! (`testkit::virtual_platform::select`): the real NPU when `/dev/accel/accel*` exists and a
//! system `libze_loader.so.1` opens, otherwise the virtual platform, which the report says first.
//! `--virtual` forces the virtual platform.
//!
//! `--json` prints one JSON object instead of the table (same facts, same words for the statuses),
//! and nothing else on stdout: what the runtimes print themselves goes to stderr then.
//!
//! Its feature `sycl` (on by default) enables npu-sycl-bridge's: the strategies. Without it (a build
//! for Windows from Linux, where DPC++'s MSVC-built runtime cannot be linked) the report has the
//! NPU memory paths and says SYCL was not built in. Without an Intel NPU it runs on the virtual
//! platform, which cargo builds along with the doctor (npu-sycl-bridge-testkit depends on
//! virtual-l0).
//!
//! Exit status: 0 when at least one strategy works end to end (without `sycl`: one NPU memory
//! path), 1 when none does (or the platform cannot be set up), 2 for a bad command line.

mod npu_paths;

use std::fmt::Write as _;
#[cfg(feature = "sycl")]
use std::sync::Arc;

use anyhow::{Context as _, Result};
use npu_sycl_bridge::level_zero::{self, DeviceType, Driver, INTEL_NPU_DRIVER_UUID};
use npu_sycl_bridge::npu::NpuContext;
#[cfg(feature = "sycl")]
use npu_sycl_bridge::openvino::TensorType;
use npu_sycl_bridge::openvino::{CompiledModel, Core, Properties, Tensor};
use npu_sycl_bridge::raw::level_zero::sys;
#[cfg(feature = "sycl")]
use npu_sycl_bridge::raw::AsRaw;
#[cfg(feature = "sycl")]
use npu_sycl_bridge::strategy::{Auto, Strategy, StrategyKind};
#[cfg(feature = "sycl")]
use npu_sycl_bridge::sycl::{self, Platform, UsmKind};
use npu_sycl_bridge::{Error, ErrorKind};
#[cfg(feature = "sycl")]
use npu_sycl_bridge::{Path, Reason};
use testkit::models::{self, ReferenceModel};
#[cfg(feature = "sycl")]
use testkit::virtual_platform::VirtualPlatform;
use testkit::virtual_platform::{self, Selection};

// ---- a small JSON writer (keeps the binary free of serde) --------------------------------------

/// A JSON value.
enum Json {
    Null,
    Bool(bool),
    Num(u64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(&'static str, Json)>),
}

impl Json {
    fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    fn opt_str(s: Option<impl Into<String>>) -> Json {
        s.map(|s| Json::Str(s.into())).unwrap_or(Json::Null)
    }

    fn write(&self, out: &mut String, indent: usize) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Str(s) => escape(s, out),
            Json::Arr(items) if items.is_empty() => out.push_str("[]"),
            Json::Arr(items) => {
                out.push_str("[\n");
                for (i, v) in items.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    v.write(out, indent + 1);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            Json::Obj(fields) if fields.is_empty() => out.push_str("{}"),
            Json::Obj(fields) => {
                out.push_str("{\n");
                for (i, (k, v)) in fields.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    escape(k, out);
                    out.push_str(": ");
                    v.write(out, indent + 1);
                    out.push_str(if i + 1 < fields.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
        }
    }
}

fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

// ---- what is found ----------------------------------------------------------------------------

struct PlatformChoice {
    is_virtual: bool,
    reason: String,
    accel: Vec<String>,
}

struct ComponentVersion {
    component: String,
    spec: String,
    version: String,
}

struct LoaderInfo {
    path: String,
    is_virtual: bool,
    versions: Result<Vec<ComponentVersion>, String>,
}

struct DeviceInfo {
    kind: &'static str,
    name: String,
    vendor_id: u32,
    device_id: u32,
}

struct DriverInfo {
    index: usize,
    uuid: String,
    is_intel_npu_driver: bool,
    driver_version: u32,
    api_version: String,
    extensions: Vec<(String, u32)>,
    devices: Vec<DeviceInfo>,
    /// The SYCL platform wrapping this driver: `Ok(Some((index, name)))`, `Ok(None)` = not a SYCL platform
    /// (a driver without a GPU device), `Err` = none although the driver has a GPU device, or the lookup failed.
    sycl_platform: Result<Option<(usize, String)>, String>,
}

impl DriverInfo {
    /// "GPU", "NPU", "GPU+NPU" or "-" from the device types.
    fn kind(&self) -> String {
        let mut kinds: Vec<&str> = self.devices.iter().map(|d| d.kind).collect();
        kinds.dedup();
        if kinds.is_empty() {
            "-".into()
        } else {
            kinds.join("+")
        }
    }
}

struct OpenVinoInfo {
    version: Result<String, String>,
    devices: Result<Vec<String>, String>,
    /// The NPU's FULL_DEVICE_NAME; `Err` when OpenVINO cannot answer it (no NPU plugin or device,
    /// or the plugin failed to start: OpenVINO then leaves NPU out of `devices` without saying why).
    npu_name: Result<String, String>,
}

struct NpuInfo {
    device_name: String,
    device_id: u32,
    generation: Option<npu_sycl_bridge::npu::LaptopGeneration>,
    driver_version: u32,
    api_version: String,
    fd_import: bool,
    nt_handle_import: bool,
    sysmem_import: bool,
    mutable_command_lists: bool,
}

struct SyclPlatformInfo {
    index: usize,
    backend: String,
    name: String,
    version: String,
    devices: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Works,
    Unsupported,
    Failed,
    #[cfg_attr(not(feature = "sycl"), allow(dead_code))]
    NotRun,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Works => "works",
            Status::Unsupported => "unsupported",
            Status::Failed => "failed",
            Status::NotRun => "not run",
        }
    }
}

#[cfg(feature = "sycl")]
struct StrategyRow {
    kind: StrategyKind,
    /// What the row tried, e.g. "the NPU plugin's context", "host USM".
    variant: &'static str,
    status: Status,
    /// `Some(true)` measured zero-copy, `Some(false)` copies, `None` not known (not run / failed).
    zero_copy: Option<bool>,
    /// The reason (for unsupported / failed) or the evidence (for works).
    detail: String,
}

#[cfg(feature = "sycl")]
struct AutoInfo {
    chosen: Result<StrategyKind, String>,
    report: String,
}

struct Report {
    platform: PlatformChoice,
    loader: LoaderInfo,
    drivers: Result<Vec<DriverInfo>, String>,
    openvino: OpenVinoInfo,
    npu: Result<NpuInfo, String>,
    sycl: Result<Vec<SyclPlatformInfo>, String>,
    model: String,
    npu_paths: Vec<npu_paths::PathRow>,
    #[cfg(feature = "sycl")]
    strategies: Vec<StrategyRow>,
    #[cfg(feature = "sycl")]
    auto: Option<AutoInfo>,
}

impl Report {
    /// What works end to end, by name: the strategies, or without SYCL the NPU memory paths.
    fn working(&self) -> Vec<String> {
        #[cfg(feature = "sycl")]
        let working =
            self.strategies.iter().filter(|r| r.status == Status::Works).map(|s| format!("{} ({})", s.kind, s.variant));
        #[cfg(not(feature = "sycl"))]
        let working =
            self.npu_paths.iter().filter(|r| r.status == Status::Works).map(|p| format!("{} ({})", p.path, p.memory));
        working.collect()
    }
}

/// Why a doctor without feature `sycl` reports no SYCL.
#[cfg(not(feature = "sycl"))]
const NO_SYCL: &str = "this doctor was built without feature `sycl` (DPC++'s Windows runtime is MSVC-built C++: \
    build the doctor on Windows with icx or MSVC for the SYCL strategies)";

// ---- gathering ---------------------------------------------------------------------------------

fn uuid(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    let h = h.concat();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn version3(v: sys::zel_version_t) -> String {
    format!("{}.{}.{}", v.major, v.minor, v.patch)
}

fn api_version(v: sys::ze_api_version_t) -> String {
    format!("{}.{}", sys::ze_major_version(v), sys::ze_minor_version(v))
}

/// `zelLoaderGetVersions`: the loader's components and their versions.
fn loader_versions() -> Result<Vec<ComponentVersion>, String> {
    let api = sys::loader::api()?;
    if api.zelLoaderGetVersions.is_err() {
        return Err("the loader does not export zelLoaderGetVersions".into());
    }
    let mut n = 0usize;
    // SAFETY: a count query: a valid count pointer and a null array.
    let r = unsafe { api.zelLoaderGetVersions(&mut n, std::ptr::null_mut()) };
    if r != sys::ZE_RESULT_SUCCESS {
        return Err(format!("zelLoaderGetVersions: {:#x} {}", r, level_zero::result_name(r)));
    }
    // SAFETY: zel_component_version_t is plain data (a char array and integers).
    let mut list: Vec<sys::zel_component_version_t> = vec![unsafe { std::mem::zeroed() }; n];
    // SAFETY: `list` has room for `n` entries.
    let r = unsafe { api.zelLoaderGetVersions(&mut n, list.as_mut_ptr()) };
    if r != sys::ZE_RESULT_SUCCESS {
        return Err(format!("zelLoaderGetVersions: {:#x} {}", r, level_zero::result_name(r)));
    }
    list.truncate(n);
    Ok(list
        .iter()
        .map(|c| {
            let bytes: Vec<u8> = c.component_name.iter().take_while(|&&b| b != 0).map(|&b| b as u8).collect();
            ComponentVersion {
                component: String::from_utf8_lossy(&bytes).into_owned(),
                spec: api_version(c.spec_version),
                version: version3(c.component_lib_version),
            }
        })
        .collect())
}

fn device_kind(t: DeviceType) -> &'static str {
    match t {
        DeviceType::Gpu => "GPU",
        DeviceType::Vpu => "NPU",
        DeviceType::Cpu => "CPU",
        DeviceType::Fpga => "FPGA",
        DeviceType::Mca => "MCA",
        _ => "other",
    }
}

fn drivers() -> Result<Vec<DriverInfo>, Error> {
    let mut out = Vec::new();
    for (index, d) in Driver::all()?.into_iter().enumerate() {
        let props = d.properties()?;
        let mut devices = Vec::new();
        for dev in d.devices()? {
            let p = dev.properties()?;
            devices.push(DeviceInfo {
                kind: device_kind(p.device_type),
                name: p.name,
                vendor_id: p.vendor_id,
                device_id: p.device_id,
            });
        }
        #[cfg(not(feature = "sycl"))]
        let sycl_platform = Err(NO_SYCL.to_string());
        #[cfg(feature = "sycl")]
        let has_gpu = devices.iter().any(|x| x.kind == "GPU");
        #[cfg(feature = "sycl")]
        let sycl_platform = match Platform::find_by_native_driver(d.as_raw()) {
            Ok(Some(p)) => Ok(Some((p.index, p.name))),
            // DPC++ makes a platform of every Level Zero driver with a GPU device unless something
            // left it out: saying "not a SYCL platform" there would hide why SYCL has no GPU.
            Ok(None) if has_gpu => Err(gpu_driver_without_platform()),
            Ok(None) => Ok(None),
            Err(e) => Err(e.to_string()),
        };
        out.push(DriverInfo {
            index,
            uuid: uuid(&props.uuid),
            is_intel_npu_driver: props.uuid == INTEL_NPU_DRIVER_UUID,
            driver_version: props.driver_version,
            api_version: d.api_version()?.to_string(),
            extensions: d.extensions()?.into_iter().map(|e| (e.name, e.version)).collect(),
            devices,
            sycl_platform,
        });
    }
    Ok(out)
}

/// Why a Level Zero driver with a GPU device is no SYCL platform, as far as the doctor can tell.
#[cfg(feature = "sycl")]
fn gpu_driver_without_platform() -> String {
    let why = match std::env::var("ONEAPI_DEVICE_SELECTOR") {
        Ok(sel) => format!("ONEAPI_DEVICE_SELECTOR={sel:?} may exclude it"),
        Err(_) => "its Level Zero adapter left the driver out: it does so when one of the driver's calls fails \
                   during SYCL's start or the driver is one it does not support"
            .to_string(),
    };
    format!("the driver has a GPU device, but DPC++ made no SYCL platform of it ({why})")
}

#[cfg(feature = "sycl")]
fn sycl_platforms() -> Result<Vec<SyclPlatformInfo>, Error> {
    let mut out = Vec::new();
    for p in sycl::platforms()? {
        let devices = p.devices()?.into_iter().map(|d| (format!("{:?}", d.device_type), d.name)).collect();
        out.push(SyclPlatformInfo {
            index: p.index,
            backend: format!("{:?}", p.backend),
            name: p.name,
            version: p.version,
            devices,
        });
    }
    Ok(out)
}

/// The same model on OpenVINO's CPU plugin, computing in f32.
fn cpu_outputs(core: &Core, m: &ReferenceModel) -> Result<Vec<Vec<u8>>, Error> {
    let model = core.read_model_from_memory(&m.xml, &m.weights)?;
    let cpu = core.compile_model(&model, "CPU", &Properties::new().set("INFERENCE_PRECISION_HINT", "f32"))?;
    let mut r = cpu.create_infer_request()?;
    let inputs: Vec<Tensor> = m
        .inputs
        .iter()
        .enumerate()
        .map(|(i, d)| Tensor::from_bytes(d.element_type, d.shape.clone(), &m.sample_input(i)))
        .collect::<Result<_, _>>()?;
    for (i, t) in inputs.iter().enumerate() {
        r.set_input_tensor(i, t)?;
    }
    r.infer()?;
    (0..m.outputs.len()).map(|i| Ok(r.output_tensor(i)?.bytes()?.to_vec())).collect()
}

/// Everything a strategy run needs.
#[cfg(feature = "sycl")]
struct Bench<'a> {
    npu: &'a NpuContext,
    compiled: &'a CompiledModel,
    context: &'a Arc<sycl::SyclContext>,
    gpu: &'a sycl::SyclDevice,
    m: &'a ReferenceModel,
    cpu: &'a [Vec<u8>],
    vp: Option<&'static VirtualPlatform>,
}

#[cfg(feature = "sycl")]
const COUNTERS: [&str; 5] =
    ["gpu.bytes_copied", "npu.bytes_copied", "npu.inferences", "npu.graph_args.dma_buf", "npu.graph_args.sysmem"];

fn classify(e: &Error) -> Status {
    match e.kind() {
        ErrorKind::Unsupported { .. } => Status::Unsupported,
        _ => Status::Failed,
    }
}

#[cfg(feature = "sycl")]
impl Bench<'_> {
    fn build(&self, kind: StrategyKind, usm: UsmKind) -> Result<Strategy, Error> {
        match kind {
            StrategyKind::CpuVa => Strategy::cpu_va(self.npu, self.context, self.gpu, usm),
            _ => Strategy::new(kind, self.npu, self.context, self.gpu),
        }
    }

    /// Creates the strategy, its tensors, writes through SYCL, binds, infers, reads through SYCL and
    /// compares with the CPU plugin.
    fn run(&self, kind: StrategyKind, variant: &'static str, usm: UsmKind) -> StrategyRow {
        let row = |status, zero_copy, detail: String| StrategyRow { kind, variant, status, zero_copy, detail };
        let strategy = match self.build(kind, usm) {
            Ok(s) => s,
            Err(e) => return row(classify(&e), None, format!("{e:#}")),
        };
        match self.infer(&strategy) {
            Ok((zero_copy, evidence)) => row(Status::Works, Some(zero_copy), evidence),
            Err(e) => row(classify(&e), None, format!("{e:#}")),
        }
    }

    fn infer(&self, strategy: &Strategy) -> Result<(bool, String), Error> {
        let m = self.m;
        let kind = strategy.kind();
        let mut inputs = Vec::new();
        for (i, d) in m.inputs.iter().enumerate() {
            let mut t = strategy.tensor(d.element_type, d.shape.clone(), TensorType::Input)?;
            t.write(0, &m.sample_input(i))?;
            inputs.push(t);
        }
        let outputs = m
            .outputs
            .iter()
            .map(|d| strategy.tensor(d.element_type, d.shape.clone(), TensorType::Output))
            .collect::<Result<Vec<_>, _>>()?;
        let mut request = self.compiled.create_infer_request()?;
        let before = self.vp.map(|vp| COUNTERS.map(|n| vp.counter(n)));
        for (i, t) in inputs.iter().enumerate() {
            request.set_input_tensor(i, t.remote_tensor())?;
        }
        for (i, t) in outputs.iter().enumerate() {
            request.set_output_tensor(i, t.remote_tensor())?;
        }
        request.infer()?;
        let delta = self.vp.zip(before).map(|(vp, b)| {
            let mut d = [0u64; 5];
            for (i, n) in COUNTERS.iter().enumerate() {
                d[i] = vp.counter(n) - b[i];
            }
            d
        });
        for (i, t) in outputs.iter().enumerate() {
            let got: Vec<u8> = t.read_to_vec()?;
            m.compare(i, &self.cpu[i], &got).map_err(|e| {
                Error::new(ErrorKind::InvalidArgument, format!("the NPU's output differs from the CPU plugin's: {e}"))
            })?;
        }
        let bound = (inputs.len() + outputs.len()) as u64;
        let matches = format!(
            "output == CPU plugin ({} output(s), {} values, atol {}, rtol {})",
            m.outputs.len(),
            m.outputs.iter().map(|d| d.shape.element_count()).sum::<usize>(),
            m.atol,
            m.rtol
        );
        match delta {
            Some([gpu_copied, npu_copied, inferences, args_dma_buf, args_sysmem]) => {
                let imported = args_dma_buf + args_sysmem;
                let in_place = imported == bound;
                let zero_copy =
                    strategy.is_zero_copy() && gpu_copied == 0 && npu_copied == 0 && inferences == 1 && in_place;
                let how = if kind == StrategyKind::NpuExport {
                    format!(
                        "{imported} of {bound} graph arguments were the NPU memory the crate allocated exportable, \
                         which SYCL reaches through its import of the same dma-buf"
                    )
                } else if strategy.is_zero_copy() {
                    format!("{imported} of {bound} graph arguments were SYCL's own pages")
                } else if kind == StrategyKind::SharedSystem {
                    format!(
                        "{imported} of {bound} graph arguments were the shared pages, which SYCL reaches by memcpy \
                         (the device has no shared-system USM)"
                    )
                } else {
                    "the graph ran on the plugin's memory; SYCL reaches it by memcpy".to_string()
                };
                Ok((
                    zero_copy,
                    format!(
                        "{matches}; during bind+infer: gpu.bytes_copied +{gpu_copied}, npu.bytes_copied +{npu_copied}, \
                         npu.graph_args.dma_buf +{args_dma_buf}, npu.graph_args.sysmem +{args_sysmem}: {how}"
                    ),
                ))
            }
            None => {
                // Real hardware: no counters; check the import path the plugin reports.
                let mut all_same = true;
                let mut types = Vec::new();
                for t in inputs.iter().chain(&outputs) {
                    let p = t.remote_tensor().params()?;
                    types.push(p.mem_type.map(|m| m.as_str()).unwrap_or("?"));
                    all_same &= p.mem_handle == t.sycl_ptr().cast();
                }
                types.dedup();
                let zero_copy = strategy.is_zero_copy();
                let evidence = match kind {
                    StrategyKind::DmaBuf => "the NPU driver imported SYCL's dma-bufs".to_string(),
                    StrategyKind::NpuToSycl => "SYCL reaches the plugin's memory by memcpy".to_string(),
                    StrategyKind::NpuExport => {
                        "the plugin and SYCL imported dma-bufs of NPU memory the crate allocated exportable".to_string()
                    }
                    _ => format!("MEM_HANDLE {} the SYCL pointers", if all_same { "==" } else { "!=" }),
                };
                Ok((
                    zero_copy && (all_same || matches!(kind, StrategyKind::DmaBuf | StrategyKind::NpuExport)),
                    format!("{matches}; MEM_TYPE {}: {evidence}", types.join("/")),
                ))
            }
        }
    }
}

/// What every path and strategy run shares: the model compiled for the NPU, its context, the CPU
/// plugin's outputs.
struct Setup {
    _core: Core,
    compiled: CompiledModel,
    npu: NpuContext,
    cpu: Vec<Vec<u8>>,
}

fn gather(force_virtual: bool) -> Result<Report> {
    let selection = virtual_platform::select(force_virtual).context("setting up the Level Zero platform")?;
    let platform = match &selection {
        Selection::Virtual { reason, .. } => {
            PlatformChoice { is_virtual: true, reason: reason.clone(), accel: Vec::new() }
        }
        Selection::Real { accel, .. } => PlatformChoice {
            is_virtual: false,
            reason: format!("an Intel NPU is present ({})", accel[0].display()),
            accel: accel.iter().map(|p| p.display().to_string()).collect(),
        },
    };
    let loader = LoaderInfo {
        path: match &selection {
            Selection::Virtual { platform, .. } => platform.path().display().to_string(),
            Selection::Real { loader, .. } => loader.display().to_string(),
        },
        is_virtual: selection.is_virtual(),
        versions: loader_versions(),
    };
    let vp = selection.virtual_platform();

    let drivers = drivers().map_err(|e| e.to_string());
    #[cfg(feature = "sycl")]
    let sycl = sycl_platforms().map_err(|e| e.to_string());
    #[cfg(not(feature = "sycl"))]
    let sycl = Err(NO_SYCL.to_string());

    let core = Core::new();
    let devices = match &core {
        Ok(c) => c.available_devices().map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let npu_name = match &core {
        Ok(c) => c.property("NPU", "FULL_DEVICE_NAME").map_err(|e| {
            // OpenVINO leaves a device out of its list, without a word, when its plugin finds none
            // or fails to start; the NPU row says it.
            let listed = devices.as_ref().is_ok_and(|d| d.iter().any(|d| d.starts_with("NPU")));
            if listed {
                e.to_string()
            } else {
                format!("OpenVINO lists no NPU device (its NPU plugin found none or failed to start): {e}")
            }
        }),
        Err(e) => Err(e.to_string()),
    };
    let openvino = OpenVinoInfo { version: Core::version().map_err(|e| e.to_string()), devices, npu_name };

    let m = models::fully_connected();
    let setup = || -> Result<Setup, Error> {
        let core = Core::new()?;
        let model = core.read_model_from_memory(&m.xml, &m.weights)?;
        // The virtual NPU compiles the model itself, as the driver's compiler does: on it the doctor
        // asks for that compiler (the Windows wheel would otherwise hand it a native blob).
        let props = if vp.is_some() { testkit::reference::npu_properties() } else { Properties::new() };
        let compiled = core
            .compile_model(&model, "NPU", &props)
            .map_err(|e| e.context(format!("compiling {} for the NPU", m.name)))?;
        let npu = NpuContext::from_compiled_model(&compiled)?;
        let cpu = cpu_outputs(&core, &m).map_err(|e| e.context("the CPU plugin's reference"))?;
        Ok(Setup { _core: core, compiled, npu, cpu })
    };
    let setup = setup();
    let (npu_info, npu_paths) = match &setup {
        Ok(Setup { compiled, npu, cpu, .. }) => {
            let c = npu.capabilities();
            let info = NpuInfo {
                device_name: c.device_name.clone(),
                device_id: c.device_id,
                generation: c.generation,
                driver_version: c.driver_version,
                api_version: c.api_version.to_string(),
                fd_import: c.fd_import,
                nt_handle_import: c.nt_handle_import,
                sysmem_import: c.sysmem_import,
                mutable_command_lists: c.mutable_command_lists,
            };
            (Ok(info), npu_paths::try_all(npu, compiled, &m, cpu, vp))
        }
        Err(e) => (Err(e.to_string()), Vec::new()),
    };
    #[cfg(feature = "sycl")]
    let (strategies, auto) =
        strategies(setup.as_ref().map_err(|e| Error::new(e.kind().clone(), e.to_string())), &m, vp);
    Ok(Report {
        platform,
        loader,
        drivers,
        openvino,
        npu: npu_info,
        sycl,
        model: format!(
            "{} ({} {} -> {} {})",
            m.name, m.inputs[0].element_type, m.inputs[0].shape, m.outputs[0].element_type, m.outputs[0].shape
        ),
        npu_paths,
        #[cfg(feature = "sycl")]
        strategies,
        #[cfg(feature = "sycl")]
        auto,
    })
}

/// Every sharing strategy run end to end (`setup` failed: every row says why none ran), and Auto.
#[cfg(feature = "sycl")]
fn strategies(
    setup: Result<&Setup, Error>,
    m: &ReferenceModel,
    vp: Option<&'static VirtualPlatform>,
) -> (Vec<StrategyRow>, Option<AutoInfo>) {
    let rows: [(StrategyKind, &'static str, UsmKind); 7] = [
        (StrategyKind::CardPath, "the NPU plugin's L0 context", UsmKind::Shared),
        (StrategyKind::DmaBuf, "exportable device memory", UsmKind::Device),
        (StrategyKind::CpuVa, "host USM", UsmKind::Host),
        (StrategyKind::CpuVa, "shared USM", UsmKind::Shared),
        (StrategyKind::SharedSystem, "page-aligned process memory", UsmKind::Host),
        (StrategyKind::NpuExport, "exportable NPU memory", UsmKind::Device),
        (StrategyKind::NpuToSycl, "L0 host tensor + memcpy", UsmKind::Host),
    ];
    let gpu = || -> Result<(sycl::SyclDevice, Arc<sycl::SyclContext>), Error> {
        let gpu = sycl::devices()?
            .into_iter()
            .find(|d| d.is_level_zero() && d.device_type == sycl::DeviceType::Gpu)
            .ok_or_else(|| {
                Error::unsupported(
                    Path::Sycl,
                    Reason::NoLevelZeroGpu,
                    "no Level Zero GPU is a SYCL device here; every strategy needs the iGPU's",
                )
            })?;
        let context = sycl::SyclContext::new(&gpu)?;
        Ok((gpu, context))
    };
    match setup.and_then(|s| gpu().map(|g| (s, g))) {
        Ok((Setup { compiled, npu, cpu, .. }, (gpu, context))) => {
            let bench = Bench { npu, compiled, context: &context, gpu: &gpu, m, cpu, vp };
            let strategies = rows.into_iter().map(|(kind, variant, usm)| bench.run(kind, variant, usm)).collect();
            let auto = Some(match Auto::select(npu, &context, &gpu) {
                Ok(a) => AutoInfo { chosen: Ok(a.kind()), report: a.decision().to_string() },
                Err(e) => AutoInfo { chosen: Err(e.to_string()), report: format!("{e:#}") },
            });
            (strategies, auto)
        }
        Err(e) => {
            let not_run = |(kind, variant, _)| StrategyRow {
                kind,
                variant,
                status: Status::NotRun,
                zero_copy: None,
                detail: format!("not run: {e}"),
            };
            (rows.into_iter().map(not_run).collect(), None)
        }
    }
}

// ---- the table -----------------------------------------------------------------------------------

fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// "Lunar Lake (NPU 0x643e, NPU 40xx)", from the NPU's device id.
fn laptop(n: &NpuInfo) -> String {
    match n.generation {
        Some(g) => format!("{g} (NPU {:#06x}, {})", n.device_id, g.npu_family()),
        None => format!("not a known Core Ultra generation (NPU device id {:#06x})", n.device_id),
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn table(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "npu-sycl-doctor: what works on this machine (tried, not guessed)");
    let _ = writeln!(o);
    if r.platform.is_virtual {
        let _ = writeln!(o, "PLATFORM: VIRTUAL Level Zero platform ({})", r.platform.reason);
        let runtimes =
            if cfg!(feature = "sycl") { "OpenVINO NPU plugin and DPC++ runtime" } else { "OpenVINO NPU plugin" };
        let _ = writeln!(o, "          a virtual Intel GPU + NPU under the real {runtimes}");
    } else {
        let _ = writeln!(o, "PLATFORM: REAL ({}; accel nodes: {})", r.platform.reason, r.platform.accel.join(", "));
    }

    let _ = writeln!(o);
    let _ = writeln!(o, "LEVEL ZERO LOADER");
    let _ = writeln!(o, "  path     {}", r.loader.path);
    let _ = writeln!(o, "  virtual  {}", yes(r.loader.is_virtual));
    match &r.loader.versions {
        Ok(v) => {
            for c in v {
                let _ = writeln!(o, "  version  {} {} (API {})", c.component, c.version, c.spec);
            }
        }
        Err(e) => {
            let _ = writeln!(o, "  version  unknown: {e}");
        }
    }

    let _ = writeln!(o);
    let _ = writeln!(o, "LEVEL ZERO DRIVERS");
    match &r.drivers {
        Err(e) => {
            let _ = writeln!(o, "  error: {e}");
        }
        Ok(ds) if ds.is_empty() => {
            let _ = writeln!(o, "  none");
        }
        Ok(ds) => {
            let _ = writeln!(
                o,
                "  {:<3} {:<8} {:<37} {:<11} {:<5} {:<22} devices",
                "#", "kind", "uuid", "version", "API", "SYCL platform"
            );
            for d in ds {
                let sycl = match &d.sycl_platform {
                    Ok(Some((i, _))) => format!("yes (platform {i})"),
                    Ok(None) => "no".to_string(),
                    Err(_) => "error (see below)".to_string(),
                };
                let devs: Vec<String> = d.devices.iter().map(|x| format!("{} {:?}", x.kind, x.name)).collect();
                let _ = writeln!(
                    o,
                    "  {:<3} {:<8} {:<37} {:<11} {:<5} {:<22} {}",
                    d.index,
                    d.kind(),
                    d.uuid,
                    format!("{:#x}", d.driver_version),
                    d.api_version,
                    sycl,
                    devs.join(", ")
                );
            }
            for d in ds {
                let ext: Vec<String> = d
                    .extensions
                    .iter()
                    .map(|(n, v)| format!("{n} {}.{}", sys::ze_major_version(*v), sys::ze_minor_version(*v)))
                    .collect();
                let what = if d.is_intel_npu_driver { ", Intel NPU driver uuid" } else { "" };
                if ext.is_empty() {
                    let _ = writeln!(o, "  driver {} extensions: none{what}", d.index);
                } else {
                    let _ = writeln!(o, "  driver {} extensions ({}{what}):", d.index, ext.len());
                    o.push_str(&wrap(&ext.join(", "), 100, "    "));
                }
            }
            let hidden: Vec<String> = ds
                .iter()
                .filter(|d| matches!(d.sycl_platform, Ok(None)))
                .map(|d| format!("driver {} ({})", d.index, d.kind()))
                .collect();
            if !hidden.is_empty() {
                let _ = writeln!(
                    o,
                    "  not a SYCL platform: {} — DPC++ makes platforms only of drivers with a GPU device",
                    hidden.join(", ")
                );
            }
            for d in ds {
                if let Err(e) = &d.sycl_platform {
                    let _ = writeln!(o, "  driver {} ({}) SYCL platform: error:", d.index, d.kind());
                    o.push_str(&wrap(e, 100, "    "));
                }
            }
        }
    }

    let _ = writeln!(o);
    let _ = writeln!(o, "OPENVINO");
    let _ = writeln!(o, "  version  {}", r.openvino.version.as_deref().unwrap_or_else(|e| e));
    match &r.openvino.devices {
        Ok(d) => {
            let _ = writeln!(o, "  devices  {}", d.join(", "));
        }
        Err(e) => {
            let _ = writeln!(o, "  devices  error: {e}");
        }
    }
    match &r.openvino.npu_name {
        Ok(n) => {
            let _ = writeln!(o, "  NPU      {n}");
        }
        Err(e) => {
            let _ = writeln!(o, "  NPU      error: {e}");
        }
    }
    match &r.npu {
        Ok(n) => {
            let _ = writeln!(o, "  LAPTOP   {}", laptop(n));
            let _ = writeln!(
                o,
                "  NPU context: device {:?}, driver version {:#x}, API {}; dma-buf import {}, NT-handle import {}, \
                 system-memory (CPU_VA) import {}, mutable command lists {}",
                n.device_name,
                n.driver_version,
                n.api_version,
                yes(n.fd_import),
                yes(n.nt_handle_import),
                yes(n.sysmem_import),
                yes(n.mutable_command_lists)
            );
        }
        Err(e) => {
            let _ = writeln!(o, "  NPU context: unavailable: {e}");
        }
    }

    let _ = writeln!(o);
    let _ = writeln!(o, "SYCL PLATFORMS");
    match &r.sycl {
        Err(e) => {
            let _ = writeln!(o, "  error: {e}");
        }
        Ok(ps) if ps.is_empty() => {
            let _ = writeln!(o, "  none (no usable Level Zero GPU driver)");
        }
        Ok(ps) => {
            for p in ps {
                let devs: Vec<String> = p.devices.iter().map(|(t, n)| format!("{t} {n:?}")).collect();
                let _ = writeln!(o, "  [{}] {} {:?} ({}): {}", p.index, p.backend, p.name, p.version, devs.join(", "));
            }
        }
    }

    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "NPU MEMORY PATHS without SYCL (each run end to end on {}: write, bind, infer on the NPU, read, compare with the CPU plugin)",
        r.model
    );
    let _ = writeln!(o, "  {:<16} {:<50} {:<12} in place", "path", "memory", "result");
    for p in &r.npu_paths {
        let _ = writeln!(o, "  {:<16} {:<50} {:<12} {}", p.path, p.memory, p.status.as_str(), zero_copy(p.zero_copy));
    }
    let _ = writeln!(o, "  details:");
    for p in &r.npu_paths {
        let _ = writeln!(o, "  - {} ({}): {}", p.path, p.memory, p.status.as_str());
        o.push_str(&wrap(&p.detail, 100, "      "));
    }
    #[cfg(feature = "sycl")]
    strategies_table(r, &mut o);
    let working = r.working();
    let _ = writeln!(o);
    let what = if cfg!(feature = "sycl") { "SYCL ⇄ NPU sharing strategy" } else { "NPU memory path" };
    if working.is_empty() {
        let _ = writeln!(o, "RESULT: no {what} works here");
    } else {
        #[cfg(feature = "sycl")]
        let tried = r.strategies.len();
        #[cfg(not(feature = "sycl"))]
        let tried = r.npu_paths.len();
        let _ = writeln!(o, "RESULT: {} of {tried} work: {}", working.len(), working.join(", "));
    }
    o
}

fn zero_copy(z: Option<bool>) -> &'static str {
    match z {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

#[cfg(feature = "sycl")]
fn strategies_table(r: &Report, o: &mut String) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "SHARING STRATEGIES (each run end to end on {}: create, write via SYCL, bind, infer on the NPU, read via SYCL, compare with the CPU plugin)",
        r.model
    );
    let _ = writeln!(o, "  {:<22} {:<32} {:<12} zero-copy", "strategy", "memory", "result");
    for s in &r.strategies {
        let _ = writeln!(
            o,
            "  {:<22} {:<32} {:<12} {}",
            s.kind.as_str(),
            s.variant,
            s.status.as_str(),
            zero_copy(s.zero_copy)
        );
    }
    let _ = writeln!(o, "  details:");
    for s in &r.strategies {
        let _ = writeln!(o, "  - {} ({}): {}", s.kind.as_str(), s.variant, s.status.as_str());
        o.push_str(&wrap(&s.detail, 100, "      "));
    }
    if let Some(a) = &r.auto {
        let _ = writeln!(o);
        match &a.chosen {
            Ok(k) => {
                let _ = writeln!(o, "AUTO: chooses {k}");
            }
            Err(_) => {
                let _ = writeln!(o, "AUTO: no strategy");
            }
        }
        o.push_str(&wrap(&a.report, 100, "  "));
    }
}

// ---- JSON ----------------------------------------------------------------------------------------

fn json(r: &Report) -> Json {
    let err_or = |e: &String| Json::Obj(vec![("error", Json::str(e.clone()))]);
    let drivers = match &r.drivers {
        Ok(ds) => Json::Arr(
            ds.iter()
                .map(|d| {
                    Json::Obj(vec![
                        ("index", Json::Num(d.index as u64)),
                        ("kind", Json::str(d.kind())),
                        ("uuid", Json::str(d.uuid.clone())),
                        ("intel_npu_driver", Json::Bool(d.is_intel_npu_driver)),
                        ("driver_version", Json::Num(d.driver_version as u64)),
                        ("api_version", Json::str(d.api_version.clone())),
                        (
                            "sycl_platform",
                            match &d.sycl_platform {
                                Ok(Some((i, n))) => {
                                    Json::Obj(vec![("index", Json::Num(*i as u64)), ("name", Json::str(n.clone()))])
                                }
                                Ok(None) => Json::Null,
                                Err(e) => err_or(e),
                            },
                        ),
                        (
                            "devices",
                            Json::Arr(
                                d.devices
                                    .iter()
                                    .map(|x| {
                                        Json::Obj(vec![
                                            ("type", Json::str(x.kind)),
                                            ("name", Json::str(x.name.clone())),
                                            ("vendor_id", Json::Num(x.vendor_id as u64)),
                                            ("device_id", Json::Num(x.device_id as u64)),
                                        ])
                                    })
                                    .collect(),
                            ),
                        ),
                        (
                            "extensions",
                            Json::Arr(
                                d.extensions
                                    .iter()
                                    .map(|(n, v)| {
                                        Json::Obj(vec![
                                            ("name", Json::str(n.clone())),
                                            (
                                                "version",
                                                Json::str(format!(
                                                    "{}.{}",
                                                    sys::ze_major_version(*v),
                                                    sys::ze_minor_version(*v)
                                                )),
                                            ),
                                        ])
                                    })
                                    .collect(),
                            ),
                        ),
                    ])
                })
                .collect(),
        ),
        Err(e) => err_or(e),
    };
    let npu_paths = Json::Arr(
        r.npu_paths
            .iter()
            .map(|p| {
                Json::Obj(vec![
                    ("path", Json::str(p.path)),
                    ("memory", Json::str(p.memory)),
                    ("status", Json::str(p.status.as_str())),
                    ("in_place", p.zero_copy.map(Json::Bool).unwrap_or(Json::Null)),
                    ("detail", Json::str(p.detail.clone())),
                ])
            })
            .collect(),
    );
    #[cfg(feature = "sycl")]
    let strategies = Json::Arr(
        r.strategies
            .iter()
            .map(|s| {
                Json::Obj(vec![
                    ("strategy", Json::str(s.kind.as_str())),
                    ("kind", Json::str(format!("{:?}", s.kind))),
                    ("memory", Json::str(s.variant)),
                    ("status", Json::str(s.status.as_str())),
                    ("zero_copy", s.zero_copy.map(Json::Bool).unwrap_or(Json::Null)),
                    ("detail", Json::str(s.detail.clone())),
                ])
            })
            .collect(),
    );
    let mut fields = Vec::new();
    fields.extend([
        (
            "platform",
            Json::Obj(vec![
                ("virtual", Json::Bool(r.platform.is_virtual)),
                ("reason", Json::str(r.platform.reason.clone())),
                ("accel", Json::Arr(r.platform.accel.iter().map(|a| Json::str(a.clone())).collect())),
            ]),
        ),
        (
            "loader",
            Json::Obj(vec![
                ("path", Json::str(r.loader.path.clone())),
                ("virtual", Json::Bool(r.loader.is_virtual)),
                (
                    "versions",
                    match &r.loader.versions {
                        Ok(v) => Json::Arr(
                            v.iter()
                                .map(|c| {
                                    Json::Obj(vec![
                                        ("component", Json::str(c.component.clone())),
                                        ("version", Json::str(c.version.clone())),
                                        ("api_version", Json::str(c.spec.clone())),
                                    ])
                                })
                                .collect(),
                        ),
                        Err(e) => err_or(e),
                    },
                ),
            ]),
        ),
        ("drivers", drivers),
        (
            "openvino",
            Json::Obj(vec![
                (
                    "version",
                    match &r.openvino.version {
                        Ok(v) => Json::str(v.clone()),
                        Err(e) => err_or(e),
                    },
                ),
                (
                    "devices",
                    match &r.openvino.devices {
                        Ok(d) => Json::Arr(d.iter().map(|x| Json::str(x.clone())).collect()),
                        Err(e) => err_or(e),
                    },
                ),
                (
                    "npu_full_name",
                    match &r.openvino.npu_name {
                        Ok(n) => Json::str(n.clone()),
                        Err(e) => err_or(e),
                    },
                ),
            ]),
        ),
        (
            "npu",
            match &r.npu {
                Ok(n) => Json::Obj(vec![
                    ("device_name", Json::str(n.device_name.clone())),
                    ("device_id", Json::Num(n.device_id as u64)),
                    ("laptop", Json::opt_str(n.generation.map(|g| g.to_string()))),
                    ("driver_version", Json::Num(n.driver_version as u64)),
                    ("api_version", Json::str(n.api_version.clone())),
                    ("dma_buf_import", Json::Bool(n.fd_import)),
                    ("nt_handle_import", Json::Bool(n.nt_handle_import)),
                    ("sysmem_import", Json::Bool(n.sysmem_import)),
                    ("mutable_command_lists", Json::Bool(n.mutable_command_lists)),
                ]),
                Err(e) => err_or(e),
            },
        ),
        (
            "sycl_platforms",
            match &r.sycl {
                Ok(ps) => Json::Arr(
                    ps.iter()
                        .map(|p| {
                            Json::Obj(vec![
                                ("index", Json::Num(p.index as u64)),
                                ("backend", Json::str(p.backend.clone())),
                                ("name", Json::str(p.name.clone())),
                                ("version", Json::str(p.version.clone())),
                                (
                                    "devices",
                                    Json::Arr(
                                        p.devices
                                            .iter()
                                            .map(|(t, n)| {
                                                Json::Obj(vec![
                                                    ("type", Json::str(t.clone())),
                                                    ("name", Json::str(n.clone())),
                                                ])
                                            })
                                            .collect(),
                                    ),
                                ),
                            ])
                        })
                        .collect(),
                ),
                Err(e) => err_or(e),
            },
        ),
        ("model", Json::str(r.model.clone())),
        ("npu_paths", npu_paths),
    ]);
    #[cfg(feature = "sycl")]
    fields.extend([
        ("strategies", strategies),
        (
            "auto",
            match &r.auto {
                Some(a) => Json::Obj(vec![
                    ("chosen", a.chosen.as_ref().ok().map(|k| Json::str(k.as_str())).unwrap_or(Json::Null)),
                    ("report", Json::str(a.report.clone())),
                ]),
                None => Json::Null,
            },
        ),
    ]);
    fields.push(("working", Json::Arr(r.working().into_iter().map(Json::Str).collect())));
    Json::Obj(fields)
}

// ---- main ------------------------------------------------------------------------------------------

const USAGE: &str = "usage: npu-sycl-doctor [--json] [--virtual]
  --json     print one JSON object instead of the table
  --virtual  use the virtual Level Zero platform even when an Intel NPU is present
exit status: 0 when at least one SYCL <-> NPU strategy works end to end (built without SYCL: one NPU memory
path), 1 when none does, 2 for usage errors";

/// What a run reports, and where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Options {
    json: bool,
    force_virtual: bool,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Run(Options),
    Help,
}

/// A command line the doctor does not understand: what is wrong with it, printed before the usage.
#[derive(Debug, PartialEq, Eq)]
struct UsageError(String);

/// The command line, in order: the first `-h`/`--help` or the first unknown argument decides.
/// Arguments are taken as the OS gives them: one that is not UTF-8 is an unknown argument, not a
/// panic (`std::env::args` panics on it).
fn parse_args<I: IntoIterator<Item = std::ffi::OsString>>(args: I) -> Result<Command, UsageError> {
    let mut o = Options::default();
    for a in args {
        match a.to_str() {
            Some("--json") => o.json = true,
            Some("--virtual") => o.force_virtual = true,
            Some("-h" | "--help") => return Ok(Command::Help),
            _ => return Err(UsageError(format!("unknown argument {:?}", a.to_string_lossy()))),
        }
    }
    Ok(Command::Run(o))
}

/// With `--json`, stdout must carry the one JSON object and nothing else, but the runtimes write
/// to the process's stdout on their own (OpenVINO's NPU plugin logs the Level Zero errors it meets
/// there, e.g. a failed `zeMemFree`). So the report keeps a duplicate of stdout for itself and fd 1
/// is pointed at stderr for the rest of the run: what the runtimes print lands there.
#[cfg(unix)]
fn stdout_for_the_report() -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsFd, AsRawFd};
    let out = std::io::stdout().as_fd().try_clone_to_owned()?;
    let err = std::io::stderr();
    // SAFETY: dup2 of two fds this process has open (stderr onto fd 1); no Rust object owns fd 1
    // (std's stdout only writes to the number), and `out` keeps the original stdout open.
    if unsafe { libc::dup2(err.as_fd().as_raw_fd(), 1) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(std::fs::File::from(out))
}

/// Windows: the same with the process's standard output handle. A C runtime that took its own
/// stdout at start (MSVC's, in OpenVINO's DLLs) keeps writing to the original one.
#[cfg(windows)]
fn stdout_for_the_report() -> std::io::Result<std::fs::File> {
    use std::os::windows::io::{AsHandle, AsRawHandle};
    use windows_sys::Win32::System::Console::{SetStdHandle, STD_OUTPUT_HANDLE};
    let out = std::io::stdout().as_handle().try_clone_to_owned()?;
    // SAFETY: points the process's standard output at its open standard error handle; `out` keeps
    // the original open.
    if unsafe { SetStdHandle(STD_OUTPUT_HANDLE, std::io::stderr().as_raw_handle()) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(std::fs::File::from(out))
}

fn main() {
    let options = match parse_args(std::env::args_os().skip(1)) {
        Ok(Command::Run(o)) => o,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return;
        }
        Err(UsageError(what)) => {
            eprintln!("npu-sycl-doctor: {what}\n{USAGE}");
            std::process::exit(2);
        }
    };
    // Taken before anything loads a runtime; without it (stdout closed?) the JSON goes to stdout as is.
    let report_out = if options.json { stdout_for_the_report().ok() } else { None };
    let report = match gather(options.force_virtual) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("npu-sycl-doctor: {e:#}");
            std::process::exit(1);
        }
    };
    if options.json {
        let mut s = String::new();
        json(&report).write(&mut s, 0);
        s.push('\n');
        let written = match report_out {
            Some(mut f) => std::io::Write::write_all(&mut f, s.as_bytes()),
            None => std::io::Write::write_all(&mut std::io::stdout(), s.as_bytes()),
        };
        if let Err(e) = written {
            eprintln!("npu-sycl-doctor: writing the report: {e}");
            std::process::exit(1);
        }
    } else {
        print!("{}", table(&report));
    }
    if report.working().is_empty() {
        std::process::exit(1);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use proptest::prelude::*;

    use super::{parse_args, Command, Options, UsageError};

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn known_command_lines() {
        let run = |json, force_virtual| Ok(Command::Run(Options { json, force_virtual }));
        assert_eq!(parse_args(args(&[])), run(false, false));
        assert_eq!(parse_args(args(&["--json"])), run(true, false));
        assert_eq!(parse_args(args(&["--virtual", "--json", "--virtual"])), run(true, true));
        assert_eq!(parse_args(args(&["--json", "-h", "--bogus"])), Ok(Command::Help));
        let e = parse_args(args(&["--json", "--bogus", "--help"])).unwrap_err();
        assert!(e.0.contains("\"--bogus\""), "{e:?}");
        // Not UTF-8: a usage error naming the argument, not a panic.
        let e = parse_args(vec![OsString::from_vec(vec![b'-', b'-', 0xff])]).unwrap_err();
        assert!(e.0.contains("--\u{fffd}"), "{e:?}");
    }

    /// One argument: a known flag, a near miss, any string, or any bytes (not UTF-8 included).
    fn arg() -> impl Strategy<Value = OsString> {
        prop_oneof![
            prop::sample::select(vec!["--json", "--virtual", "-h", "--help"]).prop_map(OsString::from),
            prop::sample::select(vec![
                "",
                "-",
                "--",
                "--JSON",
                "--json=1",
                "-j",
                "json",
                "--virtual ",
                "---help",
                "-help",
                "--h",
                "-hh",
            ])
            .prop_map(OsString::from),
            any::<String>().prop_map(OsString::from),
            prop::collection::vec(any::<u8>(), 0..12).prop_map(OsString::from_vec),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any argv: never a panic; a run only when every argument is a known flag, help only when
        /// `-h`/`--help` comes before any unknown argument, and otherwise a usage error that names
        /// the first unknown argument.
        #[test]
        fn any_command_line_is_a_run_help_or_usage_error(argv in prop::collection::vec(arg(), 0..6)) {
            let known = |a: &OsString| matches!(a.to_str(), Some("--json" | "--virtual"));
            let help = |a: &OsString| matches!(a.to_str(), Some("-h" | "--help"));
            let first_other = argv.iter().position(|a| !known(a));
            match parse_args(argv.clone()) {
                Ok(Command::Run(o)) => {
                    prop_assert!(first_other.is_none());
                    prop_assert_eq!(o.json, argv.iter().any(|a| a == "--json"));
                    prop_assert_eq!(o.force_virtual, argv.iter().any(|a| a == "--virtual"));
                }
                Ok(Command::Help) => prop_assert!(help(&argv[first_other.unwrap()])),
                Err(UsageError(what)) => {
                    let bad = &argv[first_other.unwrap()];
                    prop_assert!(!help(bad));
                    prop_assert_eq!(what, format!("unknown argument {:?}", bad.to_string_lossy()));
                }
            }
        }
    }
}
