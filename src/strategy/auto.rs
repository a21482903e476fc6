//! Auto: try the strategies in order and keep the first that works on this machine.

use std::fmt;
use std::sync::Arc;

use super::{Strategy, StrategyKind};
use crate::error::{Error, Path, Result};
use crate::npu::NpuContext;
use crate::openvino::CompiledModel;
use crate::sycl;

/// **Auto**: tries the strategies in [`ORDER`](Self::ORDER) and uses the first that works here.
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
/// The card path (a SYCL context over the NPU's own Level Zero context) is not in the order: it
/// cannot work with DPC++ (no SYCL platform wraps the NPU's driver), and its typed answer comes from
/// [`Strategy::new`]`(CardPath, ..)` and [`sycl::SyclContext::from_level_zero`] where a program asks
/// for it. [`survey`](Self::survey) tries it with the rest, for a diagnostic tool.
///
/// # Trying, not guessing
/// Each strategy is constructed, and its [`probe`](Strategy::probe) makes a 4 KiB shared tensor,
/// writes a pattern through SYCL and checks that the NPU's mapping of the tensor shows it, then
/// writes through the NPU's mapping and checks that SYCL reads it. Auto stops at the first that
/// works; the [`AutoDecision`] records the outcome of each strategy it tried.
///
/// # Who owns what
/// Auto owns the chosen [`Strategy`] (its queue, an `Arc` of the SYCL context, the NPU context).
/// The probes' tensors are gone when `select` returns.
#[derive(Debug)]
pub struct Auto {
    strategy: Strategy,
    decision: AutoDecision,
}

/// Why [`Auto`] chose what it chose: the strategies it tried, in order, with their outcomes. The
/// last one tried is the one chosen.
///
/// `Display` prints one line, e.g. `chose dma-buf because it is first in Auto's order and works`,
/// or, on a machine where dma-buf fails, `chose shared system memory because dma-buf: …; CPU_VA:
/// …; shared system memory: works`.
#[derive(Debug)]
pub struct AutoDecision {
    /// The strategy chosen: the first in [`Auto::ORDER`] whose probe worked.
    pub chosen: StrategyKind,
    /// The strategies tried, in order, with `Ok(())` or the error that ruled each out.
    pub attempts: Vec<(StrategyKind, Result<(), Error>)>,
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
    /// (the iGPU's), and keeps the first that works; the ones after it are not tried.
    ///
    /// # Errors
    /// [`Unsupported { path: Path::Auto }`](crate::ErrorKind::Unsupported) when no strategy works; the
    /// message lists every attempt's error.
    pub fn select(npu: &NpuContext, context: &Arc<sycl::SyclContext>, device: &sycl::SyclDevice) -> Result<Auto> {
        let mut attempts: Vec<(StrategyKind, Result<(), Error>)> = Vec::with_capacity(Self::ORDER.len());
        for kind in Self::ORDER {
            match try_strategy(kind, npu, context, device) {
                Ok(strategy) => {
                    attempts.push((kind, Ok(())));
                    return Ok(Auto { decision: AutoDecision { chosen: kind, attempts }, strategy });
                }
                Err(e) => attempts.push((kind, Err(e))),
            }
        }
        let why: Vec<String> =
            attempts.iter().filter_map(|(k, r)| r.as_ref().err().map(|e| format!("{k}: {e}"))).collect();
        Err(Error::unsupported(Path::Auto, "no SYCL ⇄ NPU sharing strategy works here").explain(why.join("; ")))
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
            .ok_or_else(|| {
                Error::unsupported(Path::Sycl, "SYCL lists no Level Zero GPU").explain(
                    "every strategy shares memory of the iGPU's Level Zero driver; check ONEAPI_DEVICE_SELECTOR and \
                     that the GPU's Level Zero driver is installed (npu-sycl-doctor shows what is found)",
                )
            })?;
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

    /// The chosen strategy.
    pub fn strategy(&self) -> &Strategy {
        &self.strategy
    }

    /// Why it was chosen.
    pub fn decision(&self) -> &AutoDecision {
        &self.decision
    }

    /// The chosen strategy and the decision.
    pub fn into_parts(self) -> (Strategy, AutoDecision) {
        (self.strategy, self.decision)
    }
}

/// `Auto` is its chosen [`Strategy`]: `auto.tensor(..)`, `auto.queue()`, `auto.kind()`.
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
