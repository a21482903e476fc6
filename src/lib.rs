#![doc = include_str!("../docs/guide.md")]
#![cfg_attr(
    feature = "sycl",
    doc = "\n[`StrategyKind`]: strategy::StrategyKind\n[`StrategyKind::ALL`]: strategy::StrategyKind::ALL\n[`StrategyKind::CardPath`]: strategy::StrategyKind::CardPath\n[`StrategyKind::DmaBuf`]: strategy::StrategyKind::DmaBuf\n[`StrategyKind::CpuVa`]: strategy::StrategyKind::CpuVa\n[`StrategyKind::SharedSystem`]: strategy::StrategyKind::SharedSystem\n[`StrategyKind::NpuExport`]: strategy::StrategyKind::NpuExport\n[`StrategyKind::NpuToSycl`]: strategy::StrategyKind::NpuToSycl\n[`Auto::ORDER`]: strategy::Auto::ORDER\n[`Auto::survey`]: strategy::Auto::survey\n[`Auto`]: strategy::Auto\n[`CardPath`]: strategy::StrategyKind::CardPath\n[`Strategy::card_path`]: strategy::Strategy::card_path\n\
           [`Strategy::new`]: strategy::Strategy::new\n[`DmaBuf`]: strategy::StrategyKind::DmaBuf\n[`CpuVa`]: strategy::StrategyKind::CpuVa\n\
           [`NpuToSycl`]: strategy::StrategyKind::NpuToSycl\n[`SharedTensor`]: strategy::SharedTensor\n[`PendingSycl`]: strategy::PendingSycl\n[`sycl`]: crate::sycl\n\
           [`strategy`]: crate::strategy\n[`Foreign::Borrowed`]: crate::ownership::Foreign::Borrowed\n\
           [`sycl::SyclContext::from_level_zero`]: crate::sycl::SyclContext::from_level_zero\n\
           [`sycl::ExportableDeviceMemory`]: crate::sycl::ExportableDeviceMemory\n[`sycl::UsmBuffer`]: crate::sycl::UsmBuffer"
)]
// Without feature `sycl` the SYCL items do not exist: their links point at the feature's section.
#![cfg_attr(
    not(feature = "sycl"),
    doc = "\n[`StrategyKind`]: #feature-sycl\n[`StrategyKind::ALL`]: #feature-sycl\n[`StrategyKind::CardPath`]: #feature-sycl\n[`StrategyKind::DmaBuf`]: #feature-sycl\n[`StrategyKind::CpuVa`]: #feature-sycl\n[`StrategyKind::SharedSystem`]: #feature-sycl\n[`StrategyKind::NpuExport`]: #feature-sycl\n[`StrategyKind::NpuToSycl`]: #feature-sycl\n[`Auto::ORDER`]: #feature-sycl\n[`Auto::survey`]: #feature-sycl\n[`Auto`]: #feature-sycl\n[`CardPath`]: #feature-sycl\n[`Strategy::card_path`]: #feature-sycl\n\
           [`Strategy::new`]: #feature-sycl\n[`DmaBuf`]: #feature-sycl\n[`CpuVa`]: #feature-sycl\n\
           [`NpuToSycl`]: #feature-sycl\n[`SharedTensor`]: #feature-sycl\n[`PendingSycl`]: #feature-sycl\n[`sycl`]: #feature-sycl\n\
           [`strategy`]: #feature-sycl\n\
           [`sycl::SyclContext::from_level_zero`]: #feature-sycl\n\
           [`sycl::ExportableDeviceMemory`]: #feature-sycl\n[`sycl::UsmBuffer`]: #feature-sycl"
)]
#![deny(missing_docs)]

pub mod error;
pub use error::{Error, ErrorKind, Path, Reason, Result};

// The front door: what a program needs to run a model on the NPU over its own or SYCL's memory.
pub use memory::{NpuMemory, PageAlignedBuffer};
pub use npu::{NpuContext, NpuTensor};
pub use openvino::{CompiledModel, Core, ElementType, InferRequest, Model, Properties, Shape, Tensor, TensorType};
pub use pool::NpuPool;
#[cfg(feature = "sycl")]
pub use strategy::{Auto, SharedRequest, SharedTensor, Strategy, StrategyKind};

pub mod level_zero;
pub mod memory;
pub mod npu;
pub mod openvino;
pub mod ownership;
pub mod pool;
pub mod raw;

#[cfg(feature = "sycl")]
pub mod sycl;

#[cfg(feature = "sycl")]
pub mod strategy;
