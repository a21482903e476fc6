//! Which Core Ultra laptop generation an NPU belongs to, from its PCI device id (the ids
//! linux-npu-driver knows: `umd/vpu_driver/source/device/hw_info.hpp` `getHwInfoByDeviceId`).

use std::fmt;

/// A Core Ultra laptop generation, named by its NPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaptopGeneration {
    /// Meteor Lake: NPU 37xx (0x7D1D), Xe-LPG iGPU.
    MeteorLake,
    /// Arrow Lake: NPU 37xx (0xAD1D), Xe-LPG+ iGPU.
    ArrowLake,
    /// Lunar Lake: NPU 40xx (0x643E), Xe2-LPG iGPU.
    LunarLake,
    /// Panther Lake: NPU 50xx (0xB03E), Xe3-LPG iGPU.
    PantherLake,
    /// Wildcat Lake: NPU 50xx with one tile (0xFD3E; linux-npu-driver 1.32.1
    /// `umd/vpu_driver/source/device/vpu_50xx/vpu_hw_50xx.hpp`). No laptop profile presents it.
    WildcatLake,
}

impl LaptopGeneration {
    /// The generation of the NPU with PCI device id `id`, or `None` for an id this crate does not know.
    pub fn from_npu_device_id(id: u32) -> Option<LaptopGeneration> {
        Some(match id {
            0x7D1D => LaptopGeneration::MeteorLake,
            0xAD1D => LaptopGeneration::ArrowLake,
            0x643E => LaptopGeneration::LunarLake,
            0xB03E => LaptopGeneration::PantherLake,
            0xFD3E => LaptopGeneration::WildcatLake,
            _ => return None,
        })
    }

    /// The NPU family: `"NPU 37xx"`, `"NPU 40xx"` or `"NPU 50xx"`.
    pub fn npu_family(&self) -> &'static str {
        match self {
            LaptopGeneration::MeteorLake | LaptopGeneration::ArrowLake => "NPU 37xx",
            LaptopGeneration::LunarLake => "NPU 40xx",
            LaptopGeneration::PantherLake | LaptopGeneration::WildcatLake => "NPU 50xx",
        }
    }

    /// Whether the NPU driver can import user memory (CPU_VA) on this generation at all: never on
    /// NPU 37xx (linux-npu-driver disables userptr there); on 40xx+ only with a kernel that has the
    /// userptr ioctl, which [`NpuCapabilities::sysmem_import`](super::NpuCapabilities::sysmem_import)
    /// reports.
    pub fn can_import_user_memory(&self) -> bool {
        !matches!(self, LaptopGeneration::MeteorLake | LaptopGeneration::ArrowLake)
    }
}

impl fmt::Display for LaptopGeneration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LaptopGeneration::MeteorLake => "Meteor Lake",
            LaptopGeneration::ArrowLake => "Arrow Lake",
            LaptopGeneration::LunarLake => "Lunar Lake",
            LaptopGeneration::PantherLake => "Panther Lake",
            LaptopGeneration::WildcatLake => "Wildcat Lake",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_their_generation() {
        assert_eq!(LaptopGeneration::from_npu_device_id(0x643E), Some(LaptopGeneration::LunarLake));
        assert_eq!(LaptopGeneration::from_npu_device_id(0xAD1D).unwrap().npu_family(), "NPU 37xx");
        assert!(!LaptopGeneration::MeteorLake.can_import_user_memory());
        assert_eq!(LaptopGeneration::from_npu_device_id(0x1234), None);
        assert_eq!(LaptopGeneration::PantherLake.to_string(), "Panther Lake");
        assert_eq!(LaptopGeneration::from_npu_device_id(0xFD3E).unwrap().npu_family(), "NPU 50xx");
    }
}
