//! Work over many tables at once: an audit replays them (`replayer`), `verify` recomputes
//! their chains (`ledger`). A table's chain is handled by one thread in sequence order, but
//! tables are independent: a chain never spans two tables, a round never spans two (linked
//! jackpot pools are replayed separately, in the House's order: `replayer::replay_pool`).
//! So whole tables are spread over the machine's cores. Here, beside the types every crate
//! shares, so that the pure replayer and the ledger use the same one.
//!
//! Determinism is kept by construction: each table's result lands in the slot of its
//! input position, and callers merge slots in input order, so the output does not depend
//! on which thread finished first. Plain `std::thread::scope`: no runtime, no I/O here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Most threads `map_tables` starts, whatever it is asked for.
pub const MAX_WORKERS: usize = 64;

/// How many workers to use on this machine: one per core, within `MAX_WORKERS`.
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, MAX_WORKERS)
}

/// Calls `f` on every item from up to `workers` threads (items are taken one at a time,
/// so a long table does not hold up the others) and returns the results in input order.
/// `workers <= 1` runs on the calling thread.
pub fn map_tables<T, R, F>(items: &[T], workers: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let workers = workers.clamp(1, MAX_WORKERS).min(items.len().max(1));
    if workers == 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every slot is filled: each index below len is taken exactly once")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_input_order_whatever_the_worker_count() {
        let items: Vec<u64> = (0..257).collect();
        // Uneven work, so threads finish out of order.
        let work = |x: &u64| (0..(x % 7) * 1000).fold(*x, |a, b| a.wrapping_mul(31) ^ b);
        let serial = map_tables(&items, 1, work);
        for workers in [2, 3, 8, 1000] {
            assert_eq!(
                map_tables(&items, workers, work),
                serial,
                "{workers} workers"
            );
        }
        assert!(map_tables(&[] as &[u64], 4, work).is_empty());
    }
}
