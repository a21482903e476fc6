//! Auto: probe what this machine supports and pick the best strategy that works.

use std::fmt;
use std::sync::Arc;

use super::{Strategy, StrategyKind};
use crate::error::{Error, Path, Result};
use crate::npu::NpuContext;
use crate::openvino::CompiledModel;
use crate::sycl;

/// **Auto**: tries every strategy on this machine and uses the best one that works.
///
/// # Order
/// [`StrategyKind::ALL`]: **card path → dma-buf → CPU_VA → shared system memory → NPU→SYCL copy**.
/// 1. `CardPath` over the NPU's own context (zero-copy, one context for both): fails on stock
///    DPC++ with a typed explanation, but is tried first so a stack that supports it gets it.
/// 2. `DmaBuf`: Intel's recommended Linux path; zero-copy, SYCL keeps device memory.
/// 3. `CpuVa` with host USM: zero-copy, but GPU-driver USM as NPU sysmem is unverified on real
///    hardware.
/// 4. `SharedSystem`: process memory the NPU imports; zero-copy for SYCL only where the device
///    reaches system memory, SYCL copies elsewhere; needs the NPU's user-memory import.
/// 5. `NpuToSycl`: always works where the NPU works, but copies on the SYCL side.
///
/// On the virtual platform (and, presumably, every Linux Core Ultra with stock DPC++) Auto chooses
/// **dma-buf**, because the card path is unsupported.
///
/// # Trying, not guessing
/// Each strategy is constructed, and its [`probe`](Strategy::probe) makes a 4 KiB shared tensor,
/// writes a pattern through SYCL and checks that the NPU's mapping of the tensor shows it, then
/// writes through the NPU's mapping and checks that SYCL reads it. Every strategy is tried (they are
/// cheap), so the [`AutoDecision`] records each outcome; the first in the order that worked is
/// chosen.
///
/// # Who owns what
/// Auto owns the chosen [`Strategy`] (its queue, an `Arc` of the SYCL context, the NPU context).
/// The probes' tensors are gone when `select` returns.
#[derive(Debug)]
pub struct Auto {
    strategy: Strategy,
    decision: AutoDecision,
}

/// Why [`Auto`] chose what it chose: every strategy tried, in order, with its outcome.
///
/// `Display` prints one line, e.g. `chose dma-buf because card path: the card path is not
/// supported here: …; dma-buf: works (also working: CPU_VA, NPU→SYCL copy)`.
#[derive(Debug)]
pub struct AutoDecision {
    /// The strategy chosen: the first in [`StrategyKind::ALL`] whose probe worked.
    pub chosen: StrategyKind,
    /// Every strategy tried, in order, with `Ok(())` or the error that ruled it out.
    pub attempts: Vec<(StrategyKind, Result<(), Error>)>,
}

impl AutoDecision {
    /// The error that ruled out `kind`, if it was tried and failed.
    pub fn error(&self, kind: StrategyKind) -> Option<&Error> {
        self.attempts.iter().find(|(k, _)| *k == kind).and_then(|(_, r)| r.as_ref().err())
    }

    /// The strategies whose probe worked, in order.
    pub fn working(&self) -> Vec<StrategyKind> {
        self.attempts.iter().filter(|(_, r)| r.is_ok()).map(|(k, _)| *k).collect()
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
        let after: Vec<_> = self.attempts.iter().skip_while(|(k, _)| *k != self.chosen).skip(1).collect();
        let also: Vec<String> = after.iter().filter(|(_, r)| r.is_ok()).map(|(k, _)| k.to_string()).collect();
        let failed: Vec<String> =
            after.iter().filter_map(|(k, r)| r.as_ref().err().map(|e| format!("{k}: {e}"))).collect();
        if !also.is_empty() {
            write!(f, " (also working: {})", also.join(", "))?;
        }
        if !failed.is_empty() {
            write!(f, " (also failed: {})", failed.join("; "))?;
        }
        Ok(())
    }
}

impl Auto {
    /// The order Auto tries the strategies in.
    pub const ORDER: [StrategyKind; 6] = StrategyKind::ALL;

    /// Tries every strategy in [`ORDER`](Self::ORDER) for `npu` and the SYCL `device` of
    /// `context` (the iGPU's), and keeps the first that works.
    ///
    /// # Errors
    /// [`Unsupported { path: Path::Auto }`](crate::ErrorKind::Unsupported) when no strategy works; the
    /// message lists every attempt's error.
    pub fn select(npu: &NpuContext, context: &Arc<sycl::Context>, device: &sycl::Device) -> Result<Auto> {
        let mut attempts: Vec<(StrategyKind, Result<(), Error>)> = Vec::with_capacity(Self::ORDER.len());
        let mut chosen: Option<Strategy> = None;
        for (kind, outcome) in Self::attempts(npu, context, device) {
            match outcome {
                Ok(s) => {
                    attempts.push((kind, Ok(())));
                    if chosen.is_none() {
                        chosen = Some(s);
                    }
                }
                Err(e) => attempts.push((kind, Err(e))),
            }
        }
        match chosen {
            Some(strategy) => Ok(Auto { decision: AutoDecision { chosen: strategy.kind(), attempts }, strategy }),
            None => {
                let why: Vec<String> =
                    attempts.iter().filter_map(|(k, r)| r.as_ref().err().map(|e| format!("{k}: {e}"))).collect();
                Err(Error::unsupported(Path::Auto, "no SYCL ⇄ NPU sharing strategy works here").explain(why.join("; ")))
            }
        }
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
        let context = sycl::Context::new(&gpu)?;
        Self::select(&npu, &context, &gpu)
    }

    /// Every strategy in [`ORDER`](Self::ORDER), constructed and [probed](Strategy::probe): the
    /// working ones, or the error that ruled each out. What [`select`](Self::select) decides
    /// from; a diagnostic tool can print it even when nothing works.
    pub fn attempts(
        npu: &NpuContext,
        context: &Arc<sycl::Context>,
        device: &sycl::Device,
    ) -> Vec<(StrategyKind, Result<Strategy, Error>)> {
        Self::ORDER
            .into_iter()
            .map(|kind| (kind, Strategy::new(kind, npu, context, device).and_then(|s| s.probe().map(|()| s))))
            .collect()
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
