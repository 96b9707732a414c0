//! `roundledger settle`: the pay calculator. Reads one round as JSON
//! (schemas/json/settle-input.schema.json, a superset of EXAMPLES.md's rounds) from a file
//! or standard input and prints the settlement as JSON
//! (schemas/json/settle-output.schema.json), with `void_hands` when a hand is void.
//!
//! `--ndjson` settles a stream: one round a line in, one result a line out, in order. A
//! refused line (blank, not JSON, a bad field, an internal error of the engine) gives an
//! error object naming the line and the field; the batch goes on.
//! Memory is bounded: one line at a time, at most `LINE_LEN_MAX` bytes.

use crate::Outcome;
use anyhow::{Context, Result};
use schemas::settle::{BatchLine, InputError, NetOutput, RoundInput, SettleOutput};
use std::io::{BufRead, BufWriter, Read, Write};
use std::path::PathBuf;

/// The longest input line `--ndjson` reads, in bytes. A round of 255 boxes with a full
/// table configuration is under 100 KB; a longer line is refused, not buffered.
pub const LINE_LEN_MAX: usize = 1 << 20;

#[derive(clap::Args)]
#[command(after_help = "\
Exit codes: 0 every round settled; 1 with --ndjson, some line refused; 2 error: the one
round refused, or reading or writing failed.

--ndjson prints one JSON object a line: {\"line\": N, \"settlement\": {...}} (or \"net\" with
--net), or {\"line\": N, \"error\": {\"field\", \"message\", \"column\"}}: output line N answers
input line N, a blank line or text that is not JSON included. A UTF-8 byte-order mark at
the start is skipped. A round the engine fails on is an error line (\"internal error\").
Every form adds
\"void_hands\" (box, clause, explanation) when a hand is void, e.g. a wrong card count
(CSP6 5.15). Amounts over 10^12 minor units are refused.")]
pub struct Args {
    /// The round as JSON (with --ndjson: one round a line); `-` or nothing reads standard
    /// input.
    file: Option<PathBuf>,
    /// Print only the net result per box and line (EXAMPLES.md's `net` shape).
    #[arg(long)]
    net: bool,
    /// Settle many rounds: NDJSON in, NDJSON out, one result a line in input order.
    #[arg(long)]
    ndjson: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    if args.ndjson {
        return run_batch(&args);
    }
    let text = match args.file.as_deref() {
        None => read_stdin()?,
        Some(p) if p.as_os_str() == "-" => read_stdin()?,
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
    };
    let input = parse_input(&text)?;
    let Settled {
        settlement,
        void_hands,
    } = settle_guarded(&input).map_err(|e| {
        let at = if e.field.is_empty() {
            String::new()
        } else {
            format!("{}: ", e.field)
        };
        anyhow::anyhow!("invalid round: {at}{}", e.message)
    })?;
    let out = if args.net {
        let net = settlement.net();
        let out = NetOutput {
            net: &net,
            void_hands: &void_hands,
        };
        serde_json::to_string_pretty(&out)?
    } else {
        let out = SettleOutput {
            settlement: &settlement,
            void_hands: &void_hands,
        };
        serde_json::to_string_pretty(&out)?
    };
    println!("{out}");
    Ok(Outcome::Clean)
}

fn read_stdin() -> Result<String> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .context("reading standard input")?;
    Ok(s)
}

/// Parses the input, naming the field and its line and column in the user's own text.
/// Accepts either a round object or EXAMPLES.md's `{"round": {...}, ...}` wrapper.
pub fn parse_input(text: &str) -> Result<RoundInput> {
    parse_round(strip_bom(text.as_bytes())).map_err(|e| {
        let at = e.line.map_or(String::new(), |l| {
            format!(" at line {l} column {}", e.error.column.unwrap_or(0))
        });
        anyhow::anyhow!(
            "invalid round: field `{}`{at}: {}",
            e.error.field,
            e.error.message
        )
    })
}

/// An input refused by the parser, located in the text it came from.
struct ParseError {
    /// The 1-based line in the text, for JSON errors.
    line: Option<u64>,
    error: InputError,
}

/// EXAMPLES.md's wrapper: the round and fields the calculator ignores (`net`, `title`).
#[derive(serde::Deserialize)]
struct Wrapped {
    round: RoundInput,
}

/// The text without a leading UTF-8 byte-order mark, which some editors write.
fn strip_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
}

/// Parses a round: the fast path first; on failure again, with the path of the field.
/// Text that is not JSON at all says so.
fn parse_round(text: &[u8]) -> Result<RoundInput, ParseError> {
    if let Ok(round) = serde_json::from_slice::<RoundInput>(text) {
        return Ok(round);
    }
    let value = serde_json::from_slice::<serde_json::Value>(text).map_err(|e| {
        let mut located = json_error(String::new(), &e);
        located.error.message = format!("not JSON: {}", located.error.message);
        located
    })?;
    let wrapped = value.get("round").is_some() && value.get("game").is_none();
    let mut de = serde_json::Deserializer::from_slice(text);
    let located = if wrapped {
        serde_path_to_error::deserialize::<_, Wrapped>(&mut de).map(|w| w.round)
    } else {
        serde_path_to_error::deserialize::<_, RoundInput>(&mut de)
    };
    let round = located.map_err(|e| json_error(e.path().to_string(), e.inner()))?;
    de.end().map_err(|e| json_error(String::new(), &e))?;
    Ok(round)
}

/// A serde_json error at `field`, its position apart from its message.
fn json_error(field: String, e: &serde_json::Error) -> ParseError {
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = e.to_string();
    let message = message
        .strip_suffix(&suffix)
        .unwrap_or(&message)
        .to_string();
    ParseError {
        line: Some(e.line() as u64),
        error: InputError {
            field: if field == "." { String::new() } else { field },
            message,
            column: Some(e.column() as u64),
        },
    }
}

/// What one batch run counted.
#[derive(Default)]
struct Counts {
    settled: u64,
    refused: u64,
}

fn run_batch(args: &Args) -> Result<Outcome> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let counts = match args.file.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            let file =
                std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
            let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
            settle_stream(&mut reader, &mut out, args.net)
                .with_context(|| format!("settling {}", p.display()))?
        }
        _ => {
            let stdin = std::io::stdin();
            let mut reader = std::io::BufReader::with_capacity(1 << 16, stdin.lock());
            settle_stream(&mut reader, &mut out, args.net).context("settling standard input")?
        }
    };
    out.flush().context("writing standard output")?;
    eprintln!(
        "rounds settled: {}, refused: {}",
        counts.settled, counts.refused
    );
    Ok(if counts.refused == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// Reads rounds a line at a time and writes a result a line, a blank line an error line:
/// output line N answers input line N. A UTF-8 byte-order mark on line 1 is skipped. Output is flushed whenever the input has nothing buffered, so a caller that
/// writes a line and waits for its answer gets it.
fn settle_stream<R: Read>(
    reader: &mut std::io::BufReader<R>,
    out: &mut impl Write,
    net: bool,
) -> std::io::Result<Counts> {
    let mut counts = Counts::default();
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut line_no: u64 = 0;
    loop {
        if reader.buffer().is_empty() {
            out.flush()?;
        }
        buf.clear();
        let limit = (LINE_LEN_MAX + 1) as u64;
        let n = reader.by_ref().take(limit).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(counts);
        }
        line_no += 1;
        let complete = buf.last() == Some(&b'\n');
        if !complete && buf.len() > LINE_LEN_MAX {
            skip_rest_of_line(reader)?;
            let error = InputError {
                field: String::new(),
                message: format!("line longer than the maximum {LINE_LEN_MAX} bytes"),
                column: None,
            };
            write_error(out, line_no, &error)?;
            counts.refused += 1;
            continue;
        }
        let text = match line_no {
            1 => strip_bom(&buf).trim_ascii(),
            _ => buf.trim_ascii(),
        };
        if text.is_empty() {
            let error = InputError {
                field: String::new(),
                message: "blank line: no round to settle".into(),
                column: None,
            };
            write_error(out, line_no, &error)?;
            counts.refused += 1;
            continue;
        }
        match settle_line(text) {
            Ok(settled) => {
                write_settled(out, line_no, &settled, net)?;
                counts.settled += 1;
            }
            Err(error) => {
                write_error(out, line_no, &error)?;
                counts.refused += 1;
            }
        }
    }
}

/// Discards input up to and including the next newline, a buffer at a time.
fn skip_rest_of_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                reader.consume(n);
            }
        }
    }
}

/// A settled line: the settlement and the hands it voids.
struct Settled {
    settlement: schemas::settle::Settlement,
    void_hands: Vec<schemas::settle::VoidHand>,
}

fn settle_line(text: &[u8]) -> Result<Settled, InputError> {
    let input = parse_round(text).map_err(|e| e.error)?;
    settle_guarded(&input)
}

/// Bounds, settlement and void hands of one round. A failed assertion in the rules engine
/// (a defect of ours) is an error for this round, not the end of the process.
fn settle_guarded(input: &RoundInput) -> Result<Settled, InputError> {
    let refused = |e: rules::SettleError| InputError {
        field: e.field,
        message: e.message,
        column: None,
    };
    rules::check_bounds(input).map_err(refused)?;
    let settled = std::panic::catch_unwind(|| {
        rules::settle(input).map(|settlement| Settled {
            settlement,
            void_hands: rules::void_hands(input),
        })
    });
    match settled {
        Ok(result) => result.map_err(refused),
        Err(payload) => Err(InputError {
            field: String::new(),
            message: format!(
                "internal error: the rules engine failed its own check ({}); please report \
                 this round",
                replayer::panic_text(payload.as_ref())
            ),
            column: None,
        }),
    }
}

fn write_settled(
    out: &mut impl Write,
    line: u64,
    settled: &Settled,
    net: bool,
) -> std::io::Result<()> {
    let net_map = net.then(|| settled.settlement.net());
    let record = BatchLine {
        line,
        settlement: (!net).then_some(&settled.settlement),
        net: net_map.as_ref(),
        void_hands: &settled.void_hands,
        error: None,
    };
    serde_json::to_writer(&mut *out, &record)?;
    out.write_all(b"\n")
}

fn write_error(out: &mut impl Write, line: u64, error: &InputError) -> std::io::Result<()> {
    let record = BatchLine {
        line,
        settlement: None,
        net: None,
        void_hands: &[],
        error: Some(error),
    };
    serde_json::to_writer(&mut *out, &record)?;
    out.write_all(b"\n")
}
