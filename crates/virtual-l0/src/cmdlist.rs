//! Command lists, queues, fences, events and the synchronous executor.
//!
//! A command list records an in-order list of [`Command`]s (each with its wait events and optional
//! signal event). Regular lists run when `zeCommandQueueExecuteCommandLists` is called, on the
//! calling thread, then the fence is signalled; immediate lists run each command at append time.
//! Waiting on an event that is not yet signalled blocks until another thread or command signals it;
//! work that would block at submission on an event nothing has signalled yet is [`Deferred`] to a
//! thread of the queue or immediate list instead, so that submission never blocks (as on hardware).
//!
//! For the NPU module: [`GraphExecutable`], [`Command::GraphExecute`], [`CommandList::append`] /
//! [`CommandList::append_with_events`], [`collect_events`]. Mutable command lists: the id of a
//! command is its index in the list ([`CommandList::next_command_id`]); [`CommandList::update_graph_argument`]
//! patches `args[arg_index]` of a recorded `GraphExecute`.
use crate::export::{now_ns, ZeResult};
use crate::ipc::{EventPoolMemory, EventSlot};
use crate::objects::{event_from, same_driver, DriverKind, Kind};
use crate::sys::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Something a `GraphExecute` command runs (implemented by the NPU module's graphs).
pub trait GraphExecutable: Send + Sync {
    /// Runs the graph with the recorded argument values; a profiling execution writes its raw
    /// profiling output into `profile`.
    fn execute(&self, args: &[ArgValue], profile: Option<&ProfileOutput>) -> ze_result_t;
}

/// A profiling query's raw output buffer (`ZE_extension_profiling_data`).
pub type ProfileOutput = Arc<Mutex<Vec<u8>>>;

/// A graph argument's value: its memory and, when set, its element strides (innermost first, as
/// `ze_graph_argument_value_strides_t.userStrides`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArgValue {
    pub ptr: usize,
    pub strides: Option<[u32; 5]>,
}

/// One argument's part of a mutable-command-list update: a new pointer, new strides, or both
/// (without strides, the argument's strides are dropped: linux-npu-driver 1.32.1
/// `inference_execute.cpp` `VPUInferenceExecute::setUpdates`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ArgUpdate {
    pub ptr: Option<usize>,
    pub strides: Option<[u32; 5]>,
}

/// One recorded command.
pub enum Command {
    /// `memmove(dst, src, size)`.
    Copy {
        /// destination address
        dst: usize,
        /// source address
        src: usize,
        /// bytes
        size: usize,
    },
    /// 2D/3D strided copy (`zeCommandListAppendMemoryCopyRegion`): `width` bytes × `height` rows ×
    /// `depth` slices from `src` at `src_origin` to `dst` at `dst_origin`.
    CopyRegion {
        /// destination base address
        dst: usize,
        /// source base address
        src: usize,
        /// (x bytes, y rows, z slices) in the destination
        dst_origin: [usize; 3],
        /// (x bytes, y rows, z slices) in the source
        src_origin: [usize; 3],
        /// (width bytes, height rows, depth slices), each at least 1
        extent: [usize; 3],
        /// (row pitch, slice pitch) of the destination
        dst_pitch: [usize; 2],
        /// (row pitch, slice pitch) of the source
        src_pitch: [usize; 2],
    },
    /// Fill `size` bytes at `dst` with `pattern` repeated (the last repetition truncated).
    Fill {
        /// destination address
        dst: usize,
        /// 1..=128 bytes
        pattern: Vec<u8>,
        /// bytes
        size: usize,
    },
    /// Execution and memory barrier (a no-op when running in order on the host).
    Barrier,
    /// Signal an event.
    SignalEvent(Arc<EventState>),
    /// Wait until every event is signalled.
    WaitEvents(Vec<Arc<EventState>>),
    /// Reset an event.
    ResetEvent(Arc<EventState>),
    /// Write the current timestamp (ns) as a `u64` to `dst`.
    WriteTimestamp {
        /// destination address
        dst: usize,
    },
    /// Run closed regular command lists (by handle), in order: what
    /// `zeCommandListImmediateAppendCommandListsExp` appends to an immediate list.
    ExecuteLists(Vec<usize>),
    /// Run a graph with a snapshot of its argument values.
    GraphExecute {
        /// the graph
        graph: Arc<dyn GraphExecutable>,
        /// argument values, patched by mutable-command-list updates
        args: Vec<ArgValue>,
        /// the profiling query's output, for a profiling graph
        profile: Option<ProfileOutput>,
    },
}

struct Recorded {
    cmd: Command,
    waits: Vec<Arc<EventState>>,
    signal: Option<Arc<EventState>>,
}

#[derive(Default)]
struct EvInner {
    signaled: bool,
    start: u64,
    end: u64,
}

/// The shared state of an event or fence: signalled flag, timestamps, waiters. An event of an IPC
/// event pool keeps its flag and timestamps in the pool's shared memory instead (`slot`), where
/// other processes see them.
#[derive(Default)]
pub struct EventState {
    inner: Mutex<EvInner>,
    cv: Condvar,
    slot: Option<EventSlot>,
}

impl EventState {
    /// The state of an event of an IPC event pool: its slot in the pool's shared memory.
    pub fn in_slot(slot: EventSlot) -> Self {
        EventState { slot: Some(slot), ..Default::default() }
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, EvInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Marks the start of the work this event tracks.
    pub fn begin(&self) {
        let now = now_ns();
        self.lock().start = now;
        if let Some(s) = &self.slot {
            s.begin(now);
        }
    }
    /// Signals (and wakes every waiter).
    pub fn signal(&self) {
        let mut g = self.lock();
        let now = now_ns();
        if g.start == 0 || g.start > now {
            g.start = now;
        }
        g.end = now;
        g.signaled = true;
        if let Some(s) = &self.slot {
            s.signal(g.start, g.end);
        }
        self.cv.notify_all();
    }
    /// Back to not signalled.
    pub fn reset(&self) {
        let mut g = self.lock();
        *g = EvInner::default();
        if let Some(s) = &self.slot {
            s.reset();
        }
    }
    /// Whether signalled.
    pub fn is_signaled(&self) -> bool {
        match &self.slot {
            Some(s) => s.is_signaled(),
            None => self.lock().signaled,
        }
    }
    /// (start, end) timestamps in ns.
    pub fn timestamps(&self) -> (u64, u64) {
        if let Some(s) = &self.slot {
            return s.timestamps();
        }
        let g = self.lock();
        (g.start, g.end)
    }
    /// Waits up to `timeout_ns` (`u64::MAX` = forever); true when signalled. A wait without end
    /// also ends, false, when the process exits (see [`shutdown`]).
    pub fn wait(&self, timeout_ns: u64) -> bool {
        if timeout_ns == u64::MAX && !self.is_signaled() {
            let key = self as *const EventState as usize;
            waiting().push(key);
            let signaled = self.wait_inner(timeout_ns);
            let mut w = waiting();
            if let Some(i) = w.iter().position(|&k| k == key) {
                w.swap_remove(i);
            }
            return signaled;
        }
        self.wait_inner(timeout_ns)
    }
    fn wait_inner(&self, timeout_ns: u64) -> bool {
        if let Some(s) = &self.slot {
            return Self::wait_slot(s, timeout_ns);
        }
        let mut g = self.lock();
        if g.signaled {
            return true;
        }
        if timeout_ns == 0 {
            return false;
        }
        let deadline =
            if timeout_ns == u64::MAX { None } else { Instant::now().checked_add(Duration::from_nanos(timeout_ns)) };
        while !g.signaled {
            // Checked under the state's lock, which `shutdown` takes before it wakes us: no lost wakeup.
            if deadline.is_none() && shutting_down() {
                return false;
            }
            match deadline {
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    g = self.cv.wait_timeout(g, d - now).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
        true
    }
}

impl EventState {
    /// Waits on a slot another process may signal: its futex, a millisecond at a time, so that a
    /// wait without end still sees the process exit.
    fn wait_slot(s: &EventSlot, timeout_ns: u64) -> bool {
        let deadline =
            if timeout_ns == u64::MAX { None } else { Instant::now().checked_add(Duration::from_nanos(timeout_ns)) };
        loop {
            if s.is_signaled() {
                return true;
            }
            let step = match deadline {
                None if shutting_down() => return false,
                None => Duration::from_millis(1),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(Duration::from_millis(1)),
                    _ => return false,
                },
            };
            s.wait_for(step);
        }
    }
}

/// `ze_event_pool_handle_t`.
pub struct EventPool {
    /// number of events
    pub count: u32,
    /// `ze_event_pool_flags_t`
    pub flags: u32,
    /// Indices with a live event (kept by the NPU driver only, which refuses a second event at one
    /// index: linux-npu-driver 1.32.1 `eventpool.cpp` `EventPool::createEvent`).
    pub in_use: std::sync::Mutex<std::collections::HashSet<u32>>,
    /// IPC pools (GPU, `ZE_EVENT_POOL_FLAG_IPC`): the events' shared memory, and whether this
    /// process opened it from a handle (its events are not reset when created).
    pub shared: Option<(Arc<EventPoolMemory>, bool)>,
}
/// `ze_event_handle_t`.
pub struct Event {
    /// signal state
    pub state: Arc<EventState>,
    /// owning pool handle
    pub pool: usize,
    /// index in the pool
    pub index: u32,
}
/// `ze_fence_handle_t`.
pub struct Fence {
    /// signal state
    pub state: Arc<EventState>,
    /// queue handle
    pub queue: usize,
}
/// `ze_command_queue_handle_t`.
///
/// Every queue runs its work in submission order, on the submitting thread or on its own
/// [`Deferred`] thread, independently of every other queue; its priority changes nothing in that
/// (see `api::cmd::check_queue` for what compute-runtime does with a priority and why no ordering
/// between priorities is modelled).
pub struct CommandQueue {
    /// queue group ordinal
    pub ordinal: u32,
    /// queue index in the group, as the descriptor gave it (`zeCommandQueueGetIndex`)
    pub index: u32,
    /// `ze_command_queue_priority_t`, as the descriptor gave it (`zeCommandQueueGetPriority`)
    pub priority: u32,
    /// `ze_command_queue_flags_t`
    pub flags: u32,
    /// `ze_command_queue_mode_t`
    pub mode: u32,
    /// the context it was created on
    pub context: usize,
    /// submissions still running (on other threads): `zeCommandQueueSynchronize` waits for them
    pub inflight: Arc<InFlight>,
    /// submissions that wait for events not yet signalled, run in order on the queue's own thread
    pub deferred: Deferred,
}

type Job = Box<dyn FnOnce() + Send>;

/// Set once the process exits (or the library is unloaded): see [`shutdown`].
static SHUTDOWN: AtomicBool = AtomicBool::new(false);

/// Whether the process is exiting.
pub fn shutting_down() -> bool {
    SHUTDOWN.load(Ordering::Acquire)
}

/// The events some thread waits on without end (their addresses; an address is in the list only
/// while its waiter is inside [`EventState::wait`], so it is alive).
fn waiting() -> MutexGuard<'static, Vec<usize>> {
    static W: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    W.lock().unwrap_or_else(|e| e.into_inner())
}

type Sender = Arc<Mutex<Option<std::sync::mpsc::Sender<Job>>>>;

/// The queue threads: their channels (dropped at exit so that idle threads end) and how many
/// still run.
struct Workers {
    senders: Vec<std::sync::Weak<Mutex<Option<std::sync::mpsc::Sender<Job>>>>>,
    live: usize,
}

fn workers() -> (&'static Mutex<Workers>, &'static Condvar) {
    static W: Mutex<Workers> = Mutex::new(Workers { senders: Vec::new(), live: 0 });
    static CV: Condvar = Condvar::new();
    (&W, &CV)
}

/// Leaves the live-worker count when a queue thread ends (also on unwinding).
struct WorkerAlive;
impl Drop for WorkerAlive {
    fn drop(&mut self) {
        let (w, cv) = workers();
        w.lock().unwrap_or_else(|e| e.into_inner()).live -= 1;
        cv.notify_all();
    }
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(shutdown);
}

/// Ends the queue threads before the process exits or the library is unloaded (registered with
/// `atexit` when the first one starts; glibc runs a shared object's `atexit` handlers at `exit` and
/// at its `dlclose`). A thread blocked on an event nothing will ever signal would otherwise still
/// be parked inside this library while exit handlers tear the process down (or the code it would
/// return to is unmapped). Every wait without end returns, pending submissions are dropped
/// unexecuted (a real device's work dies with the process the same way), idle threads see their
/// channel close, and exit waits (up to 2 s, for a graph still running) until they have ended.
pub fn shutdown() {
    if SHUTDOWN.swap(true, Ordering::AcqRel) {
        return;
    }
    let (w, cv) = workers();
    // What is left at exit, before any thread is woken.
    let (threads, dropped) = (w.lock().unwrap_or_else(|e| e.into_inner()).live, PENDING.load(Ordering::Acquire));
    for &key in waiting().iter() {
        // SAFETY: listed only while its waiter is inside `EventState::wait` (see `waiting`).
        let e = unsafe { &*(key as *const EventState) };
        let _g = e.lock();
        e.cv.notify_all();
    }
    let mut g = w.lock().unwrap_or_else(|e| e.into_inner());
    let senders: Vec<_> = g.senders.drain(..).filter_map(|s| s.upgrade()).collect();
    drop(g);
    for s in &senders {
        s.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut g = w.lock().unwrap_or_else(|e| e.into_inner());
    while g.live > 0 && Instant::now() < deadline {
        g = cv.wait_timeout(g, deadline - Instant::now()).unwrap_or_else(|e| e.into_inner()).0;
    }
    if std::env::var_os("VL0_TRACE").is_some() {
        eprintln!(
            "virtual-l0: exit: {threads} queue threads, {} still running; {dropped} pending submissions dropped",
            g.live
        );
    }
}

/// Submissions waiting on queue threads, process-wide.
static PENDING: AtomicU64 = AtomicU64::new(0);

/// Work that cannot run on the submitting thread: it waits for an event that is not signalled
/// yet, which the application may signal from this very thread after the call returns
/// (`zeEventHostSignal`), as is legal on hardware, where submission never blocks. Running it
/// inline would hang that thread forever. Such work, and everything submitted to the same queue or
/// immediate list after it while it is pending, runs in submission order on a thread of the queue
/// or list (started on first use, ended when the queue or list is destroyed, or at process exit:
/// [`shutdown`]).
#[derive(Default)]
pub struct Deferred {
    tx: Sender,
    pending: Arc<AtomicU64>,
}

impl Deferred {
    /// Whether deferred work is still pending (later work must then be deferred too, to stay in order).
    pub fn busy(&self) -> bool {
        self.pending.load(Ordering::Acquire) > 0
    }
    /// Runs `job` after every job submitted before it, on this queue's or list's thread.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        PENDING.fetch_add(1, Ordering::AcqRel);
        let pending = self.pending.clone();
        let job: Job = Box::new(move || {
            // A panic must neither kill the worker nor leave `pending` raised.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            pending.fetch_sub(1, Ordering::AcqRel);
            PENDING.fetch_sub(1, Ordering::AcqRel);
        });
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if tx.is_none() && !shutting_down() {
            let (s, r) = std::sync::mpsc::channel::<Job>();
            let (w, _) = workers();
            let mut g = w.lock().unwrap_or_else(|e| e.into_inner());
            static REGISTERED: std::sync::Once = std::sync::Once::new();
            // SAFETY: `at_exit` is a plain extern "C" fn of this library that never unwinds.
            REGISTERED.call_once(|| unsafe {
                libc::atexit(at_exit);
            });
            g.live += 1;
            let spawned = std::thread::Builder::new().name("vl0-queue".into()).spawn(move || {
                let _alive = WorkerAlive;
                for j in r {
                    if shutting_down() {
                        break; // the remaining jobs are dropped unexecuted
                    }
                    j();
                }
            });
            match spawned {
                Ok(_) => {
                    g.senders.push(Arc::downgrade(&self.tx));
                    *tx = Some(s);
                }
                Err(_) => g.live -= 1,
            }
        }
        let job = match tx.as_ref() {
            Some(s) => match s.send(job) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            None => job,
        };
        drop(tx);
        job(); // no worker thread (or exiting): run here (blocks, as before)
    }
}

/// Work in progress on a queue or an immediate list. Execution is synchronous on the submitting
/// thread (or [`Deferred`]), but another thread may be in the middle of it (blocked on an event, or running a
/// graph); `zeCommandQueueSynchronize` / `zeCommandListHostSynchronize` must wait for that work
/// like a real driver does, not report completion early.
#[derive(Default)]
pub struct InFlight {
    n: Mutex<u64>,
    cv: Condvar,
}

/// Leaves an [`InFlight`] section when dropped (also on unwinding).
pub struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut n = self.0.n.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        if *n == 0 {
            self.0.cv.notify_all();
        }
    }
}

impl InFlight {
    /// Marks work as started until the guard is dropped (the guard may move to another thread).
    pub fn enter(self: &Arc<Self>) -> InFlightGuard {
        *self.n.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlightGuard(self.clone())
    }
    /// Waits up to `timeout_ns` (`u64::MAX` = forever) until no work is in progress; true when idle.
    pub fn wait_idle(&self, timeout_ns: u64) -> bool {
        let mut n = self.n.lock().unwrap_or_else(|e| e.into_inner());
        let deadline =
            if timeout_ns == u64::MAX { None } else { Instant::now().checked_add(Duration::from_nanos(timeout_ns)) };
        while *n > 0 {
            match deadline {
                None => n = self.cv.wait(n).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    n = self.cv.wait_timeout(n, d - now).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
        true
    }
}

#[derive(Default)]
struct ListState {
    commands: Vec<Recorded>,
    /// The number of commands when the list was first closed since creation or reset: where the
    /// batch buffer ends. `None` while open.
    end: Option<usize>,
    /// NPU: closing made an internal command buffer (counted per context).
    command_buffer: bool,
}

impl ListState {
    /// The commands an execution runs: up to the first close (all while open).
    fn executed(&self) -> &[Recorded] {
        &self.commands[..self.end.unwrap_or(self.commands.len())]
    }
}

/// The size of the internal command buffer the NPU driver makes when it closes a list that has
/// commands (linux-npu-driver 1.32.1 `command_buffer.cpp` `VPUCommandBuffer::allocateCommandBuffer`,
/// counted by `VPUDeviceContext::getAllocatedSize`). **Inferred**: the real size follows the
/// firmware's command and descriptor sizes; one page here.
pub const NPU_COMMAND_BUFFER_BYTES: usize = 4096;

fn command_buffer_table() -> std::sync::MutexGuard<'static, HashMap<usize, usize>> {
    static T: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    T.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts one NPU command buffer in or out of `context`.
fn command_buffers(context: usize, add: bool) {
    let mut t = command_buffer_table();
    let n = t.entry(context).or_default();
    *n = if add { *n + 1 } else { n.saturating_sub(1) };
}

/// The bytes of NPU command buffers held by lists of `context`.
pub fn npu_command_buffer_bytes(context: usize) -> usize {
    command_buffer_table().get(&context).copied().unwrap_or(0) * NPU_COMMAND_BUFFER_BYTES
}

impl Drop for CommandList {
    fn drop(&mut self) {
        if self.state.get_mut().is_ok_and(|s| s.command_buffer) {
            command_buffers(self.context, false);
        }
    }
}

/// `ze_command_list_handle_t`.
pub struct CommandList {
    driver: DriverKind,
    immediate: bool,
    /// created with `ze_mutable_command_list_exp_desc_t`
    pub mutable: bool,
    /// queue group ordinal
    pub ordinal: u32,
    /// context handle it was created on
    pub context: usize,
    /// device handle it was created for
    pub device: usize,
    state: Mutex<ListState>,
    /// immediate lists: appends still running (`zeCommandListHostSynchronize` waits for them)
    inflight: Arc<InFlight>,
    /// immediate lists: appends waiting for events not yet signalled (see [`Deferred`])
    deferred: Deferred,
    /// immediate lists created with `ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS`: appends always block
    pub synchronous: bool,
    /// immediate lists: the descriptor's `ze_command_queue_priority_t` as given
    /// (`zeCommandListImmediateGetPriority`); no effect on execution (see [`CommandQueue`])
    pub priority: u32,
}

impl Kind for EventPool {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0EVPOL");
}
impl Kind for Event {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0EVENT");
}
impl Kind for Fence {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0FENCE");
}
impl Kind for CommandQueue {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0QUEUE");
}
impl Kind for CommandList {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0CMDLS");
}

/// An append call's signal event and wait list.
pub type EventsOfCall = (Option<Arc<EventState>>, Vec<Arc<EventState>>);

/// Resolves an append call's signal event and wait list; every event must belong to `driver`.
///
/// # Safety
/// `waits` is NULL or valid for `n` handles; every handle is NULL or readable (see `objects::get`).
pub unsafe fn collect_events(
    driver: DriverKind,
    signal: ze_event_handle_t,
    n: u32,
    waits: *const ze_event_handle_t,
) -> ZeResult<EventsOfCall> {
    let signal = if signal.is_null() {
        None
    } else {
        // SAFETY: per the contract.
        let e = unsafe { event_from(signal) }?;
        same_driver(driver, e)?;
        Some(e.state.clone())
    };
    let mut v = Vec::new();
    if n > 0 {
        if waits.is_null() {
            // The spec's code for `(nullptr == phWaitEvents) && (0 < numWaitEvents)`.
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        for i in 0..n as usize {
            // SAFETY: i < n, per the contract.
            let h = unsafe { *waits.add(i) };
            // SAFETY: per the contract.
            let e = unsafe { event_from(h) }?;
            same_driver(driver, e)?;
            v.push(e.state.clone());
        }
    }
    Ok((signal, v))
}

/// Whether the GPU may touch a range: a read-only or inaccessible virtual-memory range faults on
/// the GPU, which the driver reports as a lost device (**inferred** from the read-only bind
/// compute-runtime makes; the platform must never fault the process instead).
fn gpu_may(ptr: usize, len: usize, write: bool) -> bool {
    #[cfg(unix)]
    return crate::api::virtual_mem::gpu_may_access(ptr, len, write);
    #[cfg(windows)]
    return crate::api::virtual_mem_windows::gpu_may_access(ptr, len, write);
}

fn run(driver: DriverKind, cmd: &Command) -> ze_result_t {
    let faults = |dst: usize, src: Option<usize>, len: usize| {
        driver == DriverKind::Gpu && (!gpu_may(dst, len, true) || src.is_some_and(|s| !gpu_may(s, len, false)))
    };
    match cmd {
        Command::Copy { dst, src, size } if faults(*dst, Some(*src), *size) => ZE_RESULT_ERROR_DEVICE_LOST,
        Command::Fill { dst, size, .. } if faults(*dst, None, *size) => ZE_RESULT_ERROR_DEVICE_LOST,
        Command::WriteTimestamp { dst } if faults(*dst, None, 8) => ZE_RESULT_ERROR_DEVICE_LOST,
        Command::Copy { dst, src, size } => {
            if *size > 0 {
                // SAFETY: the application guarantees both ranges are valid (L0 contract); they may overlap.
                unsafe { std::ptr::copy(*src as *const u8, *dst as *mut u8, *size) };
                crate::counters::add(&format!("{}.bytes_copied", driver.prefix()), *size as u64);
            }
            ZE_RESULT_SUCCESS
        }
        Command::CopyRegion { dst, src, dst_origin, src_origin, extent, dst_pitch, src_pitch } => {
            let [w, h, d] = *extent;
            for z in 0..d {
                for y in 0..h {
                    let so = (src_origin[2] + z) * src_pitch[1] + (src_origin[1] + y) * src_pitch[0] + src_origin[0];
                    let dof = (dst_origin[2] + z) * dst_pitch[1] + (dst_origin[1] + y) * dst_pitch[0] + dst_origin[0];
                    // SAFETY: the application guarantees both regions are valid (L0 contract).
                    unsafe { std::ptr::copy((*src + so) as *const u8, (*dst + dof) as *mut u8, w) };
                }
            }
            crate::counters::add(&format!("{}.bytes_copied", driver.prefix()), (w * h * d) as u64);
            ZE_RESULT_SUCCESS
        }
        Command::Fill { dst, pattern, size } => {
            // SAFETY: the application guarantees the destination range is valid (L0 contract).
            let d = unsafe { std::slice::from_raw_parts_mut(*dst as *mut u8, *size) };
            if pattern.len() == 1 {
                d.fill(pattern[0]);
            } else {
                for (i, b) in d.iter_mut().enumerate() {
                    *b = pattern[i % pattern.len()];
                }
            }
            crate::counters::add(&format!("{}.bytes_copied", driver.prefix()), *size as u64);
            ZE_RESULT_SUCCESS
        }
        Command::Barrier => ZE_RESULT_SUCCESS,
        Command::SignalEvent(e) => {
            e.signal();
            ZE_RESULT_SUCCESS
        }
        Command::WaitEvents(es) => {
            for e in es {
                if !e.wait(u64::MAX) {
                    return ZE_RESULT_ERROR_DEVICE_LOST; // process exit (see [`shutdown`])
                }
            }
            ZE_RESULT_SUCCESS
        }
        Command::ResetEvent(e) => {
            e.reset();
            ZE_RESULT_SUCCESS
        }
        Command::WriteTimestamp { dst } => {
            // SAFETY: the application guarantees dst is valid for a u64 (L0 contract).
            unsafe { std::ptr::write_unaligned(*dst as *mut u64, now_ns()) };
            ZE_RESULT_SUCCESS
        }
        Command::GraphExecute { graph, args, profile } => graph.execute(args, profile.as_ref()),
        Command::ExecuteLists(lists) => {
            for &h in lists {
                // SAFETY: validated at append; the application keeps the lists alive until the work
                // completed (L0 rule), and a destroyed one is detected (live-handle set).
                let res = match unsafe { crate::objects::command_list_from(h as ze_command_list_handle_t) } {
                    Ok(l) => l.execute(),
                    Err(e) => e,
                };
                if res != ZE_RESULT_SUCCESS {
                    return res;
                }
            }
            ZE_RESULT_SUCCESS
        }
    }
}

/// Event states as a submission will see them: the current state, updated by the signals and
/// resets of the commands before (keyed by `EventState` address).
pub type EventView = std::collections::HashMap<usize, bool>;

impl Recorded {
    /// Whether running this command after the ones already folded into `view` would block on an
    /// event that nothing before it signals; otherwise folds this command's signals and resets in.
    fn would_block(&self, view: &mut EventView) -> bool {
        let key = |e: &Arc<EventState>| Arc::as_ptr(e) as usize;
        let extra: &[Arc<EventState>] = match &self.cmd {
            Command::WaitEvents(es) => es,
            _ => &[],
        };
        if self.waits.iter().chain(extra).any(|e| !view.get(&key(e)).copied().unwrap_or_else(|| e.is_signaled())) {
            return true;
        }
        match &self.cmd {
            Command::SignalEvent(e) => {
                view.insert(key(e), true);
            }
            Command::ResetEvent(e) => {
                view.insert(key(e), false);
            }
            Command::ExecuteLists(lists) => {
                for &h in lists {
                    // SAFETY: validated at append (see `run`).
                    if let Ok(l) = unsafe { crate::objects::command_list_from(h as ze_command_list_handle_t) } {
                        if l.would_block(view) {
                            return true;
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(e) = &self.signal {
            view.insert(key(e), true);
        }
        false
    }
}

fn run_recorded(driver: DriverKind, r: &Recorded) -> ze_result_t {
    for w in &r.waits {
        if !w.wait(u64::MAX) {
            // Only at process exit (see [`shutdown`]): the work is dropped, never run.
            return ZE_RESULT_ERROR_DEVICE_LOST;
        }
    }
    if let Some(s) = &r.signal {
        s.begin();
    }
    let res = run(driver, &r.cmd);
    if let Some(s) = &r.signal {
        s.signal();
    }
    res
}

impl CommandList {
    /// A new list of `driver`.
    pub fn new(driver: DriverKind, immediate: bool, mutable: bool, ordinal: u32) -> Self {
        CommandList {
            driver,
            immediate,
            mutable,
            ordinal,
            context: 0,
            device: 0,
            state: Mutex::new(ListState::default()),
            inflight: Arc::default(),
            deferred: Deferred::default(),
            synchronous: false,
            priority: ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
        }
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, ListState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// `zeCommandListHostSynchronize`: waits up to `timeout_ns` until no append of this immediate
    /// list is still running on another thread; true when everything appended has completed.
    pub fn wait_idle(&self, timeout_ns: u64) -> bool {
        self.inflight.wait_idle(timeout_ns)
    }
    /// Whether this is an immediate list.
    pub fn is_immediate(&self) -> bool {
        self.immediate
    }
    /// Appends a command without events.
    pub fn append(&self, cmd: Command) -> ze_result_t {
        self.append_with_events(cmd, None, Vec::new())
    }
    /// Appends a command that first waits for `waits` and signals `signal` when done. On an
    /// immediate list it runs now (on the calling thread).
    pub fn append_with_events(
        &self,
        cmd: Command,
        signal: Option<Arc<EventState>>,
        waits: Vec<Arc<EventState>>,
    ) -> ze_result_t {
        let r = Recorded { cmd, waits, signal };
        if self.immediate {
            if !self.synchronous && (self.deferred.busy() || r.would_block(&mut EventView::new())) {
                let busy = self.inflight.enter();
                let driver = self.driver;
                self.deferred.submit(move || {
                    let _busy = busy;
                    run_recorded(driver, &r);
                });
                return ZE_RESULT_SUCCESS;
            }
            let _busy = self.inflight.enter();
            let _g = self.lock(); // in order with other appends to this list
            return run_recorded(self.driver, &r);
        }
        let mut st = self.lock();
        // The NPU driver refuses appends to a closed list (`checkCommandAppendCondition`).
        if st.end.is_some() && self.driver == DriverKind::Npu {
            return ZE_RESULT_ERROR_NOT_AVAILABLE;
        }
        // The GPU driver accepts them and never runs them: compute-runtime's `close()`
        // (`cmdlist_hw.inl` `CommandListCoreFamily::close`) ends the batch buffer
        // (`programBatchBufferEnd`) and nothing checks `closedCmdList` at append time, so later
        // commands are encoded after the end, where execution never reaches, until
        // `zeCommandListReset` (`reset`: a fresh buffer, `closedCmdList = false`).
        st.commands.push(r);
        ZE_RESULT_SUCCESS
    }
    /// Whether `zeCommandListClose` was called since creation or the last reset.
    pub fn is_closed(&self) -> bool {
        self.lock().end.is_some()
    }
    /// The id the next appended command will get (its index).
    pub fn next_command_id(&self) -> u64 {
        self.lock().commands.len() as u64
    }
    /// Patches argument `arg_index` of the `GraphExecute` command `command_id`.
    pub fn update_graph_argument(&self, command_id: u64, arg_index: u32, update: ArgUpdate) -> ZeResult {
        let mut st = self.lock();
        let r = st.commands.get_mut(command_id as usize).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        match &mut r.cmd {
            Command::GraphExecute { args, .. } => {
                let slot = args.get_mut(arg_index as usize).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
                if let Some(p) = update.ptr {
                    slot.ptr = p;
                }
                slot.strides = update.strides;
                Ok(())
            }
            _ => Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        }
    }
    /// `zeCommandListClose`.
    /// A second close ends the buffer again after the later appends; execution still stops at the
    /// first end.
    pub fn close(&self) {
        let mut st = self.lock();
        if st.end.is_none() {
            st.end = Some(st.commands.len());
            if self.driver == DriverKind::Npu && !st.commands.is_empty() && !st.command_buffer {
                st.command_buffer = true;
                command_buffers(self.context, true);
            }
        }
    }
    /// `zeCommandListReset`.
    pub fn reset(&self) {
        let mut st = self.lock();
        st.commands.clear();
        st.end = None;
        if std::mem::take(&mut st.command_buffer) {
            command_buffers(self.context, false);
        }
    }
    /// Whether executing this list after what is folded into `view` would block on an event that
    /// nothing signals before; otherwise folds the list's signals and resets into `view`.
    pub fn would_block(&self, view: &mut EventView) -> bool {
        self.lock().executed().iter().any(|r| r.would_block(view))
    }
    /// Runs the recorded commands in order, up to where the list was first closed; stops at the
    /// first failure and returns it.
    pub fn execute(&self) -> ze_result_t {
        let st = self.lock();
        for r in st.executed() {
            let res = run_recorded(self.driver, r);
            if res != ZE_RESULT_SUCCESS {
                return res;
            }
        }
        ZE_RESULT_SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    struct Sum(Arc<Mutex<Vec<usize>>>);
    impl GraphExecutable for Sum {
        fn execute(&self, args: &[ArgValue], _profile: Option<&ProfileOutput>) -> ze_result_t {
            self.0.lock().unwrap().push(args.iter().map(|a| a.ptr).sum());
            ZE_RESULT_SUCCESS
        }
    }
    fn ptr(p: usize) -> ArgUpdate {
        ArgUpdate { ptr: Some(p), strides: None }
    }
    #[test]
    fn record_update_execute() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let l = CommandList::new(DriverKind::Npu, false, true, 0);
        let mut buf = [0u8; 8];
        assert_eq!(l.next_command_id(), 0);
        l.append(Command::Fill { dst: buf.as_mut_ptr() as usize, pattern: vec![1, 2], size: 5 });
        assert_eq!(l.next_command_id(), 1);
        let args = [1, 2].map(|p| ArgValue { ptr: p, strides: None }).to_vec();
        l.append(Command::GraphExecute { graph: Arc::new(Sum(seen.clone())), args, profile: None });
        l.close();
        assert_eq!(l.execute(), ZE_RESULT_SUCCESS);
        assert_eq!(buf, [1, 2, 1, 2, 1, 0, 0, 0]);
        l.update_graph_argument(1, 1, ptr(10)).unwrap();
        assert!(l.update_graph_argument(0, 0, ptr(1)).is_err());
        assert!(l.update_graph_argument(1, 2, ptr(1)).is_err());
        l.execute();
        assert_eq!(*seen.lock().unwrap(), vec![3, 11]);
    }
    #[test]
    fn event_wait_times_out() {
        let e = EventState::default();
        assert!(!e.wait(1000));
        e.signal();
        assert!(e.wait(0));
        e.reset();
        assert!(!e.is_signaled());
    }
}
