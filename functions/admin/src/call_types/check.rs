//! `call-types check`: the fallbacks of hand-edited call types (DECISIONS
//! §7), read through the same function the service uses, so the list is
//! exactly what the service logs (`call type field fell back`).

use serde::Serialize;

use nurse_call_core::{AdminStore, Fallback};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, table};

#[derive(Serialize)]
struct Row<'a> {
    item: &'a str,
    field: &'a str,
    found: &'a str,
    used: &'a str,
    problem: &'a str,
}

impl<'a> From<&'a Fallback> for Row<'a> {
    fn from(f: &'a Fallback) -> Self {
        Row {
            item: &f.item,
            field: f.field,
            found: &f.found,
            used: &f.used,
            problem: &f.problem,
        }
    }
}

#[derive(Serialize)]
struct Checked<'a> {
    /// How many call types the service serves.
    call_types: usize,
    fallbacks: Vec<Row<'a>>,
}

pub(super) async fn run(store: &dyn AdminStore, out: Output) -> Outcome {
    let read = store.call_types().await?;
    let checked = Checked {
        call_types: read.types.len(),
        fallbacks: read.fallbacks.iter().map(Row::from).collect(),
    };
    out.print(&checked, |checked| {
        if checked.fallbacks.is_empty() {
            return format!(
                "Every field of the {} call types is used as stored.\n",
                checked.call_types
            );
        }
        let cells: Vec<Vec<String>> = checked
            .fallbacks
            .iter()
            .map(|f| {
                [f.item, f.field, f.found, f.used, f.problem]
                    .map(|cell| {
                        // A blank name shows as its JSON string in the table.
                        if cell.trim().is_empty() {
                            serde_json::to_string(cell).expect("strings serialise")
                        } else {
                            cell.to_string()
                        }
                    })
                    .to_vec()
            })
            .collect();
        table(&["ITEM", "FIELD", "FOUND", "USED", "PROBLEM"], &cells)
    });
    if read.fallbacks.is_empty() {
        return Ok(());
    }
    Err(Failure::refused(format!(
        "{} field(s) of hand-edited call types fall back (DECISIONS §7): fix the items \
         in the call-types table, or set them with `nurse-call-admin call-types set`",
        read.fallbacks.len()
    )))
}
