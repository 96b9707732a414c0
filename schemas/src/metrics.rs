//! The Prometheus text exposition format, version 0.0.4, that `GET /metrics` serves:
//! family headers, samples with escaped labels, and a histogram of fixed buckets.
//!
//! Invariants: pure (no I/O, no clock); a family's samples follow its one header; label
//! values are escaped, so no input can end a line or a label early. Durations are
//! counted in nanoseconds and shown in seconds, as Prometheus names them.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// The `Content-Type` of a scrape's answer.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Most buckets a histogram has (its `+Inf` bucket not counted).
pub const BUCKETS_MAX: usize = 32;

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value that only grows (`_total`).
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Counts per bucket, with a sum and a count.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Writes a family's `# HELP` and `# TYPE` lines.
pub fn family(out: &mut String, name: &str, kind: Kind, help: &str) {
    debug_assert!(valid_name(name), "metric name {name:?}");
    let help = help.replace('\\', "\\\\").replace('\n', "\\n");
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {}", kind.as_str());
}

/// Writes one sample line: `name{label="value",...} value`.
pub fn sample(
    out: &mut String,
    name: &str,
    labels: &[(&str, &str)],
    value: impl std::fmt::Display,
) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// A label value as the format writes it: backslash, double quote and newline escaped.
pub fn escape(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Whether `name` is a valid metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Seconds from nanoseconds, for a sample's value.
pub fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A histogram of durations over fixed upper bounds (ns), shared between threads: each
/// observation is three relaxed atomic adds.
#[derive(Debug)]
pub struct Histogram {
    bounds_ns: &'static [u64],
    /// Observations at or below each bound (not cumulative), then the rest.
    counts: Vec<AtomicU64>,
    sum_ns: AtomicU64,
}

impl Histogram {
    /// A histogram over `bounds_ns`, which must rise strictly and number at most
    /// `BUCKETS_MAX`.
    pub fn new(bounds_ns: &'static [u64]) -> Histogram {
        assert!(
            bounds_ns.len() <= BUCKETS_MAX,
            "at most {BUCKETS_MAX} buckets"
        );
        assert!(bounds_ns.windows(2).all(|w| w[0] < w[1]), "bounds rise");
        Histogram {
            bounds_ns,
            counts: (0..=bounds_ns.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Counts one duration.
    pub fn observe_ns(&self, ns: u64) {
        let i = self.bounds_ns.partition_point(|b| *b < ns);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Writes the family: cumulative `_bucket` lines in seconds, `_sum` and `_count`.
    pub fn render(&self, out: &mut String, name: &str, help: &str) {
        family(out, name, Kind::Histogram, help);
        let bucket = format!("{name}_bucket");
        let mut cumulative = 0u64;
        for (i, bound) in self.bounds_ns.iter().enumerate() {
            cumulative += self.counts[i].load(Ordering::Relaxed);
            let le = seconds(*bound).to_string();
            sample(out, &bucket, &[("le", &le)], cumulative);
        }
        cumulative += self.counts[self.bounds_ns.len()].load(Ordering::Relaxed);
        sample(out, &bucket, &[("le", "+Inf")], cumulative);
        let sum = seconds(self.sum_ns.load(Ordering::Relaxed));
        sample(out, &format!("{name}_sum"), &[], sum);
        sample(out, &format!("{name}_count"), &[], cumulative);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_lines_stay_whole() {
        let mut out = String::new();
        family(&mut out, "x_total", Kind::Counter, "a\nb");
        sample(&mut out, "x_total", &[("t", "a\"b\\c\nd")], 3);
        assert_eq!(
            out,
            "# HELP x_total a\\nb\n# TYPE x_total counter\nx_total{t=\"a\\\"b\\\\c\\nd\"} 3\n"
        );
        assert!(valid_name("roundledger_ingest_messages_total"));
        assert!(!valid_name("9x") && !valid_name("a-b") && !valid_name(""));
    }

    #[test]
    fn a_histogram_counts_each_observation_in_its_bucket_cumulatively() {
        static BOUNDS: [u64; 2] = [1_000_000, 10_000_000];
        let h = Histogram::new(&BOUNDS);
        for ns in [500_000, 1_000_000, 2_000_000, 20_000_000] {
            h.observe_ns(ns);
        }
        assert_eq!(h.count(), 4);
        let mut out = String::new();
        h.render(&mut out, "f_seconds", "flush");
        assert!(out.contains("f_seconds_bucket{le=\"0.001\"} 2\n"), "{out}");
        assert!(out.contains("f_seconds_bucket{le=\"0.01\"} 3\n"), "{out}");
        assert!(out.contains("f_seconds_bucket{le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("f_seconds_sum 0.0235\n"), "{out}");
        assert!(out.contains("f_seconds_count 4\n"), "{out}");
    }
}
