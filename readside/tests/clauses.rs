//! The clause table (`readside/clauses.json`) against the seed rule sets: it is exactly what
//! extracting the cited clauses from the seeds gives today
//! (`BLESS=1 cargo test -p readside --test clauses` rewrites it), and every finding code's
//! clause has wording that appears verbatim in its seed file. The seeds are found at
//! `$ROUNDLEDGER_SEEDS`, else `../shared/seeds`; without them these checks say they are
//! skipped and pass, and only the checks of the table itself run.

use readside::clauses::{ClauseFile, ClauseWording};
use schemas::findings::TABLE;
use schemas::RuleSet;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The seeds directory: `$ROUNDLEDGER_SEEDS` (relative to the workspace root) if set,
/// else `../shared/seeds` beside the workspace. None when it is not a directory, even
/// when set explicitly, so `ROUNDLEDGER_SEEDS=/nonexistent` runs the tests without seeds.
fn seeds() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = match std::env::var_os("ROUNDLEDGER_SEEDS").filter(|d| !d.is_empty()) {
        Some(d) => root.join(d),
        None => root.join("../shared/seeds"),
    };
    dir.is_dir().then_some(dir)
}

/// Says on stderr, past the test harness's capture, what did not run.
fn skipped(what: &str) {
    let line = format!("SKIPPED (no ../shared/seeds or $ROUNDLEDGER_SEEDS): {what}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn read(seeds: &Path, name: &str) -> String {
    let p = seeds.join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Rule set -> its seed file, from the table in seeds/README.md (`| file | name | CODE |`).
fn seed_files(seeds: &Path) -> BTreeMap<RuleSet, String> {
    let mut out = BTreeMap::new();
    for line in read(seeds, "README.md").lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if let [_, file, _, code, ..] = cells.as_slice() {
            if let (true, Some(rs)) = (file.ends_with(".txt"), RuleSet::from_code(code)) {
                out.insert(rs, file.to_string());
            }
        }
    }
    assert_eq!(
        out.len(),
        RuleSet::ALL.len(),
        "seeds/README.md names a file per rule set"
    );
    out
}

/// What "verbatim" compares: whitespace runs collapsed, markdown emphasis dropped.
fn normalize(s: &str) -> String {
    s.replace("**", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The clause number a line starts with ("5.8.2", "1.1.2." -> "1.1.2"), after indentation
/// and a list dash: digits, at least one inner dot, then whitespace.
fn clause_number(line: &str) -> Option<String> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").unwrap_or(t).trim_start();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(end);
    let num = num.strip_suffix('.').unwrap_or(num);
    let parts: Vec<&str> = num.split('.').collect();
    let well_formed = parts.len() >= 2 && parts.iter().all(|p| !p.is_empty());
    (well_formed && rest.starts_with(char::is_whitespace)).then(|| num.to_string())
}

/// "5. Irregularities", "Appendix A": ends the clause before it.
fn is_section_break(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
    let section = digits > 0
        && t[digits..].starts_with('.')
        && t[digits + 1..].starts_with(char::is_whitespace)
        && t[digits + 1..]
            .trim_start()
            .starts_with(char::is_alphabetic);
    section || t.starts_with("Appendix")
}

/// A numbered clause's own lines: from its heading to the next heading or section break.
struct Block {
    number: String,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if let Some(number) = clause_number(line) {
            let t = line.trim_start();
            let t = t.strip_prefix("- ").unwrap_or(t);
            out.push(Block {
                number,
                lines: vec![t.to_string()],
            });
            open = true;
        } else if is_section_break(line) {
            open = false;
        } else if open {
            if let Some(b) = out.last_mut() {
                b.lines.push(line.to_string());
            }
        }
    }
    out
}

/// Splits a block's lines into (own text, closing words of its parent): the closing words
/// are a paragraph after the last sub-clause that starts in lower case after a paragraph
/// ending in a comma ("..., \n\nthe current Round of play shall be Voided, ...").
fn split_closing(lines: &[String]) -> (String, Option<String>) {
    let mut paragraphs: Vec<String> = vec![String::new()];
    for l in lines {
        if l.trim().is_empty() {
            if !paragraphs.last().is_some_and(|p| p.is_empty()) {
                paragraphs.push(String::new());
            }
        } else if let Some(p) = paragraphs.last_mut() {
            p.push(' ');
            p.push_str(l);
        }
    }
    let paragraphs: Vec<String> = paragraphs
        .into_iter()
        .map(|p| normalize(&p))
        .filter(|p| !p.is_empty())
        .collect();
    let at = (1..paragraphs.len()).find(|&i| {
        paragraphs[i - 1].ends_with(',') && paragraphs[i].starts_with(|c: char| c.is_lowercase())
    });
    match at {
        Some(i) => (paragraphs[..i].join(" "), Some(paragraphs[i..].join(" "))),
        None => (paragraphs.join(" "), None),
    }
}

fn block<'a>(blocks: &'a [Block], number: &str, file: &str) -> Option<&'a Block> {
    let found: Vec<&Block> = blocks.iter().filter(|b| b.number == number).collect();
    assert!(
        found.len() <= 1,
        "{file}: clause {number} is numbered twice"
    );
    found.first().copied()
}

/// A numbered clause's wording: the parent's opening words (for a sub-clause of a
/// sub-section), the clause, its own sub-clauses, the parent's closing words.
fn numbered(text: &str, file: &str, clause: &str) -> Vec<String> {
    let blocks = blocks(text);
    let Some(own) = block(&blocks, clause, file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let parent = clause.rsplit_once('.').map(|(p, _)| p.to_string());
    let parent = parent.filter(|p| p.contains('.'));
    let siblings: Vec<&Block> = match &parent {
        Some(p) => blocks
            .iter()
            .filter(|b| b.number.rsplit_once('.').map(|(q, _)| q) == Some(p.as_str()))
            .collect(),
        None => Vec::new(),
    };
    let closing = siblings
        .last()
        .and_then(|last| split_closing(&last.lines).1);
    if let Some(p) = parent.as_deref().and_then(|p| block(&blocks, p, file)) {
        out.push(split_closing(&p.lines).0);
    }
    out.push(split_closing(&own.lines).0);
    let prefix = format!("{clause}.");
    for b in blocks.iter().filter(|b| b.number.starts_with(&prefix)) {
        out.push(normalize(&b.lines.join("\n")));
    }
    out.extend(closing);
    out
}

/// RULES-NOTES point `n`: "24. Where the rules leave ..." to the next point or heading.
fn rules_note(text: &str, n: &str) -> Vec<String> {
    let head = format!("{n}. ");
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines() {
        if lines.is_empty() {
            if line.starts_with(&head) {
                lines.push(line);
            }
        } else if line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
            lines.push(line);
        } else {
            break;
        }
    }
    if lines.is_empty() {
        Vec::new()
    } else {
        vec![normalize(&lines.join("\n"))]
    }
}

/// CS51 How To Play bullet `n` (from 1).
fn how_to_play(text: &str, n: usize) -> Vec<String> {
    let section = text
        .split_once("How To Play")
        .map(|(_, rest)| rest.split("Hand Rankings").next().unwrap_or(rest))
        .unwrap_or("");
    section
        .lines()
        .filter_map(|l| l.trim().strip_prefix('•'))
        .nth(n.saturating_sub(1))
        .map(|b| vec![normalize(b)])
        .unwrap_or_default()
}

/// The table as the seeds give it today, for every clause a finding code cites.
fn extract(seeds: &Path) -> ClauseFile {
    let files = seed_files(seeds);
    let notes = read(seeds, "RULES-NOTES.md");
    let mut texts: BTreeMap<RuleSet, String> = BTreeMap::new();
    for (rs, f) in &files {
        texts.insert(*rs, read(seeds, f));
    }
    let cited: BTreeSet<(RuleSet, &str)> = TABLE.iter().map(|r| (r.rule_set, r.clause)).collect();
    let mut clauses = Vec::new();
    for (rs, clause) in cited {
        let (source, wording) = if let Some(n) = clause.strip_prefix("RN") {
            ("RULES-NOTES.md".to_string(), rules_note(&notes, n))
        } else if let Some(n) = clause.strip_prefix("HTP") {
            let n: usize = n.parse().unwrap();
            (files[&rs].clone(), how_to_play(&texts[&rs], n))
        } else {
            (
                files[&rs].clone(),
                numbered(&texts[&rs], &files[&rs], clause),
            )
        };
        clauses.push(ClauseWording {
            rule_set: rs,
            clause: clause.to_string(),
            source,
            wording,
        });
    }
    ClauseFile {
        about: "Generated from ../shared/seeds by `BLESS=1 cargo test -p readside --test clauses` \
                (do not edit): the wording of every clause a finding code cites \
                (schemas::findings), as verbatim excerpts of the seed file (whitespace runs \
                collapsed, markdown ** dropped). See readside/src/clauses.rs."
            .to_string(),
        clauses,
    }
}

#[test]
fn the_clause_table_is_what_the_seed_files_say() {
    let Some(seeds) = seeds() else {
        return skipped(
            "readside/clauses.json not compared with the clauses extracted from the seeds",
        );
    };
    let fresh = serde_json::to_string_pretty(&extract(&seeds)).unwrap() + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("clauses.json");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    assert!(
        readside::clauses::CLAUSES_JSON == fresh,
        "readside/clauses.json differs from the clauses extracted from {}; \
         rerun with BLESS=1 and review the diff",
        seeds.display()
    );
}

#[test]
fn every_finding_code_has_wording_under_its_own_number() {
    let file: ClauseFile = serde_json::from_str(readside::clauses::CLAUSES_JSON).unwrap();
    let mut seen = BTreeSet::new();
    for c in &file.clauses {
        assert!(
            seen.insert((c.rule_set, c.clause.clone())),
            "{:?} {} twice",
            c.rule_set,
            c.clause
        );
    }
    for row in TABLE {
        let wording = readside::clauses::wording_of_code(row.code);
        assert!(
            !wording.is_empty(),
            "{}: no wording for {}",
            row.code,
            row.clause_text()
        );
        assert!(
            wording.iter().all(|w| !w.trim().is_empty()),
            "{}: an empty excerpt",
            row.code
        );
        // The clause's own text is there, under its own number.
        let own = if let Some(n) = row.clause.strip_prefix("RN") {
            format!("{n}. ")
        } else if row.clause.starts_with("HTP") {
            String::new()
        } else {
            format!("{} ", row.clause)
        };
        let own_dot = format!("{}. ", row.clause);
        assert!(
            wording
                .iter()
                .any(|w| w.starts_with(&own) || w.starts_with(&own_dot)),
            "{}: no excerpt starts with {own:?}: {wording:?}",
            row.code
        );
    }
}

#[test]
fn every_finding_code_cites_wording_that_is_verbatim_in_its_seed_file() {
    let Some(seeds) = seeds() else {
        return skipped(
            "readside/clauses.json wording not checked verbatim against the rule books",
        );
    };
    let files = seed_files(&seeds);
    for row in TABLE {
        let source = if row.clause.starts_with("RN") {
            "RULES-NOTES.md".to_string()
        } else {
            files[&row.rule_set].clone()
        };
        let seed = normalize(&read(&seeds, &source));
        for w in readside::clauses::wording_of_code(row.code) {
            assert!(
                seed.contains(w.as_str()),
                "{}: {w:?} is not verbatim in {source}",
                row.code
            );
        }
    }
}

#[test]
fn a_sub_clause_reads_with_its_parent_and_the_consequence() {
    // CSP6 5.8.2 alone says when; 5.8's opening and closing words say what follows.
    let w = readside::clauses::wording_of_code("CSP6-5.8.2-two-cards-exposed-void").join(" … ");
    assert!(
        w.starts_with("5.8 In the event that any of the following situations occur:"),
        "{w}"
    );
    assert!(w.contains("5.8.2 if two or more cards"), "{w}");
    assert!(w.ends_with("the current Round of play shall be Voided, and the outcome and settlement of all previous Round(s) of play shall stand."), "{w}");
    // A clause with sub-clauses brings them: 5.3's lead-in is only "... the BET is:".
    let w = readside::clauses::wording_of_code("CSP6-5.3-bet-not-required-multiple");
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w[1].starts_with("5.3.1 more than twice the Ante"), "{w:?}");
    // RULES-NOTES and CS51's How To Play bullets.
    let w = readside::clauses::wording_of_code("SSP4-RN21-over-maximum");
    assert!(
        w[0].starts_with("21. 5.1.1 / 5.2.1: a bet over the table maximum"),
        "{w:?}"
    );
    let w = readside::clauses::wording_of_code("CS51-HTP17-round-never-closed");
    assert_eq!(w, ["Pays are evaluated at the end of the game round."]);
    assert!(readside::clauses::wording_of_code("no-such-code").is_empty());
}
