//! One Parquet table being written: rows go into Arrow column builders, a record batch
//! goes to the file every `BATCH_ROWS` rows, and the writer closes a row group every
//! `ROW_GROUP_ROWS` rows. Memory holds at most one row group, whatever the day's size.
//!
//! The file is written beside its destination as `<name>.partial` and fsynced; `place`
//! decides whether it becomes the destination.

use crate::schema::{seq_item, Kind, TableSpec};
use crate::Error;
use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int64Builder, ListBuilder, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per record batch handed to the writer.
pub const BATCH_ROWS: usize = 8_192;
/// Rows per row group: the unit a reader skips by its statistics, and the most rows the
/// writer holds in memory.
pub const ROW_GROUP_ROWS: usize = 65_536;
/// The zstd level of the pages: fast to write, and every Parquet reader knows zstd.
const ZSTD_LEVEL: i32 = 3;

/// One value of a row, in its column's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `Kind::Text`.
    Text(Option<String>),
    /// `Kind::U64`.
    U64(u64),
    /// `Kind::U32`.
    U32(Option<u32>),
    /// `Kind::MinorUnits` or `Kind::Ppm`.
    Minor(Option<i64>),
    /// `Kind::Time`, UTC ns.
    Time(Option<i64>),
    /// `Kind::Bool`.
    Bool(Option<bool>),
    /// `Kind::Seqs`.
    Seqs(Vec<u64>),
}

/// A column's builder.
enum Builder {
    Text(StringBuilder),
    U64(UInt64Builder),
    U32(UInt32Builder),
    Minor(Int64Builder),
    Time(TimestampNanosecondBuilder),
    Bool(BooleanBuilder),
    Seqs(ListBuilder<UInt64Builder>),
}

impl Builder {
    fn new(kind: Kind) -> Builder {
        match kind {
            Kind::Text => Builder::Text(StringBuilder::new()),
            Kind::U64 => Builder::U64(UInt64Builder::new()),
            Kind::U32 => Builder::U32(UInt32Builder::new()),
            Kind::MinorUnits | Kind::Ppm => Builder::Minor(Int64Builder::new()),
            Kind::Time => Builder::Time(TimestampNanosecondBuilder::new().with_timezone("UTC")),
            Kind::Bool => Builder::Bool(BooleanBuilder::new()),
            Kind::Seqs => Builder::Seqs(
                ListBuilder::new(UInt64Builder::new()).with_field(Arc::new(seq_item())),
            ),
        }
    }

    /// Appends `v`. A value of another kind is a defect of this crate's row code.
    fn push(&mut self, name: &str, v: Value) {
        match (self, v) {
            (Builder::Text(b), Value::Text(x)) => b.append_option(x),
            (Builder::U64(b), Value::U64(x)) => b.append_value(x),
            (Builder::U32(b), Value::U32(x)) => b.append_option(x),
            (Builder::Minor(b), Value::Minor(x)) => b.append_option(x),
            (Builder::Time(b), Value::Time(x)) => b.append_option(x),
            (Builder::Bool(b), Value::Bool(x)) => b.append_option(x),
            (Builder::Seqs(b), Value::Seqs(x)) => {
                b.values().append_slice(&x);
                b.append(true);
            }
            (_, v) => panic!("column {name}: a row gives {v:?}, of another kind"),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::Minor(b) => Arc::new(b.finish()),
            Builder::Time(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Seqs(b) => ArrayBuilder::finish(b),
        }
    }
}

/// A table being written to `<dest>.partial`.
pub struct Sink {
    spec: &'static TableSpec,
    schema: SchemaRef,
    builders: Vec<Builder>,
    pending: usize,
    rows: u64,
    writer: ArrowWriter<File>,
    partial: PathBuf,
    dest: PathBuf,
}

/// A table written and synced, not yet placed.
#[derive(Debug)]
pub struct Finished {
    /// The table's name.
    pub name: &'static str,
    /// The synced file beside `dest`.
    pub partial: PathBuf,
    /// Where it goes.
    pub dest: PathBuf,
    /// Rows written.
    pub rows: u64,
    /// The file's length in bytes.
    pub bytes: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Sink {
    /// Starts `spec`'s table for `dest`, with `metadata` in the schema and the footer.
    pub fn create(
        spec: &'static TableSpec,
        dest: PathBuf,
        metadata: &HashMap<String, String>,
    ) -> Result<Sink, Error> {
        let schema = spec.schema(metadata.clone());
        let partial = partial_of(&dest);
        let file = File::create(&partial).map_err(io(&partial))?;
        let mut kv: Vec<KeyValue> = metadata
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        // The footer's order is the map's sorted order, so the bytes are the same each run.
        kv.sort_by(|a, b| a.key.cmp(&b.key));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_max_row_group_size(ROW_GROUP_ROWS)
            .set_key_value_metadata(Some(kv))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))?;
        Ok(Sink {
            spec,
            builders: spec.columns.iter().map(|c| Builder::new(c.kind)).collect(),
            schema,
            pending: 0,
            rows: 0,
            writer,
            partial,
            dest,
        })
    }

    /// Adds one row, its values in column order.
    pub fn push(&mut self, row: Vec<Value>) -> Result<(), Error> {
        assert_eq!(
            row.len(),
            self.builders.len(),
            "a {} row has one value per column",
            self.spec.name
        );
        for ((b, c), v) in self.builders.iter_mut().zip(self.spec.columns).zip(row) {
            b.push(c.name, v);
        }
        self.pending += 1;
        self.rows += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the rows built so far to the writer as one record batch.
    fn flush(&mut self) -> Result<(), Error> {
        if self.pending == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.writer.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    /// Writes the last rows and the footer, and syncs the file.
    pub fn finish(mut self) -> Result<Finished, Error> {
        self.flush()?;
        // Writes the last row group and the footer.
        let file = self.writer.into_inner()?;
        file.sync_all().map_err(io(&self.partial))?;
        let bytes = file.metadata().map_err(io(&self.partial))?.len();
        Ok(Finished {
            name: self.spec.name,
            partial: self.partial,
            dest: self.dest,
            rows: self.rows,
            bytes,
        })
    }
}

/// `<dest>.partial`.
pub fn partial_of(dest: &Path) -> PathBuf {
    let mut s = dest.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}
