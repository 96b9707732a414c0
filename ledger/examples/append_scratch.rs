use ledger::{Incoming, Ledger};
use schemas::{codec, DeviceId, Event, Hash32, Seq, TableId};
fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path().join("l")).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let dev = DeviceId::new("bench-ctl").unwrap();
    let mut tables: Vec<(TableId, Seq, Hash32)> = (0..16).map(|i| (TableId::new(format!("BENCH-{i:02}")).unwrap(), Seq(0), Hash32::ZERO)).collect();
    let mut ss = 0;
    let batches: Vec<Vec<Incoming>> = (0..40).map(|_| (0..512).map(|k| {
        let (t, seq, prev) = &mut tables[k % 16];
        *seq = Seq(seq.0 + 1);
        let e = Event::filler(t.clone(), dev.clone(), *seq, *prev, now);
        let bytes = codec::to_bincode(&e);
        *prev = schemas::event_hash(prev, &bytes);
        ss += 1;
        Incoming { bytes, subject_table: Some(t.clone()), stream_seq: ss, received_at_ns: now }
    }).collect()).collect();
    for b in &batches { ledger.append_batch(b).unwrap(); ledger.flush().unwrap(); }
    println!("{}", ledger.stats().events);
}
