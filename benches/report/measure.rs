//! Interleaved measurement: every variant of a comparison runs in each round, in a shuffled order,
//! so that the machine's background load falls on all of them alike; medians are compared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The shuffle's state, carried from one `interleave` call to the next: the size sweep pools the
/// rounds of many calls (one per placement), and a seed fixed per call gave every call the same few
/// orders: the same variants always ran side by side, in every placement, run and profile.
static SHUFFLE: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

pub type Step<'a> = Box<dyn FnMut() -> npu_sycl_bridge::Result<()> + 'a>;

/// One variant of a comparison: a closure doing one unit of work (one inference, one wave, one copy).
pub struct Variant<'a> {
    pub name: String,
    step: Step<'a>,
    /// Wall time per call, seconds.
    pub wall: Vec<f64>,
    /// Process CPU time (every thread) per call, seconds: batch CPU time ÷ calls in the batch.
    pub cpu: Vec<f64>,
    /// Counters read around each batch (virtual platform): summed deltas, and calls counted.
    pub counters: Vec<(&'static str, u64)>,
    pub calls: u64,
    /// The median wall time of each round's batch.
    pub rounds: Vec<f64>,
}

impl<'a> Variant<'a> {
    pub fn new(name: impl Into<String>, step: impl FnMut() -> npu_sycl_bridge::Result<()> + 'a) -> Self {
        Variant {
            name: name.into(),
            step: Box::new(step),
            wall: Vec::new(),
            cpu: Vec::new(),
            counters: Vec::new(),
            calls: 0,
            rounds: Vec::new(),
        }
    }

    pub fn median(&self) -> f64 {
        median(&self.wall)
    }

    pub fn cpu_median(&self) -> f64 {
        median(&self.cpu)
    }

    /// The measurements without the closure (which borrows the buffers it measures).
    pub fn detach(self) -> Variant<'static> {
        Variant { step: Box::new(|| Ok(())), ..self }
    }

    /// Adds another run of the same variant (another placement of its buffers) to this one.
    pub fn absorb(&mut self, other: Variant<'_>) {
        debug_assert_eq!(self.name, other.name);
        self.wall.extend(other.wall);
        self.cpu.extend(other.cpu);
        self.rounds.extend(other.rounds);
        self.calls += other.calls;
        for (mine, theirs) in self.counters.iter_mut().zip(other.counters) {
            mine.1 += theirs.1;
        }
    }

    /// A counter's delta per call.
    pub fn per_call(&self, name: &str) -> f64 {
        self.counters.iter().find(|c| c.0 == name).map_or(0.0, |c| c.1 as f64 / self.calls.max(1) as f64)
    }
}

/// The ratio a ÷ b round by round (each round ran both, close in time): median, 25th and 75th
/// percentile. The spread says how far the machine's noise moves the ratio.
pub fn paired(a: &Variant<'_>, b: &Variant<'_>) -> (f64, f64, f64) {
    let mut r: Vec<f64> = a.rounds.iter().zip(&b.rounds).map(|(x, y)| x / y).collect();
    if r.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    r.sort_by(|x, y| x.partial_cmp(y).expect("no NaN"));
    let q = |f: f64| r[((r.len() - 1) as f64 * f).round() as usize];
    (median(&r), q(0.25), q(0.75))
}

pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Shuffles `items` in place (Fisher-Yates on an xorshift stream), advancing `seed`.
pub fn shuffle<T>(items: &mut [T], seed: &mut u64) {
    for i in (1..items.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        items.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

/// Runs every variant `warmup` times, then picks the calls per variant so that the whole
/// comparison takes about `budget` seconds (between `min_calls` and `max_calls` per variant), and
/// runs them in rounds: each round runs a batch of each variant, in a new order each round.
pub fn interleave(
    variants: &mut [Variant<'_>],
    budget: f64,
    min_calls: usize,
    max_calls: usize,
    counter: &dyn Fn(&str) -> u64,
    counter_names: &[&'static str],
) -> npu_sycl_bridge::Result<()> {
    let mut est = 0.0;
    for v in variants.iter_mut() {
        for _ in 0..2 {
            let t = Instant::now();
            (v.step)()?;
            est += t.elapsed().as_secs_f64();
        }
    }
    let per_call = (est / (2.0 * variants.len() as f64)).max(1e-7);
    let calls = ((budget / (per_call * variants.len() as f64)) as usize).clamp(min_calls, max_calls);
    let rounds = calls.clamp(1, 15);
    let batch = calls.div_ceil(rounds);
    for v in variants.iter_mut() {
        v.counters = counter_names.iter().map(|n| (*n, 0)).collect();
    }
    let n = variants.len();
    let mut order: Vec<usize> = (0..n).collect();
    let mut seed = SHUFFLE.load(Ordering::Relaxed);
    for _ in 0..rounds {
        // A fresh order each round: a fixed cyclic order would have each variant always follow
        // the same one, whose buffers decide what is left in the caches (several per cent at
        // 256 KiB to 1 MiB here).
        shuffle(&mut order, &mut seed);
        for &k in &order {
            let v = &mut variants[k];
            let before: Vec<u64> = counter_names.iter().map(|c| counter(c)).collect();
            let c0 = testkit::cpu_time::process_cpu_time();
            for _ in 0..batch {
                let t = Instant::now();
                (v.step)()?;
                v.wall.push(t.elapsed().as_secs_f64());
            }
            let cpu = (testkit::cpu_time::process_cpu_time() - c0).as_secs_f64() / batch as f64;
            v.rounds.push(median(&v.wall[v.wall.len() - batch..]));
            v.cpu.push(cpu);
            v.calls += batch as u64;
            for (i, c) in counter_names.iter().enumerate() {
                v.counters[i].1 += counter(c).saturating_sub(before[i]);
            }
        }
    }
    SHUFFLE.store(seed, Ordering::Relaxed);
    Ok(())
}
