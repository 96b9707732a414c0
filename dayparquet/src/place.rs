//! Placing a day's finished files. A destination that does not exist is written; one with
//! the same bytes is left as it is; one with other bytes is refused, unless the caller
//! asks to replace it. All are judged before any is renamed, so a refusal changes nothing.

use crate::sink::Finished;
use crate::Error;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// What to do when a day's Parquet file exists with other bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExists {
    /// Refuse, naming the file (the default: nothing is silently overwritten).
    Refuse,
    /// Replace it, and say so.
    Replace,
}

/// What became of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// It did not exist and is written.
    Written,
    /// It existed with the same bytes and is left as it was.
    Unchanged,
    /// It existed with other bytes and is replaced (`OnExists::Replace`).
    Replaced,
}

/// Renames each finished file to its destination, by `on_exists`; the partial files are
/// removed whatever the outcome.
pub fn place(files: &[Finished], on_exists: OnExists) -> Result<Vec<Placed>, Error> {
    let judged = judge(files, on_exists);
    let placed = match judged {
        Ok(p) => p,
        Err(e) => {
            for f in files {
                let _ = std::fs::remove_file(&f.partial);
            }
            return Err(e);
        }
    };
    for (f, p) in files.iter().zip(&placed) {
        match p {
            Placed::Unchanged => std::fs::remove_file(&f.partial).map_err(io(&f.partial))?,
            Placed::Written | Placed::Replaced => {
                std::fs::rename(&f.partial, &f.dest).map_err(io(&f.dest))?
            }
        }
    }
    if let Some(dir) = files.first().and_then(|f| f.dest.parent()) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
    }
    Ok(placed)
}

fn judge(files: &[Finished], on_exists: OnExists) -> Result<Vec<Placed>, Error> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let p = match f.dest.exists() {
            false => Placed::Written,
            true if same_bytes(&f.partial, &f.dest)? => Placed::Unchanged,
            true if on_exists == OnExists::Replace => Placed::Replaced,
            true => {
                return Err(Error::Differs {
                    path: f.dest.clone(),
                })
            }
        };
        out.push(p);
    }
    Ok(out)
}

/// Whether two files hold the same bytes, read a block at a time.
fn same_bytes(a: &Path, b: &Path) -> Result<bool, Error> {
    let (mut fa, mut fb) = (File::open(a).map_err(io(a))?, File::open(b).map_err(io(b))?);
    if fa.metadata().map_err(io(a))?.len() != fb.metadata().map_err(io(b))?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = fa.read(&mut ba).map_err(io(a))?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n]).map_err(io(b))?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
