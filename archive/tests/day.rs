//! Day files against real simulated play: every event reads back exactly (bytes, hash,
//! stream seq, arrival), a JSON event's `prev` comes back too, and any altered byte or
//! header claim is named.

use archive::{read_header, read_table, write_day, ArchiveError, DayEvent, TableDay};
use schemas::Hash32;

/// Two tables of simulated play from seq 1, with arrival data as ingest records it.
fn day() -> Vec<TableDay> {
    let mut floor = simulator::Floor::new(2, 7, simulator::FaultPlan::none())
        .unwrap()
        .without_event_signatures();
    let mut out = Vec::new();
    for (n, t) in floor.tables.iter_mut().enumerate() {
        let mut published = t.opening_events().unwrap();
        for _ in 0..12 {
            published.extend(t.play_round().unwrap().events);
        }
        let events = published
            .iter()
            .enumerate()
            .map(|(i, p)| DayEvent {
                seq: p.event.seq.0,
                hash: p.hash(),
                stream_seq: 2 * i as u64 + n as u64 + 1,
                received_at_ns: p.event.occurred_at_ns + 1_000_000,
                bytes: p.bytes.clone(),
            })
            .collect();
        out.push(TableDay {
            table: t.table().as_str().to_string(),
            anchor: Hash32::ZERO,
            events,
        });
    }
    out
}

#[test]
fn every_event_reads_back_exactly() {
    let tables = day();
    let file = write_day("2026-11-25", b"seal bytes", &tables).unwrap();
    let (header, _) = read_header(&file).unwrap();
    assert_eq!(header.day, "2026-11-25");
    assert_eq!(header.tables.len(), 2);
    for t in &tables {
        let (span, events) = read_table(&file, &t.table).unwrap();
        assert_eq!(events, t.events, "{}", t.table);
        assert_eq!(span.head, t.events.last().unwrap().hash);
        assert_eq!(span.first_seq, 1);
    }
    let wire: usize = tables
        .iter()
        .flat_map(|t| &t.events)
        .map(|e| e.bytes.len())
        .sum();
    assert!(
        file.len() < wire,
        "{} bytes for {wire} wire bytes",
        file.len()
    );
}

#[test]
fn a_json_events_prev_is_restored() {
    let mut tables = day();
    let t = &mut tables[0];
    // Re-encode the chain with its fifth event in JSON: the hex `prev` is blanked.
    let mut prev = t.anchor;
    for (i, e) in t.events.iter_mut().enumerate() {
        if i >= 4 {
            let (mut ev, _) = schemas::codec::decode(&e.bytes).unwrap();
            ev.prev = prev;
            let format = if i == 4 {
                schemas::codec::WireFormat::Json
            } else {
                schemas::codec::WireFormat::Bincode
            };
            e.bytes = schemas::codec::encode(&ev, format);
        }
        e.hash = schemas::chain::event_hash(&prev, &e.bytes);
        prev = e.hash;
    }
    assert!(t.events[4].bytes.starts_with(b"{"));
    let file = write_day("2026-11-25", b"", &tables).unwrap();
    let (_, events) = read_table(&file, &tables[0].table).unwrap();
    assert_eq!(events, tables[0].events);
}

#[test]
fn an_altered_frame_or_header_is_named() {
    let tables = day();
    let file = write_day("2026-11-25", b"", &tables).unwrap();
    let (header, _) = read_header(&file).unwrap();
    let span = &header.tables[1];
    // A flipped byte inside the second table's frame.
    let mut bad = file.clone();
    bad[(span.frame_offset + span.frame_len / 2) as usize] ^= 0x40;
    let err = read_table(&bad, &span.table).unwrap_err();
    assert!(
        matches!(err, ArchiveError::Table { ref table, .. } if *table == span.table),
        "{err}"
    );
    // The first table's frame is untouched and still reads.
    read_table(&bad, &header.tables[0].table).unwrap();
    // A header claiming another head.
    let head = span.head.to_hex();
    let at = file.windows(64).position(|w| w == head.as_bytes()).unwrap();
    let mut forged = file.clone();
    forged[at..at + 64].copy_from_slice(Hash32([7; 32]).to_hex().as_bytes());
    let err = read_table(&forged, &span.table).unwrap_err().to_string();
    assert!(err.contains("does not end at the header's head"), "{err}");
    // Writing refuses a range whose stored hashes do not follow from its anchor.
    let mut broken = tables.clone();
    broken[0].anchor = Hash32([1; 32]);
    let err = write_day("2026-11-25", b"", &broken)
        .unwrap_err()
        .to_string();
    assert!(err.contains("seq 1"), "{err}");
}
