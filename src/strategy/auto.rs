//! Auto: the first strategy that works on this machine, and per tensor the first that serves it.

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::request::shared_request;
use super::{SharedRequest, SharedTensor, Strategy, StrategyKind};
use crate::error::{Error, ErrorKind, Path, Reason, Result};
use crate::npu::NpuContext;
use crate::openvino::{CompiledModel, ElementType, Shape, TensorType};
use crate::sycl;

/// **Auto**: tries the strategies in [`ORDER`](Self::ORDER) and uses the first that works here;
/// a tensor that strategy cannot serve comes from the next one that can.
///
/// # Order
/// **dma-buf → CPU_VA → shared system memory → NPU→SYCL zero-copy → NPU→SYCL copy**.
/// 1. `DmaBuf`: Intel's recommended Linux path; zero-copy, SYCL keeps device memory.
/// 2. `CpuVa` with host USM: zero-copy where the NPU driver could pin the GPU driver's USM, which
///    Intel's drivers cannot (a typed refusal on every profile); kept for stacks that can.
/// 3. `SharedSystem`: process memory the NPU imports; zero-copy for SYCL only where the device
///    reaches system memory, SYCL copies elsewhere; needs the NPU's user-memory import.
/// 4. `NpuExport`: NPU memory allocated exportable, imported by SYCL; zero-copy where the GPU
///    driver imports the NPU's dma-buf (unverified on hardware).
/// 5. `NpuToSycl`: always works where the NPU works, but copies on the SYCL side.
///
/// [`select_in`](Self::select_in) takes another order. The card path (a SYCL context over the
/// NPU's own Level Zero context) is not in the default order: it cannot work with DPC++ (no SYCL
/// platform wraps the NPU's driver), and its typed answer comes from
/// [`Strategy::new`]`(CardPath, ..)` and [`sycl::SyclContext::from_level_zero`] where a program asks
/// for it. [`survey`](Self::survey) tries it with the rest, for a diagnostic tool.
///
/// # Trying, not guessing
/// Each strategy is constructed, and its [`probe`](Strategy::probe) makes a 4 KiB shared tensor,
/// writes a pattern through SYCL and checks that the NPU's mapping of the tensor shows it, then
/// writes through the NPU's mapping and checks that SYCL reads it. `select` stops at the first
/// that works; the [`AutoDecision`] records the outcome of each strategy it tried.
///
/// # Per tensor
/// A strategy that works may still not serve every tensor: the CPU_VA strategies take whole pages
/// only ([`Strategy::check_tensor`]), so a 4000-byte `[1, 1000, 1, 1]` `f32` output cannot be
/// shared system memory. [`tensor`](Self::tensor) (and [`request`](Self::request), per port) asks
/// the chosen strategy first, then the ones after it in the order, and takes the first that serves
/// the tensor; [`decide`](Self::decide) says which it would be and why, without allocating.
///
/// # What it costs
/// `select` makes and probes the strategies up to the first that works: per strategy tried, a
/// 4 KiB tensor made and imported by the NPU and 8 KiB through SYCL (on every laptop profile here
/// dma-buf works, so one probe). A strategy after the chosen one is made and probed only when a
/// tensor first needs it, and kept for the next.
///
/// # Who owns what
/// Auto owns its strategies (each: its queue, an `Arc` of the SYCL context, the NPU context). The
/// probes' tensors are gone when the probe returns.
#[derive(Debug)]
pub struct Auto {
    strategy: Strategy,
    decision: AutoDecision,
    /// The strategies after the chosen one in the order, made (and probed) when a tensor first
    /// needs one: the strategy, or the error that ruled it out.
    fallbacks: Vec<(StrategyKind, OnceLock<Result<Strategy, Error>>)>,
    npu: NpuContext,
    context: Arc<sycl::SyclContext>,
    device: sycl::SyclDevice,
}

/// Why [`Auto`] chose what it chose: the strategies it tried, in order, with their outcomes. The
/// last one tried is the one chosen.
///
/// `Display` prints one line, e.g. `chose dma-buf because it is first in Auto's order and works`,
/// or, on a machine where dma-buf fails, `chose shared system memory because dma-buf: …; CPU_VA:
/// …; shared system memory: works`.
#[derive(Debug)]
pub struct AutoDecision {
    /// The strategy chosen: the first in the order whose probe worked.
    pub chosen: StrategyKind,
    /// The strategies tried, in order, with `Ok(())` or the error that ruled each out.
    pub attempts: Vec<(StrategyKind, Result<(), Error>)>,
}

/// Which strategy [`Auto`] takes for one tensor, and why it passed over the ones before it
/// ([`Auto::decide`]). `Display` prints one line, e.g. `a f32 tensor of shape [1,1000,1,1]:
/// shared system memory: …; chose NPU→SYCL zero-copy`.
#[derive(Debug)]
pub struct TensorDecision {
    /// The tensor's element type.
    pub element_type: ElementType,
    /// The tensor's shape.
    pub shape: Shape,
    /// The strategy that serves it.
    pub chosen: StrategyKind,
    /// The strategies before it (from Auto's chosen one on), with the error that ruled each out
    /// for this tensor.
    pub passed_over: Vec<(StrategyKind, Error)>,
}

impl fmt::Display for TensorDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} tensor of shape {}: ", self.element_type, self.shape)?;
        for (kind, e) in &self.passed_over {
            write!(f, "{kind}: {e}; ")?;
        }
        write!(f, "chose {}", self.chosen)
    }
}

impl AutoDecision {
    /// The error that ruled out `kind`, if it was tried and failed.
    pub fn error(&self, kind: StrategyKind) -> Option<&Error> {
        self.attempts.iter().find(|(k, _)| *k == kind).and_then(|(_, r)| r.as_ref().err())
    }
}

impl fmt::Display for AutoDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chose {}", self.chosen)?;
        let before: Vec<_> = self.attempts.iter().take_while(|(k, _)| *k != self.chosen).collect();
        if before.is_empty() {
            write!(f, " because it is first in Auto's order and works")?;
        } else {
            write!(f, " because ")?;
            for (k, r) in before {
                match r {
                    Err(e) => write!(f, "{k}: {e}; ")?,
                    Ok(()) => write!(f, "{k}: works; ")?,
                }
            }
            write!(f, "{}: works", self.chosen)?;
        }
        Ok(())
    }
}

impl Auto {
    /// The order Auto tries the strategies in: [`StrategyKind::ALL`] without the card path.
    pub const ORDER: [StrategyKind; 5] = [
        StrategyKind::DmaBuf,
        StrategyKind::CpuVa,
        StrategyKind::SharedSystem,
        StrategyKind::NpuExport,
        StrategyKind::NpuToSycl,
    ];

    /// Tries the strategies in [`ORDER`](Self::ORDER) for `npu` and the SYCL `device` of `context`
    /// (the iGPU's), and keeps the first that works; the ones after it are tried only when a
    /// tensor needs them.
    ///
    /// # Errors
    /// [`Unsupported { path: Path::Auto }`](crate::ErrorKind::Unsupported) when no strategy works; the
    /// message lists every attempt's error.
    pub fn select(npu: &NpuContext, context: &Arc<sycl::SyclContext>, device: &sycl::SyclDevice) -> Result<Auto> {
        Self::select_in(&Self::ORDER, npu, context, device)
    }

    /// [`select`](Self::select) in the program's own `order` (for example shared system memory
    /// first, where the program's buffers are ordinary process memory).
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for an empty order or one that names
    /// a strategy twice; those of [`select`](Self::select).
    pub fn select_in(
        order: &[StrategyKind],
        npu: &NpuContext,
        context: &Arc<sycl::SyclContext>,
        device: &sycl::SyclDevice,
    ) -> Result<Auto> {
        if order.is_empty() || (1..order.len()).any(|i| order[..i].contains(&order[i])) {
            return Err(Error::invalid_argument(format!(
                "Auto's order {order:?} must name at least one strategy, each once"
            )));
        }
        let mut attempts: Vec<(StrategyKind, Result<(), Error>)> = Vec::with_capacity(order.len());
        for (i, &kind) in order.iter().enumerate() {
            match try_strategy(kind, npu, context, device) {
                Ok(strategy) => {
                    attempts.push((kind, Ok(())));
                    let fallbacks = order[i + 1..].iter().map(|&k| (k, OnceLock::new())).collect();
                    return Ok(Auto {
                        strategy,
                        decision: AutoDecision { chosen: kind, attempts },
                        fallbacks,
                        npu: npu.clone(),
                        context: Arc::clone(context),
                        device: device.clone(),
                    });
                }
                Err(e) => attempts.push((kind, Err(e))),
            }
        }
        let why: Vec<String> =
            attempts.iter().filter_map(|(k, r)| r.as_ref().err().map(|e| format!("{k}: {e}"))).collect();
        Err(Error::unsupported(
            Path::Auto,
            Reason::NoStrategy,
            format!("no SYCL ⇄ NPU sharing strategy works here ({})", why.join("; ")),
        ))
    }

    /// [`select`](Self::select) for the NPU context of `compiled` (a model compiled for the NPU)
    /// and the first Level Zero GPU SYCL lists (the iGPU), in a new SYCL context of its own.
    ///
    /// # Errors
    /// [`Unsupported { path: Sycl }`](crate::ErrorKind::Unsupported) when SYCL lists no Level
    /// Zero GPU; the errors of [`NpuContext::from_compiled_model`] and [`select`](Self::select).
    pub fn for_model(compiled: &CompiledModel) -> Result<Auto> {
        let npu = NpuContext::from_compiled_model(compiled)?;
        let gpu = sycl::devices()?
            .into_iter()
            .find(|d| d.is_level_zero() && d.device_type == sycl::DeviceType::Gpu)
            .ok_or_else(|| Error::unsupported(Path::Sycl, Reason::NoLevelZeroGpu, "SYCL lists no Level Zero GPU"))?;
        let context = sycl::SyclContext::new(&gpu)?;
        Self::select(&npu, &context, &gpu)
    }

    /// Every strategy of [`StrategyKind::ALL`] (the card path too), constructed and
    /// [probed](Strategy::probe): the working ones, or the error that ruled each out. For a
    /// diagnostic tool (it prints this even when nothing works); [`select`](Self::select) stops at
    /// the first that works instead.
    pub fn survey(
        npu: &NpuContext,
        context: &Arc<sycl::SyclContext>,
        device: &sycl::SyclDevice,
    ) -> Vec<(StrategyKind, Result<Strategy, Error>)> {
        StrategyKind::ALL.into_iter().map(|kind| (kind, try_strategy(kind, npu, context, device))).collect()
    }

    /// A shared tensor of `element_type` and `shape` from the chosen strategy or, where that one
    /// cannot serve it ([`Strategy::check_tensor`], or an [`Unsupported`](ErrorKind::Unsupported)
    /// refusal while making it), from the first strategy after it in the order that can
    /// ([`SharedTensor::kind`] says which). [`decide`](Self::decide) gives the reasons.
    ///
    /// # Errors
    /// [`Unsupported { path: Auto }`](ErrorKind::Unsupported) when no strategy serves the tensor
    /// (the explanation lists why each could not); the errors of [`Strategy::tensor`] that are not
    /// about the strategy (a dynamic element type, an empty shape, an allocation that failed).
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let shape = shape.into();
        self.serve(element_type, &shape, |s| s.tensor(element_type, shape.clone(), tensor_type)).map(|(t, _)| t)
    }

    /// Which strategy [`tensor`](Self::tensor) would take for `element_type` and `shape`, and why
    /// it passes over the ones before it, decided without allocating a tensor (a fallback strategy
    /// is made and probed the first time it is considered).
    ///
    /// # Errors
    /// Those of [`tensor`](Self::tensor), but for allocation errors.
    pub fn decide(&self, element_type: ElementType, shape: &Shape) -> Result<TensorDecision> {
        self.serve(element_type, shape, |_| Ok(())).map(|((), decision)| decision)
    }

    /// A request of `compiled` with a shared tensor bound to every input and output, each from the
    /// first strategy that serves its port's element type and shape ([`tensor`](Self::tensor)).
    ///
    /// # Errors
    /// Those of [`Strategy::request`] and [`tensor`](Self::tensor).
    pub fn request(&self, compiled: &CompiledModel) -> Result<SharedRequest> {
        shared_request(compiled, |element_type, shape, tensor_type| self.tensor(element_type, shape, tensor_type))
    }

    /// The chosen strategy.
    pub fn strategy(&self) -> &Strategy {
        &self.strategy
    }

    /// Why it was chosen.
    pub fn decision(&self) -> &AutoDecision {
        &self.decision
    }

    /// The chosen strategy and the decision (the fallbacks are dropped).
    pub fn into_parts(self) -> (Strategy, AutoDecision) {
        (self.strategy, self.decision)
    }

    /// `make` with the first strategy from the chosen one on that serves the tensor: the result
    /// and the decision. Only refusals about the strategy move on to the next one.
    fn serve<T>(
        &self,
        element_type: ElementType,
        shape: &Shape,
        mut make: impl FnMut(&Strategy) -> Result<T>,
    ) -> Result<(T, TensorDecision)> {
        let mut passed_over: Vec<(StrategyKind, Error)> = Vec::new();
        let candidates = std::iter::once((self.strategy.kind(), Ok(&self.strategy))).chain(self.fallbacks.iter().map(
            |(kind, slot)| {
                let made = slot.get_or_init(|| try_strategy(*kind, &self.npu, &self.context, &self.device));
                (*kind, made.as_ref())
            },
        ));
        for (kind, strategy) in candidates {
            let strategy = match strategy {
                Ok(s) => s,
                Err(e) => {
                    passed_over.push((kind, e.detached()));
                    continue;
                }
            };
            let served = strategy.check_tensor(element_type, shape).and_then(|()| make(strategy));
            match served {
                Ok(value) => {
                    let decision = TensorDecision { element_type, shape: shape.clone(), chosen: kind, passed_over };
                    return Ok((value, decision));
                }
                Err(e) if matches!(e.kind(), ErrorKind::Unsupported { .. } | ErrorKind::Alignment { .. }) => {
                    passed_over.push((kind, e));
                }
                Err(e) => return Err(e),
            }
        }
        let why: Vec<String> = passed_over.iter().map(|(k, e)| format!("{k}: {e}")).collect();
        Err(Error::unsupported(
            Path::Auto,
            Reason::NoStrategy,
            format!("no strategy serves a {element_type} tensor of shape {shape} ({})", why.join("; ")),
        ))
    }
}

/// `Auto` is its chosen [`Strategy`] (`auto.queue()`, `auto.kind()`), but for
/// [`tensor`](Auto::tensor) and [`request`](Auto::request), which pick per tensor
/// (`auto.check_tensor(..)` is the chosen strategy's answer; [`decide`](Auto::decide) is Auto's).
impl std::ops::Deref for Auto {
    type Target = Strategy;
    fn deref(&self) -> &Strategy {
        &self.strategy
    }
}

/// The strategy `kind`, made and probed.
fn try_strategy(
    kind: StrategyKind,
    npu: &NpuContext,
    context: &Arc<sycl::SyclContext>,
    device: &sycl::SyclDevice,
) -> Result<Strategy> {
    let strategy = Strategy::new(kind, npu, context, device)?;
    strategy.probe()?;
    Ok(strategy)
}
