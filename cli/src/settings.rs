//! `serve`'s settings from a TOML file (`--settings FILE`) and from the environment.
//!
//! Every flag of `serve` has a key of the same name in the file (`batch = 512`,
//! `admin-key = ["<hex>"]`, `no-ingest = true`) and an environment variable: `ROUNDLEDGER_`
//! and the name in capitals, `-` as `_` (`ROUNDLEDGER_BATCH=512`; a repeatable flag takes a
//! comma-separated list; a switch `true` or `false`). A flag given wins over the
//! environment, which wins over the file, which wins over the default. An unknown key,
//! or a value of the wrong shape, is refused with the key's name.
//!
//! How: the values not given as flags are added to the command line as flags, and clap
//! parses the whole once more. So the file and the environment are checked exactly as
//! flags are, by the same parser.

use anyhow::{anyhow, bail, Context, Result};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

/// The subcommand that takes settings.
const SUBCOMMAND: &str = "serve";
/// The flag naming the settings file; it has no key of its own in the file.
const SETTINGS_FLAG: &str = "settings";
/// Largest settings file read.
pub const SETTINGS_BYTES_MAX: u64 = 1 << 20;

/// The command line, with `serve`'s settings from the environment and its file added.
/// Exits as clap does on `--help` or a bad flag.
pub fn parse<C: CommandFactory + FromArgMatches>() -> Result<C> {
    let mut argv: Vec<OsString> = std::env::args_os().collect();
    // A first, lenient pass only finds which flags were given: a required flag may come
    // from the settings.
    let first = C::command()
        .ignore_errors(true)
        .try_get_matches_from(argv.clone());
    if let Ok(matches) = first {
        if let Some((SUBCOMMAND, sub)) = matches.subcommand() {
            let cmd = C::command();
            let serve = cmd
                .find_subcommand(SUBCOMMAND)
                .ok_or_else(|| anyhow!("no {SUBCOMMAND} subcommand"))?;
            let extra = extra_flags(serve, sub, &|name| std::env::var(name).ok())
                .context("serve's settings (ROUNDLEDGER_* variables or the --settings file)")?;
            argv.extend(extra.into_iter().map(OsString::from));
        }
    }
    let matches = C::command().get_matches_from(argv);
    C::from_arg_matches(&matches).map_err(|e| anyhow!("{e}"))
}

/// The environment variable of a flag: `ROUNDLEDGER_` and its name in capitals.
pub fn env_name(flag: &str) -> String {
    format!(
        "ROUNDLEDGER_{}",
        flag.to_ascii_uppercase().replace('-', "_")
    )
}

/// A setting's value, from the environment (text) or the file (TOML).
enum Value {
    Env(String),
    File(toml::Value),
}

/// The flags to add for the settings not given on the command line: from the
/// environment first, then from the file for keys the environment did not set.
fn extra_flags(
    cmd: &clap::Command,
    sub: &ArgMatches,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>> {
    let mut extra = Vec::new();
    let mut set = BTreeSet::new();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if sub.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
            set.insert(long.to_string());
        } else if let Some(v) = env(&env_name(long)) {
            push(&mut extra, arg, long, Value::Env(v)).with_context(|| env_name(long))?;
            set.insert(long.to_string());
        }
    }
    let file = sub
        .get_one::<PathBuf>(SETTINGS_FLAG)
        .cloned()
        .or_else(|| env(&env_name(SETTINGS_FLAG)).map(PathBuf::from));
    let Some(path) = file else { return Ok(extra) };
    let table = read(&path)?;
    for (key, value) in table {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && key != SETTINGS_FLAG && key != "help")
            .ok_or_else(|| unknown(cmd, &path, &key))?;
        if !set.contains(&key) {
            push(&mut extra, arg, &key, Value::File(value))
                .with_context(|| format!("{}: key {key:?}", path.display()))?;
        }
    }
    Ok(extra)
}

/// The settings file's table, read with a bound on its size.
pub fn read(path: &std::path::Path) -> Result<toml::Table> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).with_context(|| format!("--settings {}", path.display()))?;
    let mut text = String::new();
    file.take(SETTINGS_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    if text.len() as u64 > SETTINGS_BYTES_MAX {
        bail!("{}: larger than {SETTINGS_BYTES_MAX} bytes", path.display());
    }
    text.parse::<toml::Table>()
        .with_context(|| format!("{}: not TOML", path.display()))
}

fn unknown(cmd: &clap::Command, path: &std::path::Path, key: &str) -> anyhow::Error {
    let keys: Vec<&str> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| *l != SETTINGS_FLAG && *l != "help")
        .collect();
    anyhow!(
        "{}: unknown key {key:?}; the keys are the flags of serve: {}",
        path.display(),
        keys.join(", ")
    )
}

/// Adds `value` as flags `--long=...`: a switch only when true, a repeatable flag once per
/// item.
fn push(extra: &mut Vec<String>, arg: &clap::Arg, long: &str, value: Value) -> Result<()> {
    match arg.get_action() {
        ArgAction::SetTrue => {
            if switch(value)? {
                extra.push(format!("--{long}"));
            }
        }
        ArgAction::Append => {
            for item in items(value)? {
                extra.push(format!("--{long}={item}"));
            }
        }
        _ => extra.push(format!("--{long}={}", scalar(value)?)),
    }
    Ok(())
}

fn switch(value: Value) -> Result<bool> {
    match value {
        Value::File(toml::Value::Boolean(b)) => Ok(b),
        Value::Env(s) if s == "true" || s == "1" => Ok(true),
        Value::Env(s) if s == "false" || s == "0" || s.is_empty() => Ok(false),
        Value::Env(s) => bail!("{s:?}: a switch is true or false"),
        Value::File(v) => bail!("a {}: a switch is true or false", v.type_str()),
    }
}

fn items(value: Value) -> Result<Vec<String>> {
    match value {
        Value::Env(s) => Ok(s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()),
        Value::File(toml::Value::Array(a)) => {
            a.into_iter().map(|v| scalar(Value::File(v))).collect()
        }
        Value::File(v) => Ok(vec![scalar(Value::File(v))?]),
    }
}

fn scalar(value: Value) -> Result<String> {
    match value {
        Value::Env(s) => Ok(s),
        Value::File(toml::Value::String(s)) => Ok(s),
        Value::File(toml::Value::Integer(i)) => Ok(i.to_string()),
        Value::File(toml::Value::Float(f)) => Ok(f.to_string()),
        Value::File(toml::Value::Boolean(b)) => Ok(b.to_string()),
        Value::File(v) => bail!("a {}: expected a string, number or boolean", v.type_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        command: Cmd,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Cmd {
        Serve {
            #[arg(long, default_value_t = 512)]
            batch: usize,
            #[arg(long, default_value = "a")]
            nats: String,
            #[arg(long = "admin-key")]
            admin_keys: Vec<String>,
            #[arg(long)]
            no_ingest: bool,
            #[arg(long)]
            settings: Option<PathBuf>,
        },
    }

    fn flags(argv: &[&str], env: &[(&str, &str)], file: &str) -> Result<Vec<String>> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("serve.toml");
        std::fs::write(&path, file).expect("write");
        let mut all = vec!["x", "serve", "--settings", path.to_str().expect("utf-8")];
        all.extend(argv);
        let matches = Cli::command().get_matches_from(all);
        let (_, sub) = matches.subcommand().expect("serve");
        let cmd = Cli::command();
        let serve = cmd.find_subcommand("serve").expect("serve");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        extra_flags(serve, sub, &lookup)
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file() {
        let file = "batch = 64\nnats = \"file\"\nadmin-key = [\"k1\", \"k2\"]\nno-ingest = true\n";
        let got = flags(&["--batch", "8"], &[("ROUNDLEDGER_NATS", "env")], file).expect("ok");
        assert_eq!(
            got,
            [
                "--nats=env",
                "--admin-key=k1",
                "--admin-key=k2",
                "--no-ingest"
            ],
            "batch from the flag, nats from the environment, the rest from the file"
        );
        let got = flags(
            &[],
            &[("ROUNDLEDGER_NO_INGEST", "false")],
            "no-ingest = true",
        )
        .expect("ok");
        assert!(
            got.is_empty(),
            "the environment's false beats the file's true: {got:?}"
        );
    }

    #[test]
    fn unknown_keys_and_wrong_shapes_are_refused_by_name() {
        let e = flags(&[], &[], "batchh = 3").expect_err("unknown key");
        assert!(format!("{e:#}").contains("unknown key \"batchh\""), "{e:#}");
        assert!(format!("{e:#}").contains("batch, nats, admin-key"), "{e:#}");
        let e = flags(&[], &[], "no-ingest = \"yes\"").expect_err("not a switch");
        assert!(format!("{e:#}").contains("no-ingest"), "{e:#}");
        let e = flags(&[], &[], "nats = [\"a\"]").expect_err("a list for one value");
        assert!(format!("{e:#}").contains("nats"), "{e:#}");
        assert!(
            flags(&[], &[], "settings = \"x\"").is_err(),
            "no key names the file itself"
        );
        assert!(flags(&[], &[], "batch = ").is_err(), "not TOML");
    }

    /// The example in the repository is a settings file `serve` takes, every key of it.
    #[test]
    fn the_example_settings_file_is_accepted() {
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../serve.example.toml");
        let argv = ["roundledger", "serve", "--settings", example];
        let cmd = crate::Cli::command();
        let matches = cmd.clone().ignore_errors(true).get_matches_from(argv);
        let (_, sub) = matches.subcommand().expect("serve");
        let serve = cmd.find_subcommand("serve").expect("serve");
        let extra = extra_flags(serve, sub, &|_| None).expect("every key known");
        let keys = read(Path::new(example)).expect("TOML").len();
        assert!(
            extra.len() >= keys - 4,
            "switches set false add no flag: {extra:?}"
        );
        let mut all: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        all.extend(extra);
        let parsed = crate::Cli::command().try_get_matches_from(all);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
