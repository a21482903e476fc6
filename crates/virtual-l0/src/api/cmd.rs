//! Queues, command lists (regular, immediate, mutable), fences, event pools and events.
//! Execution is synchronous on the calling thread unless it would block on an event nothing has
//! signalled yet (then it is deferred to the queue's thread; see [`crate::cmdlist::Deferred`]).
use crate::api::device::queue_groups;
use crate::cmdlist::{collect_events, Command, CommandList, CommandQueue, Event, EventPool, EventState, Fence};
use crate::export::{chain, input, out, ZeResult};
use crate::ipc::{EventPoolMemory, EventSlot};
use crate::objects::{
    self, command_list_from, context_from, device_in, event_from, event_pool_from, fence_from, queue_from, same_driver,
};
use crate::stypes;
use crate::sys::*;
use std::ffi::c_void;
use std::sync::Arc;

/// A queue group ordinal and queue index must name an existing queue of the device (the groups of
/// [`queue_groups`]), else `ZE_RESULT_ERROR_INVALID_ARGUMENT`, as compute-runtime answers
/// (`device.cpp` `isQueueGroupOrdinalValid` in `createCommandList`/`createCommandQueue`,
/// `getCsrForOrdinalAndIndex`).
///
/// `priority` (a queue's or immediate list's `ze_command_queue_priority_t`), on the GPU, as
/// compute-runtime's `Device::getCsrForOrdinalAndIndex` (`level_zero/core/source/device/device.cpp`)
/// uses it to pick the command stream receiver (one hardware context) for
/// `zeCommandQueueCreate` and, through `CommandList::createImmediate` (`cmdlist.cpp`),
/// `zeCommandListCreateImmediate`, on all four laptops alike:
/// - `PRIORITY_LOW` on a compute or render group: `isSuitableForLowPriority` holds on a GPU without
///   implicit scaling, and `getCsrForLowPriority` returns the device's one low-priority context
///   (the `EngineUsage::lowPriority` engine `GfxCoreHelperHw::getGpgpuEngineInstances` creates on
///   the default engine: `gfx_core_helper_xe_hpg_core.cpp` for Meteor/Arrow Lake,
///   `gfx_core_helper_xe2_and_later.inl` for Lunar/Panther Lake) *before* the index is looked at,
///   so any index is accepted there. On the copy group LOW needs secondary contexts, which these
///   products lack (`ProductHelperHw::areSecondaryContextsSupported` is false), so it is the
///   regular blitter with the usual index check.
/// - `PRIORITY_HIGH`: the regular engine of `ordinal`/`index`. On a copy group
///   `getCsrForHighPriority` looks for a high-priority blitter (`Device::getHpCopyEngine`), which
///   these products never create, and its failure is ignored; a high-priority compute context
///   exists only with secondary contexts (`tryAssignSecondaryContext`), absent here too. A HIGH
///   queue therefore shares the hardware context of the NORMAL queues of its engine.
/// - Any other value, valid or not: NORMAL. compute-runtime checks the value nowhere (neither
///   `zeCommandQueueCreate` nor `Device::createCommandQueue`/`CommandQueue::create`) and hands it
///   back unchanged from `zeCommandQueueGetPriority` (`CommandQueue::getPriority`). The spec's
///   `ZE_RESULT_ERROR_INVALID_ENUMERATION` for a value above `PRIORITY_HIGH` comes only from the
///   loader's validation layer, which is off by default (as for allocation alignment,
///   `memory.rs`), so every value is accepted here.
///
/// Ordering: compute-runtime promises none between priorities. The low-priority context only
/// carries a scheduling priority for the kernel (`ioctl_helper_i915.cpp` →
/// `Drm::setLowPriorityContextParam`, context priority -1023 when preemption is supported, on
/// Meteor/Arrow Lake's i915; `ioctl_helper_xe.cpp` `IoctlHelperXe::setContextProperties`, exec-queue
/// priority 0 (low), on Lunar/Panther Lake's xe), which the firmware scheduler weighs as it likes;
/// no rule says ready HIGH or NORMAL work runs before LOW work, and HIGH work on these laptops is
/// not even on another context than NORMAL work. So the virtual GPU models no ordering by priority:
/// a LOW queue is independent of the others (its own context in compute-runtime), and a HIGH queue
/// runs like a NORMAL one. Nothing differs between the profiles, so there is no profile knob. (That
/// queues sharing one hardware context run strictly one after the other there, one queue's blocked
/// work holding back the next queue's, is not modelled for any priority: every virtual queue runs
/// on its own, see [`CommandQueue`].)
///
/// The NPU keeps the plain check (what linux-npu-driver does with a priority is not modelled here).
fn check_queue(driver: objects::DriverKind, ordinal: u32, index: u32, priority: u32) -> ZeResult {
    match queue_groups(driver).get(ordinal as usize) {
        // linux-npu-driver 1.32.1 `cmdqueue.cpp` `CommandQueue::create` checks only the ordinal.
        Some(_) if driver == objects::DriverKind::Npu => Ok(()),
        Some(g) if index < g.queues => Ok(()),
        Some(g)
            if driver == objects::DriverKind::Gpu
                && !g.copy_only()
                && priority == ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_LOW =>
        {
            Ok(())
        }
        _ => Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
    }
}

/// The queue and list getters whose presence in a driver's DDI table depends on the driver.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Getter {
    QueueOrdinal,
    QueueIndex,
    QueuePriority,
    ListDevice,
    ListContext,
    ListOrdinal,
    ListPriority,
}

/// Whether the driver's DDI table has the getter; the loader answers a missing entry with
/// `ZE_RESULT_ERROR_UNINITIALIZED` (level-zero v1.32.0 `source/loader/ze_ldrddi.cpp`: `if (nullptr
/// == pfn...) return ZE_RESULT_ERROR_UNINITIALIZED`).
/// - NPU (linux-npu-driver 1.32.1 `umd/level_zero_driver/api/ze_cmdlist.cpp`
///   `zeGetCommandListProcAddrTable`, `ze_cmdqueue.cpp`): of these, none; it fills only the lists'
///   `pfnImmediateGetIndex` and `pfnIsImmediate`.
/// - GPU: the two priority getters only from compute-runtime 26.18.38308 (commit 509f37b275:
///   `cmdqueue.cpp` `CommandQueue::getPriority`, `cmdlist.cpp` `getImmediatePriority`); the others
///   at every build this platform presents (**inferred**: their DDI slots at 26.14 were not read).
pub(crate) fn in_ddi(driver: objects::DriverKind, getter: Getter) -> ZeResult {
    let present = match driver {
        objects::DriverKind::Npu => false,
        objects::DriverKind::Gpu => {
            !matches!(getter, Getter::QueuePriority | Getter::ListPriority)
                || crate::profile::current().gpu_driver_build >= crate::profile::GPU_QUEUE_GETTERS_FROM_BUILD
        }
    };
    if present {
        Ok(())
    } else {
        Err(ZE_RESULT_ERROR_UNINITIALIZED)
    }
}

/// The list an append goes to: its driver and the context it was made on.
#[derive(Clone, Copy)]
struct On {
    driver: objects::DriverKind,
    context: usize,
}

/// On an NPU list, `[ptr, ptr + size)` must lie inside one allocation or import of the list's
/// context: the NPU reaches only memory mapped through its driver, and linux-npu-driver 1.32.1 looks
/// the buffer object up in the list's own device context at append time (`cmdlist.cpp`,
/// `ctx->findBufferObject`), failing with `err` when there is none.
fn npu_memory(on: On, ptr: *const c_void, size: usize, err: ze_result_t) -> ZeResult {
    if on.driver != objects::DriverKind::Npu {
        return Ok(());
    }
    match crate::memory::lookup_in(on.driver, on.context, ptr) {
        Some(i) if (ptr as usize).saturating_add(size) <= i.base + i.size.max(1) => Ok(()),
        _ => Err(err),
    }
}

unsafe fn append(
    list: ze_command_list_handle_t,
    cmd: impl FnOnce(On) -> ZeResult<Command>,
    signal: ze_event_handle_t,
    n: u32,
    waits: *mut ze_event_handle_t,
) -> ZeResult {
    // SAFETY: handles validated; the wait array comes from the caller.
    let l = unsafe { command_list_from(list) }?;
    // SAFETY: as above.
    let (signal, waits) = unsafe { collect_events(l.driver(), signal, n, waits) }?;
    let cmd = cmd(On { driver: l.driver(), context: l.context })?;
    match l.append_with_events(cmd, signal, waits) {
        ZE_RESULT_SUCCESS => Ok(()),
        e => Err(e),
    }
}

ze_api! {
    fn zeCommandQueueCreate(ctx: ze_context_handle_t, dev: ze_device_handle_t, desc: *const ze_command_queue_desc_t, o: *mut ze_command_queue_handle_t) {
        // SAFETY: handles validated; caller's descriptor and out-parameter.
        let (c, d, o) = unsafe { (context_from(ctx)?, input(desc)?, out(o)?) };
        // SAFETY: as above.
        unsafe { device_in(c.driver(), dev) }?;
        check_queue(c.driver(), d.ordinal, d.index, d.priority)?;
        *o = objects::create(
            c.driver(),
            CommandQueue {
                ordinal: d.ordinal,
                index: d.index,
                priority: d.priority,
                flags: d.flags,
                mode: d.mode,
                context: ctx as usize,
                inflight: Default::default(),
                deferred: Default::default(),
            },
        );
        Ok(())
    }
    fn zeCommandQueueDestroy(q: ze_command_queue_handle_t) {
        // SAFETY: no further use of the queue (L0 rule).
        unsafe { objects::destroy::<CommandQueue, _>(q) }.map(drop)
    }
    fn zeCommandQueueExecuteCommandLists(q: ze_command_queue_handle_t, n: u32, lists: *mut ze_command_list_handle_t, fence: ze_fence_handle_t) {
        let qh = q;
        // SAFETY: handles validated.
        let q = unsafe { queue_from(q) }?;
        let fence = if fence.is_null() {
            None
        } else {
            // SAFETY: as above.
            let f = unsafe { fence_from(fence) }?;
            same_driver(q.driver(), f)?;
            // The spec: "The application must use a fence created using the same command queue."
            if f.queue != qh as usize {
                return Err(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT);
            }
            Some(f)
        };
        if lists.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        if n == 0 {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        let mut ls = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            // SAFETY: the caller provides n list handles.
            let l = unsafe { command_list_from(*lists.add(i)) }?;
            same_driver(q.driver(), l)?;
            match l.driver() {
                // linux-npu-driver 1.32.1 `cmdqueue.cpp` `CommandQueue::executeCommandLists` checks
                // one thing: "Commands are not closed" → UNINITIALIZED, and an immediate list is
                // never closed.
                objects::DriverKind::Npu => {
                    if l.is_immediate() || !l.is_closed() {
                        return Err(ZE_RESULT_ERROR_UNINITIALIZED);
                    }
                }
                // Immediate lists and lists of another group ordinal cannot run on this queue;
                // only closed lists run (`cmdqueue_hw.inl`
                // `CommandQueueHw::setupCmdListsAndContextParams`, `!commandList->isClosed()`).
                objects::DriverKind::Gpu => {
                    if l.is_immediate() || l.ordinal != q.ordinal {
                        return Err(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
                    }
                    if !l.is_closed() {
                        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
                    }
                }
            }
            ls.push(l);
        }
        let busy = q.inflight.enter();
        let mut view = crate::cmdlist::EventView::new();
        // A SYNCHRONOUS queue returns only once the lists have finished: compute-runtime submits,
        // then `CommandQueueHw::waitForCommandQueueCompletion` calls `synchronize(UINT64_MAX)` when
        // `isSynchronousMode()` (`cmdqueue_hw.inl`), so such a queue blocks here, whatever it waits for.
        let synchronous = q.mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
        if !synchronous && (q.deferred.busy() || ls.iter().any(|l| l.would_block(&mut view))) {
            // Blocked on an event the application may signal after this call returns: run on the
            // queue's thread, in order, and signal the fence there (see `cmdlist::Deferred`).
            let handles: Vec<usize> = ls.iter().map(|l| l.handle::<c_void>() as usize).collect();
            let fence = fence.map(|f| f.state.clone());
            q.deferred.submit(move || {
                let _busy = busy;
                for h in handles {
                    // SAFETY: validated at submission; the application keeps submitted lists alive
                    // until they complete (L0 rule), and a destroyed one is detected (live-handle set).
                    match unsafe { command_list_from(h as ze_command_list_handle_t) } {
                        Ok(l) if l.execute() == ZE_RESULT_SUCCESS => {}
                        _ => break,
                    }
                }
                if let Some(f) = fence {
                    f.signal();
                }
            });
            return Ok(ZE_RESULT_SUCCESS);
        }
        let _busy = busy;
        let mut res = ZE_RESULT_SUCCESS;
        for l in ls {
            res = l.execute();
            if res != ZE_RESULT_SUCCESS {
                break;
            }
        }
        // Signalled even on failure, so that a waiter never hangs on a failed submission.
        if let Some(f) = fence {
            f.state.signal();
        }
        Ok::<_, ze_result_t>(res)
    }
    /// Waits for submissions still running on other threads (execution is synchronous on the
    /// submitting thread, so the caller's own submissions have completed).
    fn zeCommandQueueSynchronize(q: ze_command_queue_handle_t, timeout: u64) {
        // SAFETY: handle validated.
        let q = unsafe { queue_from(q) }?;
        if !q.inflight.wait_idle(timeout) {
            return Ok(ZE_RESULT_NOT_READY);
        }
        if q.driver() == objects::DriverKind::Npu {
            crate::npu::idle::set_idle(q.context);
        }
        Ok(ZE_RESULT_SUCCESS)
    }
    fn zeCommandQueueGetOrdinal(q: ze_command_queue_handle_t, o: *mut u32) {
        // SAFETY: handle validated; out-parameter from the caller.
        let q = unsafe { queue_from(q) }?;
        in_ddi(q.driver(), Getter::QueueOrdinal)?;
        // SAFETY: out-parameter from the caller.
        unsafe { *out(o)? = q.ordinal };
        Ok(())
    }
    /// The index as the descriptor gave it (compute-runtime `CommandQueue::getIndex`).
    fn zeCommandQueueGetIndex(q: ze_command_queue_handle_t, o: *mut u32) {
        // SAFETY: handle validated.
        let q = unsafe { queue_from(q) }?;
        in_ddi(q.driver(), Getter::QueueIndex)?;
        // SAFETY: out-parameter from the caller.
        unsafe { *out(o)? = q.index };
        Ok(())
    }
    /// The priority as the descriptor gave it, even one that is no priority (compute-runtime
    /// `CommandQueue::getPriority`; see [`check_queue`]).
    fn zeCommandQueueGetPriority(q: ze_command_queue_handle_t, o: *mut ze_command_queue_priority_t) {
        // SAFETY: handle validated.
        let q = unsafe { queue_from(q) }?;
        in_ddi(q.driver(), Getter::QueuePriority)?;
        // SAFETY: out-parameter from the caller.
        unsafe { *out(o)? = q.priority };
        Ok(())
    }

    fn zeCommandListCreate(ctx: ze_context_handle_t, dev: ze_device_handle_t, desc: *const ze_command_list_desc_t, o: *mut ze_command_list_handle_t) {
        // SAFETY: handles validated; caller's descriptor and out-parameter.
        let (c, d, o) = unsafe { (context_from(ctx)?, input(desc)?, out(o)?) };
        // SAFETY: as above.
        unsafe { device_in(c.driver(), dev) }?;
        // SAFETY: the descriptor's chain.
        let mutable = unsafe { chain(d.pNext) }.iter().any(|e| e.stype == stypes::MUTABLE_COMMAND_LIST_EXP_DESC);
        check_queue(c.driver(), d.commandQueueGroupOrdinal, 0, ZE_COMMAND_QUEUE_PRIORITY_NORMAL)?;
        let mut l = CommandList::new(c.driver(), false, mutable, d.commandQueueGroupOrdinal);
        l.context = ctx as usize;
        l.device = dev as usize;
        *o = objects::create(c.driver(), l);
        Ok(())
    }
    fn zeCommandListCreateImmediate(ctx: ze_context_handle_t, dev: ze_device_handle_t, desc: *const ze_command_queue_desc_t, o: *mut ze_command_list_handle_t) {
        // SAFETY: handles validated; caller's descriptor and out-parameter.
        let (c, d, o) = unsafe { (context_from(ctx)?, input(desc)?, out(o)?) };
        // SAFETY: as above.
        unsafe { device_in(c.driver(), dev) }?;
        check_queue(c.driver(), d.ordinal, d.index, d.priority)?;
        let mut l = CommandList::new(c.driver(), true, false, d.ordinal);
        l.synchronous = d.mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
        l.priority = d.priority;
        l.context = ctx as usize;
        l.device = dev as usize;
        *o = objects::create(c.driver(), l);
        Ok(())
    }
    fn zeCommandListDestroy(l: ze_command_list_handle_t) {
        // SAFETY: no further use of the list (L0 rule).
        unsafe { objects::destroy::<CommandList, _>(l) }.map(drop)
    }
    fn zeCommandListClose(l: ze_command_list_handle_t) {
        // SAFETY: handle validated.
        let l = unsafe { command_list_from(l) }?;
        // The NPU's immediate lists cannot be closed (linux-npu-driver 1.32.1
        // `immediate_cmdlist.hpp` `ImmediateCommandList::close`).
        if l.driver() == objects::DriverKind::Npu && l.is_immediate() {
            return Err(ZE_RESULT_ERROR_UNINITIALIZED);
        }
        l.close();
        Ok(())
    }
    fn zeCommandListReset(l: ze_command_list_handle_t) {
        // SAFETY: handle validated.
        unsafe { command_list_from(l) }?.reset();
        Ok(())
    }
    /// The caller's own appends have already run; appends still running on other threads are waited for.
    fn zeCommandListHostSynchronize(l: ze_command_list_handle_t, timeout: u64) {
        // SAFETY: handle validated.
        let l = unsafe { command_list_from(l) }?;
        if !l.wait_idle(timeout) {
            return Ok(ZE_RESULT_NOT_READY);
        }
        if l.driver() == objects::DriverKind::Npu {
            crate::npu::idle::set_idle(l.context);
        }
        Ok(ZE_RESULT_SUCCESS)
    }
    fn zeCommandListGetDeviceHandle(l: ze_command_list_handle_t, o: *mut ze_device_handle_t) {
        // SAFETY: handle validated.
        let l = unsafe { command_list_from(l) }?;
        in_ddi(l.driver(), Getter::ListDevice)?;
        // SAFETY: out-parameter from the caller.
        unsafe { *out(o)? = l.device as ze_device_handle_t };
        Ok(())
    }
    fn zeCommandListGetContextHandle(l: ze_command_list_handle_t, o: *mut ze_context_handle_t) {
        // SAFETY: handle validated.
        let l = unsafe { command_list_from(l) }?;
        in_ddi(l.driver(), Getter::ListContext)?;
        // SAFETY: out-parameter from the caller.
        unsafe { *out(o)? = l.context as ze_context_handle_t };
        Ok(())
    }
    fn zeCommandListGetOrdinal(l: ze_command_list_handle_t, o: *mut u32) {
        // SAFETY: handle validated.
        let l = unsafe { command_list_from(l) }?;
        in_ddi(l.driver(), Getter::ListOrdinal)?;
        // SAFETY: out-parameter from the caller.
        unsafe { *out(o)? = l.ordinal };
        Ok(())
    }
    fn zeCommandListIsImmediate(l: ze_command_list_handle_t, o: *mut ze_bool_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = command_list_from(l)?.is_immediate() as ze_bool_t };
        Ok(())
    }
    /// An immediate list's priority as its descriptor gave it; a regular list has none:
    /// `INVALID_ARGUMENT` (compute-runtime `CommandList::getImmediatePriority`).
    fn zeCommandListImmediateGetPriority(l: ze_command_list_handle_t, o: *mut ze_command_queue_priority_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (l, o) = unsafe { (command_list_from(l)?, out(o)?) };
        in_ddi(l.driver(), Getter::ListPriority)?;
        if !l.is_immediate() {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        *o = l.priority;
        Ok(())
    }
    /// compute-runtime (`ze_cmdlist_api_entrypoints.cpp` → `CommandList::appendCommandLists`): on a
    /// regular list `INVALID_ARGUMENT` (`CommandListCoreFamily::appendCommandLists`); on an
    /// immediate list (`CommandListCoreFamilyImmediate::appendCommandLists`) it waits for the wait
    /// events, runs the lists through the list's own queue (`executeCommandLists`, which refuses a
    /// list that is not closed with `INVALID_ARGUMENT`), then signals the event, in order with the
    /// list's other appends. Lists of another driver are `INVALID_ARGUMENT`; an immediate list
    /// among them too (it is never a batch buffer to run; inferred, compute-runtime does not check).
    /// Works from build 29735; advertised as `ZE_experimental_immediate_command_list_append` from
    /// build 32224 on (`profile::GPU_IMMEDIATE_APPEND_*`, `api::driver`).
    fn zeCommandListImmediateAppendCommandListsExp(imm: ze_command_list_handle_t, n: u32, lists: *mut ze_command_list_handle_t, signal: ze_event_handle_t, nw: u32, waits: *mut ze_event_handle_t) {
        // SAFETY: handle validated.
        let il = unsafe { command_list_from(imm) }?;
        if il.driver() == objects::DriverKind::Npu {
            // linux-npu-driver 1.32.1 does not implement it (its command list table has no slot).
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        }
        if crate::profile::current().gpu_driver_build < crate::profile::GPU_IMMEDIATE_APPEND_FROM_BUILD {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        }
        if !il.is_immediate() {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        if n > 0 && lists.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let mut hs = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            // SAFETY: the caller provides n list handles.
            let h = unsafe { *lists.add(i) };
            // SAFETY: validated.
            let l = unsafe { command_list_from(h) }?;
            same_driver(il.driver(), l)?;
            if l.is_immediate() || !l.is_closed() {
                return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
            }
            hs.push(h as usize);
        }
        let count = hs.len() as u64;
        // SAFETY: caller's handles.
        unsafe { append(imm, move |_| Ok(Command::ExecuteLists(hs)), signal, nw, waits) }?;
        crate::counters::add("gpu.immediate_appends", count);
        Ok(())
    }
    fn zeCommandListAppendBarrier(l: ze_command_list_handle_t, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        // SAFETY: caller's handles.
        unsafe { append(l, |_| Ok(Command::Barrier), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryRangesBarrier(l: ze_command_list_handle_t, _nr: u32, _sizes: *const usize, _ranges: *mut *const c_void, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        // SAFETY: caller's handles.
        unsafe { append(l, |_| Ok(Command::Barrier), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryCopy(l: ze_command_list_handle_t, dst: *mut c_void, src: *const c_void, size: usize, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if size > 0 && (dst.is_null() || src.is_null()) {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let cmd = |on: On| {
            // linux-npu-driver: a pointer outside its buffer objects fails the copy command's creation.
            npu_memory(on, src, size, ZE_RESULT_ERROR_UNINITIALIZED)?;
            npu_memory(on, dst, size, ZE_RESULT_ERROR_UNINITIALIZED)?;
            Ok(Command::Copy { dst: dst as usize, src: src as usize, size })
        };
        // SAFETY: caller's handles.
        unsafe { append(l, cmd, signal, n, waits) }
    }
    fn zeCommandListAppendMemoryCopyFromContext(l: ze_command_list_handle_t, dst: *mut c_void, _src_ctx: ze_context_handle_t, src: *const c_void, size: usize, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if size > 0 && (dst.is_null() || src.is_null()) {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's handles.
        unsafe { append(l, |_| Ok(Command::Copy { dst: dst as usize, src: src as usize, size }), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryCopyRegion(
        l: ze_command_list_handle_t, dst: *mut c_void, dst_region: *const ze_copy_region_t, dst_pitch: u32, dst_slice: u32,
        src: *const c_void, src_region: *const ze_copy_region_t, src_pitch: u32, src_slice: u32,
        signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t
    ) {
        // SAFETY: the caller's region descriptors.
        let (dr, sr) = unsafe { (input(dst_region)?, input(src_region)?) };
        if dst.is_null() || src.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        if (dr.width, dr.height, dr.depth) != (sr.width, sr.height, sr.depth) {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        let extent = [dr.width as usize, dr.height.max(1) as usize, dr.depth.max(1) as usize];
        let cmd = Command::CopyRegion {
            dst: dst as usize,
            src: src as usize,
            dst_origin: [dr.originX as usize, dr.originY as usize, dr.originZ as usize],
            src_origin: [sr.originX as usize, sr.originY as usize, sr.originZ as usize],
            extent,
            dst_pitch: [dst_pitch as usize, dst_slice as usize],
            src_pitch: [src_pitch as usize, src_slice as usize],
        };
        // SAFETY: caller's handles.
        unsafe { append(l, |_| Ok(cmd), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryFill(l: ze_command_list_handle_t, dst: *mut c_void, pattern: *const c_void, psize: usize, size: usize, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if dst.is_null() || pattern.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // The spec: a power of two, at most the list's group's maxMemoryFillPatternSize. On the
        // GPU's copy-only group that is the blitter's limit, which compute-runtime enforces
        // (`cmdlist_hw.inl` `appendBlitFill`: a larger pattern is INVALID_SIZE); its compute groups
        // report SIZE_MAX.
        // SAFETY: handle validated.
        let ld = unsafe { command_list_from(l) }?;
        let max = queue_groups(ld.driver()).get(ld.ordinal as usize).map_or(0, |g| g.max_fill_pattern);
        if !psize.is_power_of_two() || psize > max {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        // SAFETY: the caller's pattern of psize bytes.
        let pat = unsafe { std::slice::from_raw_parts(pattern as *const u8, psize) }.to_vec();
        let cmd = |on: On| {
            if on.driver == objects::DriverKind::Npu {
                // linux-npu-driver 1.32.1 `cmdlist.cpp`: pattern sizes 1, 2 and 4 only; the
                // destination must be its memory. NPU 37xx fills by a copy from an internal pattern
                // buffer (`appendMemoryFillAsCopyCmd`), whose foreign destination fails as a copy
                // does (`UNINITIALIZED`); 40xx+ fill natively (`OUT_OF_DEVICE_MEMORY`).
                if !matches!(psize, 1 | 2 | 4) {
                    return Err(ZE_RESULT_ERROR_INVALID_SIZE);
                }
                let err = if crate::profile::current().npu_generation == crate::profile::NpuGeneration::Npu37xx {
                    ZE_RESULT_ERROR_UNINITIALIZED
                } else {
                    ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
                };
                npu_memory(on, dst, size, err)?;
            }
            Ok(Command::Fill { dst: dst as usize, pattern: pat, size })
        };
        // SAFETY: caller's handles.
        unsafe { append(l, cmd, signal, n, waits) }
    }
    fn zeCommandListAppendMemoryPrefetch(l: ze_command_list_handle_t, _ptr: *const c_void, _size: usize) {
        // SAFETY: handle validated.
        unsafe { command_list_from(l) }.map(|_| ())
    }
    fn zeCommandListAppendMemAdvise(l: ze_command_list_handle_t, _dev: ze_device_handle_t, _ptr: *const c_void, _size: usize, _advice: ze_memory_advice_t) {
        // SAFETY: handle validated.
        unsafe { command_list_from(l) }.map(|_| ())
    }
    fn zeCommandListAppendSignalEvent(l: ze_command_list_handle_t, ev: ze_event_handle_t) {
        // SAFETY: handles validated.
        let (lo, e) = unsafe { (command_list_from(l)?, event_from(ev)?) };
        same_driver(lo.driver(), e)?;
        let st = e.state.clone();
        // SAFETY: caller's handles.
        unsafe { append(l, move |_| Ok(Command::SignalEvent(st)), std::ptr::null_mut(), 0, std::ptr::null_mut()) }
    }
    fn zeCommandListAppendWaitOnEvents(l: ze_command_list_handle_t, n: u32, evs: *mut ze_event_handle_t) {
        // SAFETY: handles validated; the caller's array of n events.
        let lo = unsafe { command_list_from(l) }?;
        // SAFETY: as above.
        let (_, es) = unsafe { collect_events(lo.driver(), std::ptr::null_mut(), n, evs) }?;
        // SAFETY: caller's handle.
        unsafe { append(l, move |_| Ok(Command::WaitEvents(es)), std::ptr::null_mut(), 0, std::ptr::null_mut()) }
    }
    fn zeCommandListAppendEventReset(l: ze_command_list_handle_t, ev: ze_event_handle_t) {
        // SAFETY: handles validated.
        let (lo, e) = unsafe { (command_list_from(l)?, event_from(ev)?) };
        same_driver(lo.driver(), e)?;
        let st = e.state.clone();
        // SAFETY: caller's handle.
        unsafe { append(l, move |_| Ok(Command::ResetEvent(st)), std::ptr::null_mut(), 0, std::ptr::null_mut()) }
    }
    fn zeCommandListAppendWriteGlobalTimestamp(l: ze_command_list_handle_t, dst: *mut u64, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if dst.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's handles.
        let cmd = |on: On| {
            npu_memory(on, dst.cast(), 8, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)?;
            Ok(Command::WriteTimestamp { dst: dst as usize })
        };
        // SAFETY: caller's handles.
        unsafe { append(l, cmd, signal, n, waits) }
    }
    fn zeCommandListGetNextCommandIdExp(l: ze_command_list_handle_t, desc: *const ze_mutable_command_id_exp_desc_t, id: *mut u64) {
        // SAFETY: handle validated; caller's descriptor and out-parameter.
        let (lo, d, id) = unsafe { (command_list_from(l)?, input(desc)?, out(id)?) };
        // As the NPU driver: only on a mutable list that is still open, for graph arguments.
        if lo.driver() == objects::DriverKind::Npu
            && (!lo.mutable || lo.is_closed() || !stypes::MUTABLE_COMMAND_EXP_FLAGS_GRAPH.contains(&d.flags))
        {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        *id = lo.next_command_id();
        Ok(())
    }
    /// Walks the whole chain; every entry must be a `ze_mutable_graph_argument_exp_desc_t` (either
    /// stype) and patches a graph argument: an unknown entry or an empty chain is
    /// `ZE_RESULT_ERROR_INVALID_ARGUMENT`, as in the NPU driver, which also wants a mutable list and
    /// `flags` 0.
    fn zeCommandListUpdateMutableCommandsExp(l: ze_command_list_handle_t, desc: *const ze_mutable_commands_exp_desc_t) {
        // SAFETY: handle validated; caller's descriptor.
        let (lo, d) = unsafe { (command_list_from(l)?, input(desc)?) };
        if lo.driver() == objects::DriverKind::Npu && (!lo.mutable || d.flags != 0) {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: the descriptor's chain.
        let entries = unsafe { chain(d.pNext) };
        // linux-npu-driver 1.32.1 `cmdlist.cpp` `getCommandUpdates`: graph-argument entries, each
        // optionally followed by a strides entry for that argument; anything else is refused.
        let graph_arg = |s| s == stypes::MUTABLE_GRAPH_ARGUMENT_EXP_DESC || s == stypes::MUTABLE_GRAPH_ARGUMENT_EXP_DESC_DEPRECATED;
        let mut updates: Vec<((u64, u32), crate::cmdlist::ArgUpdate)> = Vec::new();
        let mut last: Option<(u64, u32)> = None;
        for e in &entries {
            if graph_arg(e.stype) {
                // SAFETY: stype says ze_mutable_graph_argument_exp_desc_t.
                let g = unsafe { &*(e.ptr as *const stypes::MutableGraphArgumentExpDesc) };
                let at = (g.commandId, g.argIndex);
                match updates.iter_mut().find(|(k, _)| *k == at) {
                    Some((_, u)) => u.ptr = Some(g.pArgValue as usize),
                    None => updates.push((at, crate::cmdlist::ArgUpdate { ptr: Some(g.pArgValue as usize), strides: None })),
                }
                last = Some(at);
            } else if e.stype == crate::sys::npu::ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_STRIDES && lo.driver() == objects::DriverKind::Npu {
                let at = last.take().ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
                // SAFETY: stype says ze_graph_argument_value_strides_t.
                let st = unsafe { &*(e.ptr as *const crate::sys::npu::ze_graph_argument_value_strides_t) };
                if let Some((_, u)) = updates.iter_mut().find(|(k, _)| *k == at) {
                    u.strides = Some(st.userStrides);
                }
            } else {
                return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
            }
        }
        if updates.is_empty() {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        let patched = updates.len() as u64;
        for ((command, arg), u) in updates {
            lo.update_graph_argument(command, arg, u)?;
        }
        if lo.driver() == objects::DriverKind::Npu {
            // What a rebinding costs the NPU plugin: one patched argument per entry.
            crate::counters::add("npu.graph_arg_updates", patched);
        }
        Ok(())
    }

    fn zeFenceCreate(q: ze_command_queue_handle_t, desc: *const ze_fence_desc_t, o: *mut ze_fence_handle_t) {
        // SAFETY: handle validated; caller's descriptor and out-parameter.
        let (qo, d, o) = unsafe { (queue_from(q)?, input(desc)?, out(o)?) };
        // The NPU driver checks the descriptor's stype.
        if qo.driver() == objects::DriverKind::Npu && d.stype != ZE_STRUCTURE_TYPE_FENCE_DESC {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        let state = Arc::new(EventState::default());
        if d.flags & ZE_FENCE_FLAG_SIGNALED != 0 {
            state.signal();
        }
        *o = objects::create(qo.driver(), Fence { state, queue: q as usize });
        Ok(())
    }
    fn zeFenceDestroy(f: ze_fence_handle_t) {
        // SAFETY: no further use of the fence (L0 rule).
        unsafe { objects::destroy::<Fence, _>(f) }.map(drop)
    }
    fn zeFenceHostSynchronize(f: ze_fence_handle_t, timeout: u64) {
        // SAFETY: handle validated.
        let f = unsafe { fence_from(f) }?;
        if !f.state.wait(timeout) {
            return Ok(ZE_RESULT_NOT_READY);
        }
        // The NPU driver's fence synchronization goes through its queue's, which marks the context
        // idle (`cmdqueue.cpp`).
        if f.driver() == objects::DriverKind::Npu {
            // SAFETY: the queue handle is looked up in the live-object set, never read if destroyed.
            if let Ok(q) = unsafe { queue_from(f.queue as ze_command_queue_handle_t) } {
                crate::npu::idle::set_idle(q.context);
            }
        }
        Ok(ZE_RESULT_SUCCESS)
    }
    fn zeFenceQueryStatus(f: ze_fence_handle_t) {
        // SAFETY: handle validated.
        let f = unsafe { fence_from(f) }?;
        Ok(if f.state.is_signaled() { ZE_RESULT_SUCCESS } else { ZE_RESULT_NOT_READY })
    }
    fn zeFenceReset(f: ze_fence_handle_t) {
        // SAFETY: handle validated.
        unsafe { fence_from(f) }?.state.reset();
        Ok(())
    }

    /// Host-visible, counter-based (0x20014 in the chain) and plain pools all behave alike.
    fn zeEventPoolCreate(ctx: ze_context_handle_t, desc: *const ze_event_pool_desc_t, ndev: u32, devs: *mut ze_device_handle_t, o: *mut ze_event_pool_handle_t) {
        // SAFETY: handle validated; caller's descriptor and out-parameter.
        let (c, d, o) = unsafe { (context_from(ctx)?, input(desc)?, out(o)?) };
        // The spec's parameter checks.
        if d.count == 0 || (ndev > 0 && devs.is_null()) {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        if d.flags > 0xf {
            return Err(ZE_RESULT_ERROR_INVALID_ENUMERATION);
        }
        if ndev > 0 {
            for i in 0..ndev as usize {
                // SAFETY: the caller provides ndev device handles.
                unsafe { device_in(c.driver(), *devs.add(i)) }?;
            }
        }
        // An IPC pool's events live in shared memory (compute-runtime `EventPool::initialize`: the
        // pool's buffer object is made shareable when the IPC flag is set); GPU on Linux only here.
        let shared = if d.flags & ZE_EVENT_POOL_FLAG_IPC != 0 && c.driver() == objects::DriverKind::Gpu && cfg!(unix) {
            Some((EventPoolMemory::create(d.count)?, false))
        } else {
            None
        };
        *o = objects::create(c.driver(), EventPool { count: d.count, flags: d.flags, in_use: Default::default(), shared });
        Ok(())
    }
    /// compute-runtime `EventPool::getIpcHandle`: a pool made without `ZE_EVENT_POOL_FLAG_IPC`
    /// (or opened from a handle) is `UNSUPPORTED_FEATURE`; the NPU driver has no event-pool IPC.
    fn zeEventPoolGetIpcHandle(p: ze_event_pool_handle_t, h: *mut ze_ipc_event_pool_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (po, h) = unsafe { (event_pool_from(p)?, out(h)?) };
        match &po.shared {
            Some((mem, false)) => {
                h.data = crate::ipc::event_pool_handle(mem, po.count, po.flags)?.map(|b| b as _);
                Ok(())
            }
            _ => Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
        }
    }
    /// `EventPool::openEventPoolIpcHandle`: a pool over the exporter's event memory (the fd in the
    /// handle is this process's: see `crate::ipc`); its events are the exporter's at the same indices.
    fn zeEventPoolOpenIpcHandle(ctx: ze_context_handle_t, h: ze_ipc_event_pool_handle_t, o: *mut ze_event_pool_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (c, o) = unsafe { (context_from(ctx)?, out(o)?) };
        if c.driver() != objects::DriverKind::Gpu {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        }
        let (mem, count, flags) = crate::ipc::open_event_pool(&h.data.map(|b| b as u8))?;
        *o = objects::create(c.driver(), EventPool { count, flags, in_use: Default::default(), shared: Some((mem, true)) });
        Ok(())
    }
    /// `EventPool::closeIpcHandle` destroys the pool.
    fn zeEventPoolCloseIpcHandle(p: ze_event_pool_handle_t) {
        // SAFETY: no further use of the pool (L0 rule).
        unsafe { objects::destroy::<EventPool, _>(p) }.map(drop)
    }
    /// 26.14's `zeEventPoolPutIpcHandle` is `UNSUPPORTED_FEATURE` (`ze_event_api_entrypoints.h`).
    fn zeEventPoolPutIpcHandle(ctx: ze_context_handle_t, _h: ze_ipc_event_pool_handle_t) {
        // SAFETY: handle validated.
        unsafe { context_from(ctx) }?;
        Err::<(), _>(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    }
    fn zeEventPoolDestroy(p: ze_event_pool_handle_t) {
        // SAFETY: no further use of the pool (L0 rule).
        unsafe { objects::destroy::<EventPool, _>(p) }.map(drop)
    }
    fn zeEventCreate(p: ze_event_pool_handle_t, desc: *const ze_event_desc_t, o: *mut ze_event_handle_t) {
        // SAFETY: handle validated; caller's descriptor and out-parameter.
        let (po, d, o) = unsafe { (event_pool_from(p)?, input(desc)?, out(o)?) };
        if d.index >= po.count {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        if po.driver() == objects::DriverKind::Npu
            && !po.in_use.lock().unwrap_or_else(|e| e.into_inner()).insert(d.index)
        {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        let state = match &po.shared {
            Some((mem, imported)) => {
                let state = EventState::in_slot(EventSlot::new(mem.clone(), d.index));
                // The exporter's new event starts unsignalled; an importer's is the exporter's
                // event as it stands (`Event::create` resets only events of pools not imported).
                if !imported {
                    state.reset();
                }
                state
            }
            None => EventState::default(),
        };
        *o = objects::create(po.driver(), Event { state: Arc::new(state), pool: p as usize, index: d.index });
        Ok(())
    }
    fn zeEventDestroy(e: ze_event_handle_t) {
        // SAFETY: handle validated.
        let ev = unsafe { event_from(e) }?;
        // SAFETY: the pool handle is looked up in the live-object set, never read if destroyed.
        if let Ok(pool) = unsafe { event_pool_from(ev.pool as ze_event_pool_handle_t) } {
            pool.in_use.lock().unwrap_or_else(|e| e.into_inner()).remove(&ev.index);
        }
        // SAFETY: no further use of the event (L0 rule); recorded commands keep its state alive.
        unsafe { objects::destroy::<Event, _>(e) }.map(drop)
    }
    fn zeEventHostSignal(e: ze_event_handle_t) {
        // SAFETY: handle validated.
        unsafe { event_from(e) }?.state.signal();
        Ok(())
    }
    fn zeEventHostSynchronize(e: ze_event_handle_t, timeout: u64) {
        // SAFETY: handle validated.
        let e = unsafe { event_from(e) }?;
        Ok(if e.state.wait(timeout) { ZE_RESULT_SUCCESS } else { ZE_RESULT_NOT_READY })
    }
    fn zeEventQueryStatus(e: ze_event_handle_t) {
        // SAFETY: handle validated.
        let e = unsafe { event_from(e) }?;
        Ok(if e.state.is_signaled() { ZE_RESULT_SUCCESS } else { ZE_RESULT_NOT_READY })
    }
    fn zeEventHostReset(e: ze_event_handle_t) {
        // SAFETY: handle validated.
        unsafe { event_from(e) }?.state.reset();
        Ok(())
    }
    fn zeEventQueryKernelTimestamp(e: ze_event_handle_t, dst: *mut ze_kernel_timestamp_result_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (e, d) = unsafe { (event_from(e)?, out(dst)?) };
        if !e.state.is_signaled() {
            return Ok(ZE_RESULT_NOT_READY);
        }
        let (s, en) = e.state.timestamps();
        d.global = ze_kernel_timestamp_data_t { kernelStart: s, kernelEnd: en };
        d.context = ze_kernel_timestamp_data_t { kernelStart: s, kernelEnd: en };
        Ok(ZE_RESULT_SUCCESS)
    }
    fn zeEventGetEventPool(e: ze_event_handle_t, o: *mut ze_event_pool_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = event_from(e)?.pool as ze_event_pool_handle_t };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::context::zeContextCreate;
    use crate::objects::{device, driver, DriverKind};
    use std::ptr::null_mut;

    fn context(kind: DriverKind) -> (ze_context_handle_t, ze_device_handle_t) {
        // SAFETY: plain-C descriptor.
        let desc: ze_context_desc_t = unsafe { std::mem::zeroed() };
        let mut c = null_mut();
        // SAFETY: valid driver handle, descriptor and out-parameter.
        assert_eq!(unsafe { zeContextCreate(driver(kind).handle(), &desc, &mut c) }, ZE_RESULT_SUCCESS);
        (c, device(kind).handle())
    }

    fn queue(
        c: ze_context_handle_t,
        d: ze_device_handle_t,
        ordinal: u32,
        index: u32,
    ) -> (ze_result_t, ze_command_queue_handle_t) {
        // SAFETY: plain-C descriptor.
        let mut desc: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
        desc.ordinal = ordinal;
        desc.index = index;
        let mut q = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        (unsafe { zeCommandQueueCreate(c, d, &desc, &mut q) }, q)
    }

    fn list(c: ze_context_handle_t, d: ze_device_handle_t, ordinal: u32) -> (ze_result_t, ze_command_list_handle_t) {
        // SAFETY: plain-C descriptor.
        let mut desc: ze_command_list_desc_t = unsafe { std::mem::zeroed() };
        desc.commandQueueGroupOrdinal = ordinal;
        let mut l = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        (unsafe { zeCommandListCreate(c, d, &desc, &mut l) }, l)
    }

    fn fence(q: ze_command_queue_handle_t) -> ze_fence_handle_t {
        // SAFETY: plain-C descriptor.
        let desc: ze_fence_desc_t = unsafe { std::mem::zeroed() };
        let mut f = null_mut();
        // SAFETY: valid queue, descriptor and out-parameter.
        assert_eq!(unsafe { zeFenceCreate(q, &desc, &mut f) }, ZE_RESULT_SUCCESS);
        f
    }

    fn event() -> (ze_event_pool_handle_t, ze_event_handle_t) {
        let (c, _) = context(DriverKind::Gpu);
        // SAFETY: plain-C descriptors.
        let (mut pd, ed): (ze_event_pool_desc_t, ze_event_desc_t) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        pd.count = 1;
        pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
        let (mut p, mut e) = (null_mut(), null_mut());
        // SAFETY: valid handles, descriptors and out-parameters.
        unsafe {
            assert_eq!(zeEventPoolCreate(c, &pd, 0, null_mut(), &mut p), ZE_RESULT_SUCCESS);
            assert_eq!(zeEventCreate(p, &ed, &mut e), ZE_RESULT_SUCCESS);
        }
        (p, e)
    }

    /// The NPU refuses a second live event at one pool index; compute-runtime does not track them.
    #[test]
    fn one_live_event_per_npu_pool_index() {
        for kind in [DriverKind::Npu, DriverKind::Gpu] {
            let (c, _) = context(kind);
            // SAFETY: plain-C descriptors; valid handles and out-parameters.
            unsafe {
                let (mut pd, ed): (ze_event_pool_desc_t, ze_event_desc_t) = (std::mem::zeroed(), std::mem::zeroed());
                pd.count = 2;
                let (mut p, mut e1, mut e2) = (null_mut(), null_mut(), null_mut());
                assert_eq!(zeEventPoolCreate(c, &pd, 0, null_mut(), &mut p), ZE_RESULT_SUCCESS);
                assert_eq!(zeEventCreate(p, &ed, &mut e1), ZE_RESULT_SUCCESS);
                let twice = zeEventCreate(p, &ed, &mut e2);
                if kind == DriverKind::Npu {
                    assert_eq!(twice, ZE_RESULT_ERROR_INVALID_ARGUMENT, "index 0 is in use");
                    assert_eq!(zeEventDestroy(e1), ZE_RESULT_SUCCESS);
                    assert_eq!(zeEventCreate(p, &ed, &mut e1), ZE_RESULT_SUCCESS, "free again after destroy");
                } else {
                    assert_eq!(twice, ZE_RESULT_SUCCESS);
                    assert_eq!(zeEventDestroy(e2), ZE_RESULT_SUCCESS);
                }
                assert_eq!(zeEventDestroy(e1), ZE_RESULT_SUCCESS);
                assert_eq!(zeEventPoolDestroy(p), ZE_RESULT_SUCCESS);
            }
        }
    }

    #[test]
    fn queue_and_list_ordinals_and_indices_must_exist() {
        let (c, d) = context(DriverKind::Gpu);
        let groups = queue_groups(DriverKind::Gpu).len() as u32;
        assert_eq!(queue(c, d, 0, 1).0, ZE_RESULT_ERROR_INVALID_ARGUMENT, "the compute group has 1 queue (one CCS)");
        assert_eq!(queue(c, d, groups - 1, 0).0, ZE_RESULT_SUCCESS, "the copy group's queue");
        assert_eq!(
            queue(c, d, groups - 1, 1).0,
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "the copy group has 1 queue (one BCS)"
        );
        assert_eq!(queue(c, d, groups, 0).0, ZE_RESULT_ERROR_INVALID_ARGUMENT, "no group past the copy group");
        assert_eq!(list(c, d, groups - 1).0, ZE_RESULT_SUCCESS);
        assert_eq!(list(c, d, groups).0, ZE_RESULT_ERROR_INVALID_ARGUMENT, "no such group");
        // SAFETY: plain-C descriptor.
        let mut desc: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
        desc.ordinal = groups;
        let mut il = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        assert_eq!(unsafe { zeCommandListCreateImmediate(c, d, &desc, &mut il) }, ZE_RESULT_ERROR_INVALID_ARGUMENT);
        desc.ordinal = groups - 1;
        desc.index = 1;
        // SAFETY: as above.
        assert_eq!(unsafe { zeCommandListCreateImmediate(c, d, &desc, &mut il) }, ZE_RESULT_ERROR_INVALID_ARGUMENT);
        let (nc, nd) = context(DriverKind::Npu);
        let (r, q) = queue(nc, nd, 0, 1);
        assert_eq!(r, ZE_RESULT_SUCCESS, "the NPU checks only the ordinal (linux-npu-driver cmdqueue.cpp)");
        // SAFETY: a queue just made.
        unsafe { zeCommandQueueDestroy(q) };
        assert_eq!(queue(nc, nd, 1, 0).0, ZE_RESULT_ERROR_INVALID_ARGUMENT, "the NPU has one group");
        assert_eq!(queue(nc, nd, 0, 0).0, ZE_RESULT_SUCCESS);
    }

    /// The copy-only group (the blitter) runs copies and fills, regular and immediate, and takes
    /// fill patterns up to its limit only; its lists run on its queues only.
    #[test]
    fn the_copy_only_group_copies_and_fills_within_its_pattern_limit() {
        let (c, d) = context(DriverKind::Gpu);
        let groups = queue_groups(DriverKind::Gpu);
        let copy = groups.len() as u32 - 1;
        assert!(groups[copy as usize].copy_only());
        let max = groups[copy as usize].max_fill_pattern;
        let (r, q) = queue(c, d, copy, 0);
        assert_eq!(r, ZE_RESULT_SUCCESS);
        let (r, mut l) = list(c, d, copy);
        assert_eq!(r, ZE_RESULT_SUCCESS);
        let src: Vec<u8> = (0..64u8).collect();
        let mut dst = vec![0u8; 64];
        let mut filled = vec![0u8; 64];
        let pattern: Vec<u8> = (0xA0..0xA0 + max as u8).collect();
        let too_big = vec![0x55u8; max * 2];
        // SAFETY: valid handles and buffers that outlive the synchronous execution.
        unsafe {
            assert_eq!(
                zeCommandListAppendMemoryCopy(
                    l,
                    dst.as_mut_ptr().cast(),
                    src.as_ptr().cast(),
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_SUCCESS
            );
            assert_eq!(
                zeCommandListAppendMemoryFill(
                    l,
                    filled.as_mut_ptr().cast(),
                    too_big.as_ptr().cast(),
                    max * 2,
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_ERROR_INVALID_SIZE,
                "a pattern over the blitter's limit"
            );
            assert_eq!(
                zeCommandListAppendMemoryFill(
                    l,
                    filled.as_mut_ptr().cast(),
                    pattern.as_ptr().cast(),
                    max,
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_SUCCESS
            );
            assert_eq!(zeCommandListClose(l), ZE_RESULT_SUCCESS);
            let (_, q0) = queue(c, d, 0, 0);
            assert_eq!(
                zeCommandQueueExecuteCommandLists(q0, 1, &mut l, null_mut()),
                ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE,
                "a copy-group list on a compute queue"
            );
            assert_eq!(dst, vec![0u8; 64], "nothing ran");
            assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut l, null_mut()), ZE_RESULT_SUCCESS);
            assert_eq!(zeCommandQueueSynchronize(q, u64::MAX), ZE_RESULT_SUCCESS);
        }
        assert_eq!(dst, src, "the copy moved the bytes");
        let want: Vec<u8> = (0..64).map(|i| pattern[i % max]).collect();
        assert_eq!(filled, want, "the fill repeated the pattern");
        // An immediate list of the copy group.
        // SAFETY: plain-C descriptor.
        let mut desc: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
        desc.ordinal = copy;
        desc.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
        let mut il = null_mut();
        let mut back = vec![0u8; 64];
        // SAFETY: valid handles, descriptor, buffers and out-parameter.
        unsafe {
            assert_eq!(zeCommandListCreateImmediate(c, d, &desc, &mut il), ZE_RESULT_SUCCESS);
            assert_eq!(
                zeCommandListAppendMemoryCopy(
                    il,
                    back.as_mut_ptr().cast(),
                    dst.as_ptr().cast(),
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_SUCCESS
            );
            assert_eq!(
                zeCommandListAppendMemoryFill(
                    il,
                    back.as_mut_ptr().cast(),
                    too_big.as_ptr().cast(),
                    max * 2,
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_ERROR_INVALID_SIZE
            );
            assert_eq!(zeCommandListDestroy(il), ZE_RESULT_SUCCESS);
        }
        assert_eq!(back, src);
        // The compute group takes the same large pattern (compute-runtime: SIZE_MAX).
        let (_, cl) = list(c, d, 0);
        // SAFETY: valid handles and buffers.
        unsafe {
            assert_eq!(
                zeCommandListAppendMemoryFill(
                    cl,
                    back.as_mut_ptr().cast(),
                    too_big.as_ptr().cast(),
                    max * 2,
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_SUCCESS
            );
        }
    }

    #[test]
    fn execute_checks_count_and_fence_queue() {
        let (c, d) = context(DriverKind::Gpu);
        let (_, q1) = queue(c, d, 0, 0);
        let (_, q2) = queue(c, d, 0, 0);
        let (_, mut l) = list(c, d, 0);
        let f2 = fence(q2);
        // SAFETY: valid handles.
        unsafe {
            assert_eq!(zeCommandListClose(l), ZE_RESULT_SUCCESS);
            assert_eq!(zeCommandQueueExecuteCommandLists(q1, 0, &mut l, null_mut()), ZE_RESULT_ERROR_INVALID_SIZE);
            assert_eq!(
                zeCommandQueueExecuteCommandLists(q1, 1, null_mut(), null_mut()),
                ZE_RESULT_ERROR_INVALID_NULL_POINTER
            );
            assert_eq!(
                zeCommandQueueExecuteCommandLists(q1, 1, &mut l, f2),
                ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT,
                "a fence of another queue"
            );
            assert_eq!(zeFenceQueryStatus(f2), ZE_RESULT_NOT_READY, "nothing ran");
            assert_eq!(zeCommandQueueExecuteCommandLists(q2, 1, &mut l, f2), ZE_RESULT_SUCCESS);
            assert_eq!(zeFenceQueryStatus(f2), ZE_RESULT_SUCCESS);
        }
    }

    #[test]
    fn event_pool_parameter_checks() {
        let (c, _) = context(DriverKind::Gpu);
        // SAFETY: plain-C descriptor; valid handle and out-parameter.
        unsafe {
            let mut pd: ze_event_pool_desc_t = std::mem::zeroed();
            pd.count = 1;
            let mut p = null_mut();
            assert_eq!(zeEventPoolCreate(c, &pd, 1, null_mut(), &mut p), ZE_RESULT_ERROR_INVALID_SIZE);
            pd.flags = 0x10;
            assert_eq!(zeEventPoolCreate(c, &pd, 0, null_mut(), &mut p), ZE_RESULT_ERROR_INVALID_ENUMERATION);
        }
    }

    #[test]
    fn fill_pattern_size_is_a_power_of_two_and_wait_list_null_is_invalid_size() {
        let (c, d) = context(DriverKind::Gpu);
        let (_, l) = list(c, d, 0);
        let mut buf = [0u8; 12];
        let pat = [1u8, 2, 3];
        // SAFETY: valid handles and buffers.
        unsafe {
            let dst = buf.as_mut_ptr().cast();
            assert_eq!(
                zeCommandListAppendMemoryFill(l, dst, pat.as_ptr().cast(), 3, 12, null_mut(), 0, null_mut()),
                ZE_RESULT_ERROR_INVALID_SIZE
            );
            assert_eq!(
                zeCommandListAppendMemoryFill(l, dst, pat.as_ptr().cast(), 2, 12, null_mut(), 0, null_mut()),
                ZE_RESULT_SUCCESS
            );
            assert_eq!(zeCommandListAppendBarrier(l, null_mut(), 1, null_mut()), ZE_RESULT_ERROR_INVALID_SIZE);
        }
    }

    /// Thread A's submission blocks on an event the host signals later; thread B's
    /// zeCommandQueueSynchronize / zeCommandListHostSynchronize must not report completion before
    /// A's copy has happened.
    #[test]
    fn synchronize_waits_for_work_running_on_other_threads() {
        let (c, d) = context(DriverKind::Gpu);
        let (_, q) = queue(c, d, 0, 0);
        let (_, l) = list(c, d, 0);
        let (_, e) = event();
        let src = [7u8; 64];
        let dst = Box::leak(Box::new([0u8; 64]));
        let dst_addr = dst.as_mut_ptr() as usize;
        // SAFETY: valid handles and buffers (the destination is leaked, so it outlives the thread).
        unsafe {
            assert_eq!(zeCommandListAppendWaitOnEvents(l, 1, &e as *const _ as *mut _), ZE_RESULT_SUCCESS);
            assert_eq!(
                zeCommandListAppendMemoryCopy(
                    l,
                    dst_addr as *mut c_void,
                    src.as_ptr().cast(),
                    64,
                    null_mut(),
                    0,
                    null_mut()
                ),
                ZE_RESULT_SUCCESS
            );
            assert_eq!(zeCommandListClose(l), ZE_RESULT_SUCCESS);
        }
        let (qa, list_handle) = (q as usize, l as usize);
        let t = std::thread::spawn(move || {
            let mut l = list_handle as ze_command_list_handle_t;
            // SAFETY: valid queue and list.
            unsafe { zeCommandQueueExecuteCommandLists(qa as _, 1, &mut l, null_mut()) }
        });
        // immediate list on the same pattern
        // SAFETY: plain-C descriptor.
        let idesc: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
        let mut il = null_mut();
        // SAFETY: valid handles.
        assert_eq!(unsafe { zeCommandListCreateImmediate(c, d, &idesc, &mut il) }, ZE_RESULT_SUCCESS);
        let (_, e2) = event();
        let ila = il as usize;
        let e2a = e2 as usize;
        let t2 = std::thread::spawn(move || {
            let mut w = e2a as ze_event_handle_t;
            // SAFETY: valid list and event.
            unsafe { zeCommandListAppendBarrier(ila as _, null_mut(), 1, &mut w) }
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        // SAFETY: valid handles.
        unsafe {
            assert_eq!(zeCommandQueueSynchronize(q, 1_000_000), ZE_RESULT_NOT_READY, "A's copy has not run");
            assert_eq!(zeCommandListHostSynchronize(il, 1_000_000), ZE_RESULT_NOT_READY, "the barrier still waits");
            assert_eq!(dst[0], 0);
            assert_eq!(zeEventHostSignal(e), ZE_RESULT_SUCCESS);
            assert_eq!(zeEventHostSignal(e2), ZE_RESULT_SUCCESS);
            assert_eq!(zeCommandQueueSynchronize(q, u64::MAX), ZE_RESULT_SUCCESS);
            assert_eq!(std::ptr::read_volatile(dst_addr as *const u8), 7, "complete after Synchronize");
            assert_eq!(zeCommandListHostSynchronize(il, u64::MAX), ZE_RESULT_SUCCESS);
        }
        assert_eq!(t.join().unwrap(), ZE_RESULT_SUCCESS);
        assert_eq!(t2.join().unwrap(), ZE_RESULT_SUCCESS);
    }

    /// Legal on hardware, where submission never blocks: submit work that waits for an event, then
    /// signal the event from the same thread and wait for the fence (or the immediate list). Work
    /// submitted after it on the same queue or list stays behind it.
    #[test]
    fn waiting_work_does_not_block_the_submitting_thread() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (c, d) = context(DriverKind::Gpu);
            let (_, q) = queue(c, d, 0, 0);
            let (_, e) = event();
            let f = fence(q);
            let buf = Box::leak(Box::new([0u8; 16]));
            let dst = buf.as_mut_ptr() as *mut c_void;
            let (one, two) = (1u8, 2u8);
            // SAFETY: valid handles and buffers (the buffer is leaked).
            unsafe {
                let (_, mut l1) = list(c, d, 0);
                let mut ew = e;
                assert_eq!(
                    zeCommandListAppendMemoryFill(l1, dst, (&one as *const u8).cast(), 1, 16, null_mut(), 1, &mut ew),
                    0
                );
                zeCommandListClose(l1);
                let (_, mut l2) = list(c, d, 0);
                assert_eq!(
                    zeCommandListAppendMemoryFill(l2, dst, (&two as *const u8).cast(), 1, 8, null_mut(), 0, null_mut()),
                    0
                );
                zeCommandListClose(l2);
                assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut l1, null_mut()), ZE_RESULT_SUCCESS);
                assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut l2, f), ZE_RESULT_SUCCESS);
                assert_eq!(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
                assert_eq!(std::ptr::read_volatile(&buf[0]), 0, "l2 must not overtake l1");
                assert_eq!(zeEventHostSignal(e), ZE_RESULT_SUCCESS);
                assert_eq!(zeFenceHostSynchronize(f, u64::MAX), ZE_RESULT_SUCCESS);
                assert_eq!(zeCommandQueueSynchronize(q, u64::MAX), ZE_RESULT_SUCCESS);
                assert_eq!(std::ptr::read_volatile(&buf[0]), 2, "l1 then l2");
                assert_eq!(std::ptr::read_volatile(&buf[15]), 1);

                // The same on an asynchronous immediate list.
                let desc: ze_command_queue_desc_t = std::mem::zeroed();
                let mut il = null_mut();
                assert_eq!(zeCommandListCreateImmediate(c, d, &desc, &mut il), ZE_RESULT_SUCCESS);
                let (_, e2) = event();
                let mut ew2 = e2;
                let three = 3u8;
                assert_eq!(
                    zeCommandListAppendMemoryFill(
                        il,
                        dst,
                        (&three as *const u8).cast(),
                        1,
                        16,
                        null_mut(),
                        1,
                        &mut ew2
                    ),
                    0
                );
                assert_eq!(
                    zeCommandListAppendMemoryFill(il, dst, (&one as *const u8).cast(), 1, 4, null_mut(), 0, null_mut()),
                    0
                );
                assert_eq!(zeCommandListHostSynchronize(il, 0), ZE_RESULT_NOT_READY);
                assert_eq!(zeEventHostSignal(e2), ZE_RESULT_SUCCESS);
                assert_eq!(zeCommandListHostSynchronize(il, u64::MAX), ZE_RESULT_SUCCESS);
                assert_eq!(std::ptr::read_volatile(&buf[0]), 1, "in order");
                assert_eq!(std::ptr::read_volatile(&buf[15]), 3);
            }
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the submitting thread hung on its own event");
    }

    /// The NPU driver's (linux-npu-driver) append rules: memory must be the NPU driver's, fill
    /// patterns of 1, 2 or 4 bytes, no appends to a closed list, command ids and updates only on
    /// open / mutable lists with graph-argument flags and entries.
    #[test]
    fn npu_lists_follow_the_npu_driver_rules() {
        let (c, d) = context(DriverKind::Npu);
        // SAFETY: plain-C descriptors; valid handles, buffers and out-parameters throughout.
        unsafe {
            let hd: ze_host_mem_alloc_desc_t = std::mem::zeroed();
            let mut m = null_mut();
            assert_eq!(crate::api::memory::zeMemAllocHost(c, &hd, 4096, 0, &mut m), ZE_RESULT_SUCCESS);
            let mut mcl: ze_mutable_command_list_exp_desc_t = std::mem::zeroed();
            mcl.stype = ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_LIST_EXP_DESC;
            let mut ld: ze_command_list_desc_t = std::mem::zeroed();
            ld.pNext = &mcl as *const _ as *const c_void;
            let mut l = null_mut();
            assert_eq!(zeCommandListCreate(c, d, &ld, &mut l), ZE_RESULT_SUCCESS);
            let (_, plain) = list(c, d, 0);

            let mut host = [0u8; 64];
            let h = host.as_mut_ptr() as *mut c_void;
            let copy = |dst, src, n| zeCommandListAppendMemoryCopy(l, dst, src, n, null_mut(), 0, null_mut());
            assert_eq!(copy(m, h, 64), ZE_RESULT_ERROR_UNINITIALIZED, "source is not NPU memory");
            assert_eq!(copy(h, m, 64), ZE_RESULT_ERROR_UNINITIALIZED, "destination is not NPU memory");
            assert_eq!(copy(m, m.cast::<u8>().add(4000).cast(), 200), ZE_RESULT_ERROR_UNINITIALIZED, "past the end");
            assert_eq!(copy(m.cast::<u8>().add(2048).cast(), m, 2048), ZE_RESULT_SUCCESS);
            let pat = [0u8; 8];
            let fill = |dst, ps, n| {
                zeCommandListAppendMemoryFill(l, dst, pat.as_ptr().cast(), ps, n, null_mut(), 0, null_mut())
            };
            assert_eq!(fill(m, 8, 64), ZE_RESULT_ERROR_INVALID_SIZE, "NPU patterns are 1, 2 or 4 bytes");
            let foreign_fill = if crate::profile::current().npu_generation == crate::profile::NpuGeneration::Npu37xx {
                ZE_RESULT_ERROR_UNINITIALIZED // 37xx fills as a copy
            } else {
                ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
            };
            assert_eq!(fill(h, 4, 64), foreign_fill);
            assert_eq!(fill(m, 4, 64), ZE_RESULT_SUCCESS);
            assert_eq!(
                zeCommandListAppendWriteGlobalTimestamp(l, h.cast(), null_mut(), 0, null_mut()),
                ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
            );
            // NPU memory of another context is as foreign as the heap.
            let (c2, _) = context(DriverKind::Npu);
            let mut other = null_mut();
            assert_eq!(crate::api::memory::zeMemAllocHost(c2, &hd, 4096, 0, &mut other), ZE_RESULT_SUCCESS);
            assert_eq!(
                zeCommandListAppendWriteGlobalTimestamp(l, other.cast(), null_mut(), 0, null_mut()),
                ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,
                "a timestamp into another context's memory"
            );
            assert_eq!(copy(m, other, 64), ZE_RESULT_ERROR_UNINITIALIZED, "a copy from another context's memory");
            assert_eq!(crate::api::memory::zeMemFree(c2, other), ZE_RESULT_SUCCESS);

            let mut idd: ze_mutable_command_id_exp_desc_t = std::mem::zeroed();
            let mut id = 0u64;
            assert_eq!(zeCommandListGetNextCommandIdExp(l, &idd, &mut id), ZE_RESULT_ERROR_INVALID_ARGUMENT, "flags 0");
            idd.flags = ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENTS;
            assert_eq!(
                zeCommandListGetNextCommandIdExp(plain, &idd, &mut id),
                ZE_RESULT_ERROR_INVALID_ARGUMENT,
                "not mutable"
            );
            assert_eq!(zeCommandListGetNextCommandIdExp(l, &idd, &mut id), ZE_RESULT_SUCCESS);
            assert_eq!(id, 2);

            let mut ud: ze_mutable_commands_exp_desc_t = std::mem::zeroed();
            assert_eq!(zeCommandListUpdateMutableCommandsExp(l, &ud), ZE_RESULT_ERROR_INVALID_ARGUMENT, "no updates");
            let unknown = ze_base_desc_t { stype: 0x1234, pNext: null_mut() };
            ud.pNext = &unknown as *const _ as *const c_void;
            assert_eq!(
                zeCommandListUpdateMutableCommandsExp(l, &ud),
                ZE_RESULT_ERROR_INVALID_ARGUMENT,
                "unknown entry"
            );
            ud.pNext = null_mut();
            ud.flags = 1;
            assert_eq!(zeCommandListUpdateMutableCommandsExp(l, &ud), ZE_RESULT_ERROR_INVALID_ARGUMENT, "flags");
            ud.flags = 0;
            assert_eq!(
                zeCommandListUpdateMutableCommandsExp(plain, &ud),
                ZE_RESULT_ERROR_INVALID_ARGUMENT,
                "not mutable"
            );

            assert_eq!(zeCommandListClose(l), ZE_RESULT_SUCCESS);
            assert_eq!(copy(m.cast::<u8>().add(2048).cast(), m, 16), ZE_RESULT_ERROR_NOT_AVAILABLE, "closed");
            assert_eq!(zeCommandListGetNextCommandIdExp(l, &idd, &mut id), ZE_RESULT_ERROR_INVALID_ARGUMENT, "closed");
            assert_eq!(zeCommandListReset(l), ZE_RESULT_SUCCESS);
            assert_eq!(copy(m.cast::<u8>().add(2048).cast(), m, 16), ZE_RESULT_SUCCESS, "open again");
            let (_, q) = queue(c, d, 0, 0);
            let mut fd: ze_fence_desc_t = std::mem::zeroed();
            let mut f = null_mut();
            assert_eq!(zeFenceCreate(q, &fd, &mut f), ZE_RESULT_ERROR_INVALID_ARGUMENT, "fence desc stype");
            fd.stype = ZE_STRUCTURE_TYPE_FENCE_DESC;
            assert_eq!(zeFenceCreate(q, &fd, &mut f), ZE_RESULT_SUCCESS);
            let mut ll = l;
            assert_eq!(
                zeCommandQueueExecuteCommandLists(q, 1, &mut ll, f),
                ZE_RESULT_ERROR_UNINITIALIZED,
                "not closed"
            );
            assert_eq!(zeCommandListClose(l), ZE_RESULT_SUCCESS);
            assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut ll, f), ZE_RESULT_SUCCESS);
            assert_eq!(zeFenceHostSynchronize(f, u64::MAX), ZE_RESULT_SUCCESS);
            // An immediate list is never closed: closing it, or executing it on a queue, is
            // UNINITIALIZED (not the spec's INVALID_COMMAND_LIST_TYPE).
            let qd: ze_command_queue_desc_t = std::mem::zeroed();
            let mut il = null_mut();
            assert_eq!(zeCommandListCreateImmediate(c, d, &qd, &mut il), ZE_RESULT_SUCCESS);
            assert_eq!(zeCommandListClose(il), ZE_RESULT_ERROR_UNINITIALIZED);
            assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut il, null_mut()), ZE_RESULT_ERROR_UNINITIALIZED);
            assert_eq!(zeCommandListDestroy(il), ZE_RESULT_SUCCESS);

            let mut n = 1u32;
            let mut g: ze_command_queue_group_properties_t = std::mem::zeroed();
            assert_eq!(
                crate::api::device::zeDeviceGetCommandQueueGroupProperties(d, &mut n, &mut g),
                ZE_RESULT_SUCCESS
            );
            assert_eq!(g.maxMemoryFillPatternSize, 4);
            assert_eq!(crate::api::memory::zeMemFree(c, m), ZE_RESULT_SUCCESS);
        }
    }
    const PRIORITIES: [u32; 3] = [
        ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
        ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_LOW,
        ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH,
    ];

    /// A queue descriptor of `ordinal`, `index` and `priority` (asynchronous).
    fn queue_desc(ordinal: u32, index: u32, priority: u32) -> ze_command_queue_desc_t {
        // SAFETY: plain-C descriptor.
        let mut desc: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
        desc.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
        desc.ordinal = ordinal;
        desc.index = index;
        desc.priority = priority;
        desc
    }

    fn prio_queue(
        c: ze_context_handle_t,
        d: ze_device_handle_t,
        desc: &ze_command_queue_desc_t,
    ) -> (ze_result_t, ze_command_queue_handle_t) {
        let mut q = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        (unsafe { zeCommandQueueCreate(c, d, desc, &mut q) }, q)
    }

    fn prio_immediate(
        c: ze_context_handle_t,
        d: ze_device_handle_t,
        desc: &ze_command_queue_desc_t,
    ) -> (ze_result_t, ze_command_list_handle_t) {
        let mut l = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        (unsafe { zeCommandListCreateImmediate(c, d, desc, &mut l) }, l)
    }

    /// Appends a fill of `value` over `len` bytes at `dst` to `l`, waiting for `wait` when given.
    fn fill(l: ze_command_list_handle_t, dst: usize, value: u8, len: usize, wait: Option<ze_event_handle_t>) {
        let mut w = wait.unwrap_or(null_mut());
        let n = wait.is_some() as u32;
        // SAFETY: valid list; `dst` is a leaked buffer of at least `len` bytes; the pattern is read
        // during the call.
        let r = unsafe {
            zeCommandListAppendMemoryFill(
                l,
                dst as *mut c_void,
                (&value as *const u8).cast(),
                1,
                len,
                null_mut(),
                n,
                &mut w,
            )
        };
        assert_eq!(r, ZE_RESULT_SUCCESS);
    }

    /// A closed regular list of `ordinal` that fills `len` bytes at `dst` with `value`.
    fn fill_list(
        c: ze_context_handle_t,
        d: ze_device_handle_t,
        ordinal: u32,
        dst: usize,
        value: u8,
        len: usize,
        wait: Option<ze_event_handle_t>,
    ) -> ze_command_list_handle_t {
        let (r, l) = list(c, d, ordinal);
        assert_eq!(r, ZE_RESULT_SUCCESS);
        fill(l, dst, value, len, wait);
        // SAFETY: valid list.
        assert_eq!(unsafe { zeCommandListClose(l) }, ZE_RESULT_SUCCESS);
        l
    }

    /// Queues and immediate lists of each priority, on every GPU group, are created, run their work
    /// and report their priority as given (compute-runtime `CommandQueue::getPriority`,
    /// `CommandList::getImmediatePriority`, both in its extension-function table). A value that is
    /// no priority is not refused: compute-runtime checks it nowhere and treats it as NORMAL (the
    /// spec's `INVALID_ENUMERATION` is the validation layer's, off by default; see `check_queue`).
    /// The GPU's `zeDriverGetExtensionFunctionAddress` answer for `name`.
    fn gpu_extension_function(name: &str) -> (ze_result_t, *mut c_void) {
        let name = std::ffi::CString::new(name).unwrap();
        let mut f = null_mut();
        // SAFETY: valid driver handle, NUL-terminated name and out-parameter.
        let r = unsafe {
            crate::api::driver::zeDriverGetExtensionFunctionAddress(
                driver(DriverKind::Gpu).handle(),
                name.as_ptr(),
                &mut f,
            )
        };
        (r, f)
    }

    #[test]
    fn queues_and_immediate_lists_of_every_priority() {
        let (c, d) = context(DriverKind::Gpu);
        if crate::profile::current().gpu_driver_build < crate::profile::GPU_QUEUE_GETTERS_FROM_BUILD {
            // Before 26.18.38308: neither getter in the DDI table (the loader: UNINITIALIZED) nor
            // in the extension-function table (INVALID_ARGUMENT, NULL).
            assert_eq!(
                gpu_extension_function("zeCommandQueueGetPriority"),
                (ZE_RESULT_ERROR_INVALID_ARGUMENT, null_mut())
            );
            let (r, q) = queue(c, d, 0, 0);
            assert_eq!(r, ZE_RESULT_SUCCESS);
            let mut p = 0;
            // SAFETY: valid handles and out-parameter.
            unsafe {
                assert_eq!(zeCommandQueueGetPriority(q, &mut p), ZE_RESULT_ERROR_UNINITIALIZED);
                zeCommandQueueDestroy(q);
            }
            return;
        }
        let resolve = |name: &str| {
            let (r, f) = gpu_extension_function(name);
            assert_eq!(r, ZE_RESULT_SUCCESS);
            assert!(!f.is_null());
            f
        };
        type GetQ = unsafe extern "C" fn(ze_command_queue_handle_t, *mut ze_command_queue_priority_t) -> ze_result_t;
        type GetL = unsafe extern "C" fn(ze_command_list_handle_t, *mut ze_command_queue_priority_t) -> ze_result_t;
        // SAFETY: the driver answers these names with functions of exactly these signatures.
        let (get_q, get_l): (GetQ, GetL) = unsafe {
            (
                std::mem::transmute::<*mut c_void, GetQ>(resolve("zeCommandQueueGetPriority")),
                std::mem::transmute::<*mut c_void, GetL>(resolve("zeCommandListImmediateGetPriority")),
            )
        };
        let buf = Box::leak(Box::new([0u8; 64]));
        let dst = buf.as_mut_ptr() as usize;
        let groups = queue_groups(DriverKind::Gpu).len() as u32;
        let not_a_priority = ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH + 1;
        let mut value = 0u8;
        for ordinal in 0..groups {
            for priority in PRIORITIES.into_iter().chain([not_a_priority, 0x7fff_fffe]) {
                value += 1;
                let desc = queue_desc(ordinal, 0, priority);
                let (r, q) = prio_queue(c, d, &desc);
                assert_eq!(r, ZE_RESULT_SUCCESS, "queue of group {ordinal}, priority {priority}");
                let mut got = u32::MAX;
                // SAFETY: valid queue and out-parameter.
                assert_eq!(unsafe { get_q(q, &mut got) }, ZE_RESULT_SUCCESS);
                assert_eq!(got, priority, "the queue reports its priority as given");
                let f = fence(q);
                let mut l = fill_list(c, d, ordinal, dst, value, 64, None);
                // SAFETY: valid handles.
                unsafe {
                    assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut l, f), ZE_RESULT_SUCCESS);
                    assert_eq!(zeFenceHostSynchronize(f, u64::MAX), ZE_RESULT_SUCCESS);
                    assert_eq!(std::ptr::read_volatile(dst as *const u8), value, "the queue ran its list");
                    // A regular list has no priority.
                    assert_eq!(get_l(l, &mut got), ZE_RESULT_ERROR_INVALID_ARGUMENT);
                    zeCommandListDestroy(l);
                    zeFenceDestroy(f);
                    zeCommandQueueDestroy(q);
                }

                value += 1;
                let (r, il) = prio_immediate(c, d, &desc);
                assert_eq!(r, ZE_RESULT_SUCCESS, "immediate list of group {ordinal}, priority {priority}");
                // SAFETY: valid list and out-parameter.
                assert_eq!(unsafe { get_l(il, &mut got) }, ZE_RESULT_SUCCESS);
                assert_eq!(got, priority, "the immediate list reports its priority as given");
                fill(il, dst, value, 64, None);
                // SAFETY: valid list.
                unsafe {
                    assert_eq!(zeCommandListHostSynchronize(il, u64::MAX), ZE_RESULT_SUCCESS);
                    assert_eq!(std::ptr::read_volatile((dst + 63) as *const u8), value, "the immediate list ran");
                    zeCommandListDestroy(il);
                }
            }
        }
    }

    /// compute-runtime's `Device::getCsrForOrdinalAndIndex` returns the low-priority context for a
    /// LOW queue or immediate list of a compute (or render) group before it checks the index, so
    /// any index is taken there, and reported back as given (`CommandQueue::getIndex`). Everywhere
    /// else (other priorities, the copy group, the NPU) the index must exist.
    #[test]
    fn low_priority_compute_queues_take_any_index() {
        let (c, d) = context(DriverKind::Gpu);
        let groups = queue_groups(DriverKind::Gpu);
        let low = ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_LOW;
        for (ordinal, g) in groups.iter().enumerate() {
            let ordinal = ordinal as u32;
            let past = g.queues + 6;
            for priority in PRIORITIES {
                let desc = queue_desc(ordinal, past, priority);
                let expect = if priority == low && !g.copy_only() {
                    ZE_RESULT_SUCCESS
                } else {
                    ZE_RESULT_ERROR_INVALID_ARGUMENT
                };
                let (r, q) = prio_queue(c, d, &desc);
                assert_eq!(
                    r,
                    expect,
                    "queue: group {ordinal} (copy only: {}), index {past}, priority {priority}",
                    g.copy_only()
                );
                let (ri, il) = prio_immediate(c, d, &desc);
                assert_eq!(ri, expect, "immediate list: group {ordinal}, index {past}, priority {priority}");
                if r == ZE_RESULT_SUCCESS {
                    let mut index = 0;
                    // SAFETY: valid handles and out-parameter.
                    unsafe {
                        assert_eq!(zeCommandQueueGetIndex(q, &mut index), ZE_RESULT_SUCCESS);
                        assert_eq!(index, past);
                        zeCommandQueueDestroy(q);
                        zeCommandListDestroy(il);
                    }
                }
            }
        }
        assert_eq!(
            prio_queue(c, d, &queue_desc(groups.len() as u32, 0, low)).0,
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "the ordinal is still checked"
        );
        let (nc, nd) = context(DriverKind::Npu);
        let (r, q) = prio_queue(nc, nd, &queue_desc(0, 1, low));
        assert_eq!(r, ZE_RESULT_SUCCESS, "the NPU ignores the index");
        // SAFETY: a queue just made.
        unsafe { zeCommandQueueDestroy(q) };
    }

    /// No ordering by priority (see `check_queue`): compute-runtime puts LOW compute work on a
    /// hardware context of its own and only hints its priority to the kernel, so LOW work held
    /// back by an event holds back no NORMAL or HIGH work, and NORMAL or HIGH work held back holds
    /// back no LOW work; each runs in order within its own queue or list, and the held-back work
    /// runs once released. A model that ordered priorities (LOW behind ready NORMAL/HIGH work, or on
    /// their engine) fails the first half, one that let ready work of a higher priority overtake
    /// earlier work of its own queue fails the in-order checks.
    #[test]
    fn priorities_impose_no_ordering_between_queues() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (c, d) = context(DriverKind::Gpu);
            let [normal, low, high] = PRIORITIES;
            let bufs: Vec<usize> = (0..4).map(|_| Box::leak(Box::new([0u8; 32])).as_mut_ptr() as usize).collect();
            // SAFETY: the buffers are leaked, so every read of them stays valid.
            let at = |b: usize, i: usize| unsafe { std::ptr::read_volatile((b + i) as *const u8) };

            // A LOW queue held back by an event, then NORMAL and HIGH queues and a HIGH immediate
            // list on the same compute group with ready work.
            let (_, e) = event();
            let (_, ql) = prio_queue(c, d, &queue_desc(0, 0, low));
            let fl = fence(ql);
            let mut held = fill_list(c, d, 0, bufs[0], 1, 32, Some(e));
            let mut after = fill_list(c, d, 0, bufs[0], 2, 8, None);
            // SAFETY: valid handles.
            unsafe {
                assert_eq!(zeCommandQueueExecuteCommandLists(ql, 1, &mut held, null_mut()), ZE_RESULT_SUCCESS);
                assert_eq!(zeCommandQueueExecuteCommandLists(ql, 1, &mut after, fl), ZE_RESULT_SUCCESS);
            }
            for (i, p) in [normal, high].into_iter().enumerate() {
                let (_, q) = prio_queue(c, d, &queue_desc(0, 0, p));
                let f = fence(q);
                let mut l = fill_list(c, d, 0, bufs[1], 10 + i as u8, 32, None);
                // SAFETY: valid handles.
                unsafe {
                    assert_eq!(zeCommandQueueExecuteCommandLists(q, 1, &mut l, f), ZE_RESULT_SUCCESS);
                    assert_eq!(
                        zeFenceHostSynchronize(f, u64::MAX),
                        ZE_RESULT_SUCCESS,
                        "priority {p} is not held back by LOW work"
                    );
                }
                assert_eq!(at(bufs[1], 0), 10 + i as u8);
            }
            let (_, ih) = prio_immediate(c, d, &queue_desc(0, 0, high));
            fill(ih, bufs[2], 20, 32, None);
            // SAFETY: valid list.
            assert_eq!(unsafe { zeCommandListHostSynchronize(ih, u64::MAX) }, ZE_RESULT_SUCCESS);
            assert_eq!(at(bufs[2], 0), 20, "a HIGH immediate list is not held back by LOW work");
            // SAFETY: valid fence.
            assert_eq!(unsafe { zeFenceQueryStatus(fl) }, ZE_RESULT_NOT_READY, "the LOW queue still waits");
            assert_eq!(at(bufs[0], 0), 0, "LOW work behind the event has not run, nor what followed it");
            // SAFETY: valid handles.
            unsafe {
                assert_eq!(zeEventHostSignal(e), ZE_RESULT_SUCCESS);
                assert_eq!(zeFenceHostSynchronize(fl, u64::MAX), ZE_RESULT_SUCCESS);
            }
            assert_eq!((at(bufs[0], 0), at(bufs[0], 31)), (2, 1), "the LOW queue ran in order once released");

            // The other way round: a HIGH immediate list and a NORMAL queue held back, LOW work ready.
            let (_, e2) = event();
            let (_, ih2) = prio_immediate(c, d, &queue_desc(0, 0, high));
            fill(ih2, bufs[3], 30, 32, Some(e2));
            fill(ih2, bufs[3], 31, 8, None);
            let (_, qn) = prio_queue(c, d, &queue_desc(0, 0, normal));
            let fnorm = fence(qn);
            let mut ln = fill_list(c, d, 0, bufs[3], 40, 32, Some(e2));
            // SAFETY: valid handles.
            unsafe { assert_eq!(zeCommandQueueExecuteCommandLists(qn, 1, &mut ln, fnorm), ZE_RESULT_SUCCESS) };
            let (_, il) = prio_immediate(c, d, &queue_desc(0, 0, low));
            fill(il, bufs[2], 50, 32, None);
            // SAFETY: valid handles.
            unsafe {
                assert_eq!(
                    zeCommandListHostSynchronize(il, u64::MAX),
                    ZE_RESULT_SUCCESS,
                    "LOW work is not held back by HIGH or NORMAL work"
                );
                assert_eq!(at(bufs[2], 0), 50);
                assert_eq!(zeCommandListHostSynchronize(ih2, 0), ZE_RESULT_NOT_READY);
                assert_eq!(zeFenceQueryStatus(fnorm), ZE_RESULT_NOT_READY);
                assert_eq!(at(bufs[3], 0), 0, "nothing behind the event has run");
                assert_eq!(zeEventHostSignal(e2), ZE_RESULT_SUCCESS);
                assert_eq!(zeCommandListHostSynchronize(ih2, u64::MAX), ZE_RESULT_SUCCESS);
                assert_eq!(zeFenceHostSynchronize(fnorm, u64::MAX), ZE_RESULT_SUCCESS);
            }
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("a queue of one priority hung behind another's");
    }
}
