//! Queues, command lists (regular, immediate, mutable), fences, event pools and events.
//! Execution is synchronous on the calling thread (see [`crate::cmdlist`]).
use crate::cmdlist::{collect_events, Command, CommandList, CommandQueue, Event, EventPool, EventState, Fence};
use crate::export::{chain, input, out, ZeResult};
use crate::objects::{
    self, command_list_from, context_from, device_in, event_from, event_pool_from, fence_from, queue_from, same_driver,
};
use crate::stypes;
use crate::sys::*;
use std::ffi::c_void;
use std::sync::Arc;

/// Appends `cmd` with the call's signal event and wait list.
unsafe fn append(
    list: ze_command_list_handle_t,
    cmd: impl FnOnce() -> ZeResult<Command>,
    signal: ze_event_handle_t,
    n: u32,
    waits: *mut ze_event_handle_t,
) -> ZeResult {
    // SAFETY: handles validated; the wait array comes from the caller.
    let l = unsafe { command_list_from(list) }?;
    // SAFETY: as above.
    let (signal, waits) = unsafe { collect_events(l.driver(), signal, n, waits) }?;
    let cmd = cmd()?;
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
        if d.ordinal != 0 {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        *o = objects::create(c.driver(), CommandQueue { ordinal: d.ordinal, flags: d.flags, mode: d.mode });
        Ok(())
    }
    fn zeCommandQueueDestroy(q: ze_command_queue_handle_t) {
        // SAFETY: no further use of the queue (L0 rule).
        unsafe { objects::destroy::<CommandQueue, _>(q) }.map(drop)
    }
    fn zeCommandQueueExecuteCommandLists(q: ze_command_queue_handle_t, n: u32, lists: *mut ze_command_list_handle_t, fence: ze_fence_handle_t) {
        // SAFETY: handles validated.
        let q = unsafe { queue_from(q) }?;
        let fence = if fence.is_null() {
            None
        } else {
            // SAFETY: as above.
            let f = unsafe { fence_from(fence) }?;
            same_driver(q.driver(), f)?;
            Some(f)
        };
        if n > 0 && lists.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let mut ls = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            // SAFETY: the caller provides n list handles.
            let l = unsafe { command_list_from(*lists.add(i)) }?;
            same_driver(q.driver(), l)?;
            if l.is_immediate() {
                return Err(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
            }
            ls.push(l);
        }
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
    fn zeCommandQueueSynchronize(q: ze_command_queue_handle_t, _timeout: u64) {
        // SAFETY: handle validated.
        unsafe { queue_from(q) }.map(|_| ())
    }
    fn zeCommandQueueGetOrdinal(q: ze_command_queue_handle_t, o: *mut u32) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = queue_from(q)?.ordinal };
        Ok(())
    }
    fn zeCommandQueueGetIndex(q: ze_command_queue_handle_t, o: *mut u32) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { queue_from(q)?; *out(o)? = 0 };
        Ok(())
    }

    fn zeCommandListCreate(ctx: ze_context_handle_t, dev: ze_device_handle_t, desc: *const ze_command_list_desc_t, o: *mut ze_command_list_handle_t) {
        // SAFETY: handles validated; caller's descriptor and out-parameter.
        let (c, d, o) = unsafe { (context_from(ctx)?, input(desc)?, out(o)?) };
        // SAFETY: as above.
        unsafe { device_in(c.driver(), dev) }?;
        // SAFETY: the descriptor's chain.
        let mutable = unsafe { chain(d.pNext) }.iter().any(|e| e.stype == stypes::MUTABLE_COMMAND_LIST_EXP_DESC);
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
        let mut l = CommandList::new(c.driver(), true, false, d.ordinal);
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
        unsafe { command_list_from(l) }?.close();
        Ok(())
    }
    fn zeCommandListReset(l: ze_command_list_handle_t) {
        // SAFETY: handle validated.
        unsafe { command_list_from(l) }?.reset();
        Ok(())
    }
    /// Everything appended to an immediate list has already run.
    fn zeCommandListHostSynchronize(l: ze_command_list_handle_t, _timeout: u64) {
        // SAFETY: handle validated.
        unsafe { command_list_from(l) }.map(|_| ())
    }
    fn zeCommandListGetDeviceHandle(l: ze_command_list_handle_t, o: *mut ze_device_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = command_list_from(l)?.device as ze_device_handle_t };
        Ok(())
    }
    fn zeCommandListGetContextHandle(l: ze_command_list_handle_t, o: *mut ze_context_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = command_list_from(l)?.context as ze_context_handle_t };
        Ok(())
    }
    fn zeCommandListGetOrdinal(l: ze_command_list_handle_t, o: *mut u32) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = command_list_from(l)?.ordinal };
        Ok(())
    }
    fn zeCommandListIsImmediate(l: ze_command_list_handle_t, o: *mut ze_bool_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe { *out(o)? = command_list_from(l)?.is_immediate() as ze_bool_t };
        Ok(())
    }
    fn zeCommandListAppendBarrier(l: ze_command_list_handle_t, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        // SAFETY: caller's handles.
        unsafe { append(l, || Ok(Command::Barrier), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryRangesBarrier(l: ze_command_list_handle_t, _nr: u32, _sizes: *const usize, _ranges: *mut *const c_void, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        // SAFETY: caller's handles.
        unsafe { append(l, || Ok(Command::Barrier), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryCopy(l: ze_command_list_handle_t, dst: *mut c_void, src: *const c_void, size: usize, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if size > 0 && (dst.is_null() || src.is_null()) {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's handles.
        unsafe { append(l, || Ok(Command::Copy { dst: dst as usize, src: src as usize, size }), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryCopyFromContext(l: ze_command_list_handle_t, dst: *mut c_void, _src_ctx: ze_context_handle_t, src: *const c_void, size: usize, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if size > 0 && (dst.is_null() || src.is_null()) {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's handles.
        unsafe { append(l, || Ok(Command::Copy { dst: dst as usize, src: src as usize, size }), signal, n, waits) }
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
        unsafe { append(l, || Ok(cmd), signal, n, waits) }
    }
    fn zeCommandListAppendMemoryFill(l: ze_command_list_handle_t, dst: *mut c_void, pattern: *const c_void, psize: usize, size: usize, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if dst.is_null() || pattern.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        if psize == 0 || psize > 128 {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        // SAFETY: the caller's pattern of psize bytes.
        let pat = unsafe { std::slice::from_raw_parts(pattern as *const u8, psize) }.to_vec();
        // SAFETY: caller's handles.
        unsafe { append(l, || Ok(Command::Fill { dst: dst as usize, pattern: pat, size }), signal, n, waits) }
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
        unsafe { append(l, move || Ok(Command::SignalEvent(st)), std::ptr::null_mut(), 0, std::ptr::null_mut()) }
    }
    fn zeCommandListAppendWaitOnEvents(l: ze_command_list_handle_t, n: u32, evs: *mut ze_event_handle_t) {
        // SAFETY: handles validated; the caller's array of n events.
        let lo = unsafe { command_list_from(l) }?;
        // SAFETY: as above.
        let (_, es) = unsafe { collect_events(lo.driver(), std::ptr::null_mut(), n, evs) }?;
        // SAFETY: caller's handle.
        unsafe { append(l, move || Ok(Command::WaitEvents(es)), std::ptr::null_mut(), 0, std::ptr::null_mut()) }
    }
    fn zeCommandListAppendEventReset(l: ze_command_list_handle_t, ev: ze_event_handle_t) {
        // SAFETY: handles validated.
        let (lo, e) = unsafe { (command_list_from(l)?, event_from(ev)?) };
        same_driver(lo.driver(), e)?;
        let st = e.state.clone();
        // SAFETY: caller's handle.
        unsafe { append(l, move || Ok(Command::ResetEvent(st)), std::ptr::null_mut(), 0, std::ptr::null_mut()) }
    }
    fn zeCommandListAppendWriteGlobalTimestamp(l: ze_command_list_handle_t, dst: *mut u64, signal: ze_event_handle_t, n: u32, waits: *mut ze_event_handle_t) {
        if dst.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's handles.
        unsafe { append(l, || Ok(Command::WriteTimestamp { dst: dst as usize }), signal, n, waits) }
    }
    fn zeCommandListGetNextCommandIdExp(l: ze_command_list_handle_t, desc: *const ze_mutable_command_id_exp_desc_t, id: *mut u64) {
        // SAFETY: handle validated; caller's descriptor and out-parameter.
        let (lo, _, id) = unsafe { (command_list_from(l)?, input(desc)?, out(id)?) };
        *id = lo.next_command_id();
        Ok(())
    }
    /// Walks the whole chain; `ze_mutable_graph_argument_exp_desc_t` entries patch graph
    /// arguments, other entries are skipped.
    fn zeCommandListUpdateMutableCommandsExp(l: ze_command_list_handle_t, desc: *const ze_mutable_commands_exp_desc_t) {
        // SAFETY: handle validated; caller's descriptor.
        let (lo, d) = unsafe { (command_list_from(l)?, input(desc)?) };
        // SAFETY: the descriptor's chain.
        for e in unsafe { chain(d.pNext) } {
            if e.stype == stypes::MUTABLE_GRAPH_ARGUMENT_EXP_DESC {
                // SAFETY: stype says ze_mutable_graph_argument_exp_desc_t.
                let g = unsafe { &*(e.ptr as *const stypes::MutableGraphArgumentExpDesc) };
                lo.update_graph_argument(g.commandId, g.argIndex, g.pArgValue as usize)?;
            }
        }
        Ok(())
    }

    fn zeFenceCreate(q: ze_command_queue_handle_t, desc: *const ze_fence_desc_t, o: *mut ze_fence_handle_t) {
        // SAFETY: handle validated; caller's descriptor and out-parameter.
        let (qo, d, o) = unsafe { (queue_from(q)?, input(desc)?, out(o)?) };
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
        Ok(if f.state.wait(timeout) { ZE_RESULT_SUCCESS } else { ZE_RESULT_NOT_READY })
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
        if d.count == 0 {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        if ndev > 0 && !devs.is_null() {
            for i in 0..ndev as usize {
                // SAFETY: the caller provides ndev device handles.
                unsafe { device_in(c.driver(), *devs.add(i)) }?;
            }
        }
        *o = objects::create(c.driver(), EventPool { count: d.count, flags: d.flags });
        Ok(())
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
        *o = objects::create(po.driver(), Event { state: Arc::new(EventState::default()), pool: p as usize, index: d.index });
        Ok(())
    }
    fn zeEventDestroy(e: ze_event_handle_t) {
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
