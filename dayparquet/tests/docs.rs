//! docs/PARQUET.md lists every column of every table as `schema` defines it: names, Arrow
//! types, nullability, units and meanings. `BLESS=1` rewrites its generated part.

const BEGIN: &str = "<!-- columns: generated from dayparquet::schema::markdown(); BLESS=1 cargo test -p dayparquet --test docs -->\n";
const END: &str = "<!-- end of columns -->\n";

#[test]
fn the_docs_list_every_column_as_the_schema_has_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PARQUET.md");
    let doc = std::fs::read_to_string(&path).expect("docs/PARQUET.md");
    let (head, rest) = doc.split_once(BEGIN).expect("the columns' begin marker");
    let (_, tail) = rest.split_once(END).expect("the columns' end marker");
    let want = format!("{head}{BEGIN}{}{END}{tail}", dayparquet::schema::markdown());
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &want).expect("writing docs/PARQUET.md");
        return;
    }
    assert!(
        doc == want,
        "docs/PARQUET.md differs from the schema: run BLESS=1 cargo test -p dayparquet --test docs"
    );
    for t in dayparquet::schema::TABLES {
        for c in t.columns {
            assert!(
                doc.contains(&format!("| `{}` |", c.name)),
                "{}.{}",
                t.name,
                c.name
            );
        }
    }
}
