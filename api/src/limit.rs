//! The rate limit on guessing tokens: each client address may fail authentication (a 401:
//! a missing or unknown token) `FAILURES_PER_WINDOW_MAX` times a minute; after that its
//! requests without a valid token get 429 until the minute ends. A 403 or a 400 is not a
//! failure, and a request with a token the server accepts is never checked (the guard in
//! `routes`): behind a proxy or NAT a whole desk shares one address, and one person's
//! typos or an attacker's guesses must not lock the others out. Failures are counted per
//! address, not per token: a guesser sends a fresh token each time. The first 429 of a
//! minute is audited as usual;
//! the rest are counted and audited as one entry once the minute has ended, so a flood
//! of bad requests adds two audit entries a minute per client, not one per request.
//!
//! A request without a client address (an in-process caller, not a connection) is not
//! limited. `serve --failures-per-minute` changes the limit, up to
//! `FAILURES_PER_WINDOW_LIMIT`: a fuzzer's negative cases fail on purpose.
//!
//! Invariants: memory is bounded (`CLIENTS_MAX` addresses; past it, new addresses share
//! one bucket); a valid token is never limited by others' failures; the clock
//! is the server's (`AppState::clock`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Failing requests a client may make in one window, by default.
pub const FAILURES_PER_WINDOW_MAX: u32 = 60;
/// The highest limit `Limiter::set_failures_max` takes.
pub const FAILURES_PER_WINDOW_LIMIT: u32 = 1_000_000;
/// The window: one minute.
pub const WINDOW_NS: i64 = 60_000_000_000;
/// Most client addresses tracked at once.
pub const CLIENTS_MAX: usize = 10_000;

/// One client's window.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    start_ns: i64,
    failures: u32,
    /// 429s answered this window beyond the first (audited later, as one entry).
    suppressed: u64,
}

/// Refusals not yet audited: a client, its window's start, and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppressed {
    /// The client's address, or `(other clients)` for the bucket shared past `CLIENTS_MAX`.
    pub client: String,
    /// Start of the window, UTC nanoseconds by the server's clock.
    pub window_start_ns: i64,
    /// 429s answered in the window after its first, which was audited alone.
    pub refused: u64,
}

/// What the limiter says of a request before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Under the limit, or not limited: the request runs.
    Pass,
    /// Over the limit: answer 429, and audit it (the window's first 429).
    LimitedAudited {
        /// Seconds until the window ends, rounded up (`Retry-After`).
        retry_after_s: i64,
    },
    /// Over the limit: answer 429, counted for a later aggregate entry.
    LimitedCounted {
        /// Seconds until the window ends, rounded up (`Retry-After`).
        retry_after_s: i64,
    },
}

/// Failure counts per client address.
#[derive(Debug)]
pub struct Limiter {
    windows: Mutex<BTreeMap<Option<IpAddr>, Window>>,
    /// Failures a client may make in one window.
    failures_max: AtomicU32,
}

impl Default for Limiter {
    fn default() -> Limiter {
        Limiter {
            windows: Mutex::default(),
            failures_max: AtomicU32::new(FAILURES_PER_WINDOW_MAX),
        }
    }
}

impl Limiter {
    /// Sets the failures a client may make in one window: from 1 to
    /// `FAILURES_PER_WINDOW_LIMIT`.
    pub fn set_failures_max(&self, n: u32) -> Result<(), String> {
        if !(1..=FAILURES_PER_WINDOW_LIMIT).contains(&n) {
            return Err(format!(
                "failures per minute {n}: from 1 to {FAILURES_PER_WINDOW_LIMIT}"
            ));
        }
        self.failures_max.store(n, Ordering::Relaxed);
        Ok(())
    }

    /// Judges a request from `client` at `now_ns`. Call `ended` first, so an ended
    /// window's refusals are taken before a new window starts.
    pub fn check(&self, client: Option<IpAddr>, now_ns: i64) -> Verdict {
        if client.is_none() {
            return Verdict::Pass;
        }
        let mut w = self.lock();
        let key = bucket(&w, client);
        let Some(win) = w.get_mut(&key) else {
            return Verdict::Pass;
        };
        if now_ns - win.start_ns >= WINDOW_NS
            || win.failures < self.failures_max.load(Ordering::Relaxed)
        {
            return Verdict::Pass;
        }
        let left_ns = win.start_ns + WINDOW_NS - now_ns;
        let retry_after_s = (left_ns + 999_999_999) / 1_000_000_000;
        win.suppressed += 1;
        if win.suppressed == 1 {
            Verdict::LimitedAudited { retry_after_s }
        } else {
            Verdict::LimitedCounted { retry_after_s }
        }
    }

    /// Counts a failed authentication (401) of `client`.
    pub fn failed(&self, client: Option<IpAddr>, now_ns: i64) {
        if client.is_none() {
            return;
        }
        let mut w = self.lock();
        let key = bucket(&w, client);
        let fresh = Window {
            start_ns: now_ns,
            ..Window::default()
        };
        let win = w.entry(key).or_insert(fresh);
        if now_ns - win.start_ns >= WINDOW_NS {
            *win = Window {
                start_ns: now_ns,
                ..Window::default()
            };
        }
        win.failures = win.failures.saturating_add(1);
        assert!(
            w.len() <= CLIENTS_MAX + 1,
            "addresses past the bound share one bucket"
        );
    }

    /// Takes the counted refusals of windows that have ended, and forgets those windows.
    pub fn ended(&self, now_ns: i64) -> Vec<Suppressed> {
        let mut w = self.lock();
        let mut out = Vec::new();
        w.retain(|client, win| {
            if now_ns - win.start_ns < WINDOW_NS {
                return true;
            }
            if win.suppressed > 1 {
                out.push(Suppressed {
                    client: client.map_or_else(|| "(other clients)".into(), |c| c.to_string()),
                    window_start_ns: win.start_ns,
                    refused: win.suppressed - 1,
                });
            }
            false
        });
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Option<IpAddr>, Window>> {
        self.windows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The bucket of `client`: its own, or the shared one (`None`) once `CLIENTS_MAX` are
/// tracked.
fn bucket(w: &BTreeMap<Option<IpAddr>, Window>, client: Option<IpAddr>) -> Option<IpAddr> {
    if w.contains_key(&client) || w.len() < CLIENTS_MAX {
        client
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn a_client_past_its_failures_is_limited_until_the_window_ends() {
        let l = Limiter::default();
        let (a, b) = (
            Some("10.0.0.1".parse().unwrap()),
            Some("10.0.0.2".parse().unwrap()),
        );
        for _ in 0..FAILURES_PER_WINDOW_MAX {
            assert_eq!(l.check(a, 5 * S), Verdict::Pass);
            l.failed(a, 5 * S);
        }
        assert_eq!(
            l.check(a, 6 * S),
            Verdict::LimitedAudited { retry_after_s: 59 }
        );
        for _ in 0..500 {
            assert!(matches!(l.check(a, 7 * S), Verdict::LimitedCounted { .. }));
        }
        assert_eq!(
            l.check(b, 7 * S),
            Verdict::Pass,
            "another client is not limited"
        );
        assert!(l.ended(30 * S).is_empty(), "the window has not ended");
        let ended = l.ended(65 * S);
        assert_eq!(ended.len(), 1);
        assert_eq!(
            (ended[0].client.as_str(), ended[0].refused),
            ("10.0.0.1", 500)
        );
        assert_eq!(l.check(a, 66 * S), Verdict::Pass, "a new window");
    }

    #[test]
    fn clients_past_the_bound_share_one_bucket() {
        let l = Limiter::default();
        for i in 0..CLIENTS_MAX as u32 {
            l.failed(Some(IpAddr::from(i.to_be_bytes())), S);
        }
        let late = Some(IpAddr::from([250, 0, 0, 1]));
        for _ in 0..FAILURES_PER_WINDOW_MAX {
            l.failed(late, S);
        }
        let other = Some(IpAddr::from([250, 0, 0, 2]));
        assert!(matches!(l.check(other, S), Verdict::LimitedAudited { .. }));
        assert_eq!(l.lock().len(), CLIENTS_MAX + 1);
    }
}
