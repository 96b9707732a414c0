//! A table larger than a row group is written in several row groups and reads back whole:
//! the writer never needs the day in memory. Nulls stay null; money stays Int64.

use dayparquet::schema::FINANCE_LINES;
use dayparquet::sink::{Sink, Value, ROW_GROUP_ROWS};
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::collections::HashMap;

fn row(i: u64) -> Vec<Value> {
    let t = |s: &str| Value::Text(Some(s.to_string()));
    vec![
        t("2026-11-25"),
        t("2026-11-25/1"),
        t("CSP-01"),
        Value::U64(i + 1),
        Value::U64(1000 + i),
        t(if i.is_multiple_of(3) {
            "drop_box_removed"
        } else {
            "fill"
        }),
        // A drop box removal carries no amount: null, never 0.
        Value::Minor((!i.is_multiple_of(3)).then_some(i as i64 * 100)),
        t("SGD"),
        Value::Text(None),
        Value::Text(None),
        Value::Time(Some(1_764_000_000_000_000_000 + i as i64)),
        Value::Time(Some(1_764_000_000_000_000_000 + i as i64 + 5)),
    ]
}

#[test]
fn a_table_past_a_row_group_is_written_in_row_groups_and_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("d.finance_lines.parquet");
    let mut meta = HashMap::new();
    meta.insert(
        "roundledger.gaming_day".to_string(),
        "2026-11-25".to_string(),
    );
    let mut sink = Sink::create(&FINANCE_LINES, dest.clone(), &meta).unwrap();
    let n = 2 * ROW_GROUP_ROWS as u64 + 10;
    let mut want_minor = 0i64;
    for i in 0..n {
        want_minor += if !i.is_multiple_of(3) {
            i as i64 * 100
        } else {
            0
        };
        sink.push(row(i)).unwrap();
    }
    let f = sink.finish().unwrap();
    assert_eq!(f.rows, n);
    assert!(!dest.exists(), "a finished sink is not placed yet");
    std::fs::rename(&f.partial, &dest).unwrap();

    let reader = SerializedFileReader::new(std::fs::File::open(&dest).unwrap()).unwrap();
    let m = reader.metadata();
    assert_eq!(m.num_row_groups(), 3, "two full row groups and the rest");
    assert_eq!(m.file_metadata().num_rows() as u64, n);

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    let file = std::fs::File::open(&dest).unwrap();
    let batches = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let (mut got_minor, mut nulls) = (0i64, 0u64);
    for b in batches {
        let b = b.unwrap();
        let a = b
            .column_by_name("amount_minor")
            .unwrap()
            .as_primitive::<Int64Type>();
        nulls += a.null_count() as u64;
        got_minor += a.iter().flatten().sum::<i64>();
    }
    assert_eq!(got_minor, want_minor);
    assert_eq!(
        nulls,
        n.div_ceil(3),
        "every drop box removal's amount is null"
    );
}

#[test]
#[should_panic(expected = "one value per column")]
fn a_row_of_the_wrong_width_is_a_defect() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("x.parquet");
    let mut sink = Sink::create(&FINANCE_LINES, dest, &HashMap::new()).unwrap();
    let _ = sink.push(vec![Value::U64(1)]);
}
