//! How long a page of the quarantine takes (`Reader::quarantine_view`, what
//! `GET /v1/quarantine` and `roundledger quarantine` serve) when a flood of refused
//! messages has filled it: `N` undecodable messages over 16 subjects, one `fork`-like
//! rarity every 10,000th (another reason), then the newest page of 50 unfiltered, by the
//! common reason, by the rare reason, and by one subject table, each timed over 20 calls.
//!
//! `cargo run --release -p ledger --example quarantine_page -- [entries, default 200000]`

use ledger::{Incoming, Ledger};
use schemas::TableId;
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("entries: a number"))
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(dir.path()).expect("open");
    let tables: Vec<TableId> = (0..16)
        .map(|i| TableId::new(format!("Q-{i:02}")).expect("id"))
        .collect();
    let misrouted = schemas::codec::encode(
        &schemas::Event {
            v: schemas::WIRE_VERSION,
            table: TableId::new("ELSEWHERE").expect("id"),
            device: schemas::DeviceId::new("ctl-1").expect("id"),
            seq: schemas::Seq(1),
            prev: schemas::GENESIS,
            occurred_at_ns: 1_780_000_000_000_000_000,
            round: None,
            body: schemas::EventBody::TableClosed,
        },
        schemas::codec::WireFormat::Bincode,
    );
    let started = Instant::now();
    let mut id = 0u64;
    while id < n {
        let batch: Vec<Incoming> = (id..(id + 8192).min(n))
            .map(|i| Incoming {
                subject_table: Some(tables[(i % 16) as usize].clone()),
                // A rarity every 10,000th: a well-formed event of another table on this
                // subject (quarantined as `wrong_subject`).
                bytes: if i % 10_000 == 9_999 {
                    misrouted.clone()
                } else {
                    format!("not an event, flood message #{i:012}").into_bytes()
                },
                stream_seq: i + 1,
                received_at_ns: 1_780_000_000_000_000_000 + i as i64,
                provenance: Default::default(),
            })
            .collect();
        id += batch.len() as u64;
        ledger.writer().append_batch(&batch).expect("append");
    }
    ledger.flush().expect("flush");
    println!(
        "{n} entries quarantined in {:.2} s; counts {:?}",
        started.elapsed().as_secs_f64(),
        ledger.reader().quarantine_counts()
    );
    let cases: [(&str, Option<&str>, Option<&TableId>); 4] = [
        ("newest 50", None, None),
        ("newest 50 undecodable", Some("undecodable"), None),
        (
            "newest 50 wrong_subject (rare)",
            Some("wrong_subject"),
            None,
        ),
        ("newest 50 of table Q-03", None, Some(&tables[3])),
    ];
    for (what, reason, table) in cases {
        let t = Instant::now();
        let mut total = 0;
        for _ in 0..20 {
            let page = ledger
                .reader()
                .quarantine_view(reason, table, 0, 50)
                .expect("page");
            total = page.total;
        }
        println!(
            "{what:<32} {:>9.3} ms per page (total {total})",
            t.elapsed().as_secs_f64() * 1000.0 / 20.0
        );
    }
}
