//! Level Zero devices: properties, external memory capabilities, queue groups.

use std::fmt;

use super::driver::c_chars_to_string;
use super::{api, check, sys, Driver, ExternalMemoryTypes};
use crate::error::Result;

/// A Level Zero device (`ze_device_handle_t`) and the driver it belongs to.
///
/// Device handles are valid for the life of the process, so this is a `Copy` value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct L0Device {
    handle: sys::ze_device_handle_t,
    driver: Driver,
}

// SAFETY: a device handle identifies a process-lifetime object and Level Zero's device queries are
// free-threaded.
unsafe impl Send for L0Device {}
// SAFETY: as above.
unsafe impl Sync for L0Device {}

/// `ze_device_type_t`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// `ZE_DEVICE_TYPE_GPU`.
    Gpu,
    /// `ZE_DEVICE_TYPE_CPU`.
    Cpu,
    /// `ZE_DEVICE_TYPE_FPGA`.
    Fpga,
    /// `ZE_DEVICE_TYPE_MCA`.
    Mca,
    /// `ZE_DEVICE_TYPE_VPU`: the NPU.
    Vpu,
    /// Another value.
    Other(u32),
}

impl DeviceType {
    fn from_raw(t: sys::ze_device_type_t) -> Self {
        match t {
            sys::ZE_DEVICE_TYPE_GPU => Self::Gpu,
            sys::ZE_DEVICE_TYPE_CPU => Self::Cpu,
            sys::ZE_DEVICE_TYPE_FPGA => Self::Fpga,
            sys::ZE_DEVICE_TYPE_MCA => Self::Mca,
            sys::ZE_DEVICE_TYPE_VPU => Self::Vpu,
            other => Self::Other(other),
        }
    }
}

/// The parts of `ze_device_properties_t` callers use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProperties {
    /// GPU, VPU (NPU), ...
    pub device_type: DeviceType,
    /// PCI vendor id (Intel: 0x8086).
    pub vendor_id: u32,
    /// PCI device id.
    pub device_id: u32,
    /// `ze_device_property_flags_t` (integrated, subdevice, ...).
    pub flags: u32,
    /// The device's name.
    pub name: String,
    /// The device's uuid.
    pub uuid: [u8; 16],
    /// The largest single allocation, in bytes.
    pub max_mem_alloc_size: u64,
}

/// `ze_device_external_memory_properties_t`: what the device can import and export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalMemoryProperties {
    /// Memory allocation import types (`DMA_BUF` = fd import, `STANDARD_ALLOCATION` = sysmem import).
    pub import: ExternalMemoryTypes,
    /// Memory allocation export types.
    pub export: ExternalMemoryTypes,
    /// Image import types.
    pub image_import: ExternalMemoryTypes,
    /// Image export types.
    pub image_export: ExternalMemoryTypes,
}

/// One command queue group (`ze_command_queue_group_properties_t`); `ordinal` is its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueGroup {
    /// The group's ordinal (its index in the list).
    pub ordinal: u32,
    /// `ze_command_queue_group_property_flags_t`: COMPUTE 0x1, COPY 0x2, ...
    pub flags: u32,
    /// Largest pattern `zeCommandListAppendMemoryFill` takes.
    pub max_memory_fill_pattern_size: usize,
    /// Number of physical queues.
    pub num_queues: u32,
}

impl QueueGroup {
    /// Whether the group can run compute work.
    pub fn is_compute(&self) -> bool {
        self.flags & sys::ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE != 0
    }
    /// Whether the group can run copies.
    pub fn is_copy(&self) -> bool {
        self.flags & sys::ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY != 0
    }
}

impl L0Device {
    /// Wraps a raw device handle.
    ///
    /// # Safety
    /// `handle` is a device handle of `driver`, as returned by `zeDeviceGet`.
    pub(crate) unsafe fn from_raw(handle: sys::ze_device_handle_t, driver: Driver) -> L0Device {
        L0Device { handle, driver }
    }

    /// The raw handle.
    pub(crate) fn as_raw(&self) -> sys::ze_device_handle_t {
        self.handle
    }

    /// The driver the device belongs to.
    pub fn driver(&self) -> Driver {
        self.driver
    }

    /// `zeDeviceGetProperties`.
    pub fn properties(&self) -> Result<DeviceProperties> {
        let api = api()?;
        let mut p =
            sys::ze_device_properties_t { stype: sys::ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, ..Default::default() };
        // SAFETY: a valid device handle and an initialised output struct.
        check(unsafe { api.zeDeviceGetProperties(self.handle, &mut p) }, "zeDeviceGetProperties")?;
        Ok(DeviceProperties {
            device_type: DeviceType::from_raw(p.type_),
            vendor_id: p.vendorId,
            device_id: p.deviceId,
            flags: p.flags,
            name: c_chars_to_string(&p.name),
            uuid: p.uuid.id,
            max_mem_alloc_size: p.maxMemAllocSize,
        })
    }

    /// `zeDeviceGetExternalMemoryProperties`.
    pub fn external_memory_properties(&self) -> Result<ExternalMemoryProperties> {
        let api = api()?;
        let mut p = sys::ze_device_external_memory_properties_t {
            stype: sys::ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES,
            ..Default::default()
        };
        // SAFETY: a valid device handle and an initialised output struct.
        let r = unsafe { api.zeDeviceGetExternalMemoryProperties(self.handle, &mut p) };
        check(r, "zeDeviceGetExternalMemoryProperties")?;
        Ok(ExternalMemoryProperties {
            import: ExternalMemoryTypes::from_bits(p.memoryAllocationImportTypes),
            export: ExternalMemoryTypes::from_bits(p.memoryAllocationExportTypes),
            image_import: ExternalMemoryTypes::from_bits(p.imageImportTypes),
            image_export: ExternalMemoryTypes::from_bits(p.imageExportTypes),
        })
    }

    /// `zeDeviceGetCommandQueueGroupProperties`: the device's queue groups, in ordinal order.
    pub fn queue_groups(&self) -> Result<Vec<QueueGroup>> {
        let api = api()?;
        let mut count = 0u32;
        // SAFETY: count query with a null array.
        let r = unsafe { api.zeDeviceGetCommandQueueGroupProperties(self.handle, &mut count, std::ptr::null_mut()) };
        check(r, "zeDeviceGetCommandQueueGroupProperties")?;
        let mut list = vec![
            sys::ze_command_queue_group_properties_t {
                stype: sys::ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES,
                ..Default::default()
            };
            count as usize
        ];
        // SAFETY: `list` has `count` initialised entries.
        let r = unsafe { api.zeDeviceGetCommandQueueGroupProperties(self.handle, &mut count, list.as_mut_ptr()) };
        check(r, "zeDeviceGetCommandQueueGroupProperties")?;
        list.truncate(count as usize);
        Ok(list
            .iter()
            .enumerate()
            .map(|(i, g)| QueueGroup {
                ordinal: i as u32,
                flags: g.flags,
                max_memory_fill_pattern_size: g.maxMemoryFillPatternSize,
                num_queues: g.numQueues,
            })
            .collect())
    }
}

impl fmt::Debug for L0Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("L0Device").field("handle", &self.handle).field("driver", &self.driver).finish()
    }
}
