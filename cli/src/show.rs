//! What several commands print the same way: money with its sign, a verdict's name,
//! and the progress bar of a long replay.

use schemas::report::Verdict;

/// `+12.50`, `-3.00`, `0.00`: money with its sign, for differences.
pub fn signed(m: schemas::Money) -> String {
    if m.0 > 0 {
        format!("+{m}")
    } else {
        m.to_string()
    }
}

/// A verdict's name as reports print it: `clean`, `irregular`, `disputed`, `void`.
pub fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Clean => "clean",
        Verdict::Irregular => "irregular",
        Verdict::Disputed => "disputed",
        Verdict::Void => "void",
    }
}

/// A progress bar on standard error, hidden when `hidden` or not on a terminal.
pub fn progress_bar(hidden: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if hidden || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {pos} events replayed ({per_sec}) {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar
}
