//! `elements …`: register the elements (call points, radio elements) of the
//! installation with their code and name. In production mode a request for an
//! unregistered address is refused (DECISIONS §6).
//!
//! `import` reads a CSV file with the header `address,code,name` (any column
//! order), checks every row first and writes nothing when one is bad. Rows are
//! numbered like a spreadsheet does: the header is row 1.

use std::path::Path;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde::Serialize;

use nurse_call_core::{
    AdminStore, AttentionReason, Element, Erased, Scope, Thresholds, admin_text, attention_reasons,
    clock, is_uuid, parse_low_battery_percent, parse_stale_after_hours,
};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, or_dash, table};

mod csv_file;

use csv_file::read_csv;

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Register an element, or change the code and name of a registered one
    /// (its battery, position and reachability stay).
    Add {
        /// The element's address, as requests send it in `target`.
        address: String,
        /// The element's code (the calls' `element_code`).
        #[arg(long)]
        code: String,
        /// The element's name (the calls' `element_name`), e.g. "Zimmer 101, Bett 1".
        #[arg(long)]
        name: String,
    },
    /// Register the elements of a CSV file (header `address,code,name`); all rows
    /// are checked first, and nothing is written if one is bad.
    Import {
        /// The CSV file (UTF-8, comma separated, fields with commas in quotes).
        file: PathBuf,
    },
    /// List the registered elements with their last known status.
    List,
    /// List the elements that need attention (DECISIONS §12): battery low,
    /// not reachable, or silent for too long, with the reasons.
    Health(HealthArgs),
    /// Remove an element; requests for it are refused from then on (production).
    Remove {
        /// The element's address.
        address: String,
    },
    /// Erase an address: its element, every call on it (open and closed) and
    /// the kept hash mismatches that name it (docs/security.md, "Retention
    /// and erasure"). Prints what was removed; other addresses stay.
    Erase {
        /// The address, as requests send it in `target`.
        address: String,
        /// Erase in this sandbox consumer's scope (a test-server visitor's
        /// data) instead of the installation's.
        #[arg(long, value_name = "CONSUMER_ID")]
        sandbox_consumer: Option<String>,
    },
}

pub(crate) async fn run(command: Command, store: &dyn AdminStore, out: Output) -> Outcome {
    match command {
        Command::Add {
            address,
            code,
            name,
        } => add(store, out, &address, &code, &name).await,
        Command::Import { file } => import(store, out, &file).await,
        Command::List => list(store, out).await,
        Command::Health(args) => health(store, out, &args).await,
        Command::Remove { address } => remove(store, out, &address).await,
        Command::Erase {
            address,
            sandbox_consumer,
        } => erase(store, out, &address, sandbox_consumer.as_deref()).await,
    }
}

/// An element registration that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Registration {
    address: String,
    code: String,
    name: String,
}

impl Registration {
    /// Trims the fields and checks them ([`admin_text`]); every problem is
    /// reported.
    fn check(address: &str, code: &str, name: &str) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut checked = |field: &str, value: &str| {
            admin_text(field, value).unwrap_or_else(|problem| {
                problems.push(problem);
                String::new()
            })
        };
        let registration = Registration {
            address: checked("address", address),
            code: checked("code", code),
            name: checked("name", name),
        };
        if problems.is_empty() {
            Ok(registration)
        } else {
            Err(problems)
        }
    }
}

/// The printable record of an element; times local (`YYYY-MM-DD HH:MM:SS`).
#[derive(Serialize)]
struct ElementRow {
    address: String,
    code: String,
    name: String,
    battery: Option<f64>,
    position: Option<String>,
    reachable: Option<bool>,
    updated_at: String,
}

impl ElementRow {
    fn new(e: &Element, out: Output) -> Self {
        ElementRow {
            address: e.address.clone(),
            code: e.code.clone(),
            name: e.name.clone(),
            battery: e.battery,
            position: e.position.clone(),
            reachable: e.reachable,
            updated_at: out.time(e.updated_at),
        }
    }
}

fn element_table(rows: &[ElementRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|e| {
            vec![
                e.address.clone(),
                e.code.clone(),
                e.name.clone(),
                or_dash(e.battery),
                or_dash(e.position.as_ref()),
                or_dash(e.reachable.map(|r| if r { "yes" } else { "no" })),
                e.updated_at.clone(),
            ]
        })
        .collect();
    table(
        &[
            "ADDRESS",
            "CODE",
            "NAME",
            "BATTERY",
            "POSITION",
            "REACHABLE",
            "UPDATED",
        ],
        &cells,
    )
}

async fn register(store: &dyn AdminStore, r: &Registration) -> Result<Element, Failure> {
    Ok(store
        .register_element(
            &Scope::installation(),
            &r.address,
            &r.code,
            &r.name,
            clock::now(),
        )
        .await?)
}

async fn add(
    store: &dyn AdminStore,
    out: Output,
    address: &str,
    code: &str,
    name: &str,
) -> Outcome {
    let registration = Registration::check(address, code, name)
        .map_err(|problems| Failure::refused(problems.join("; ")))?;
    let element = register(store, &registration).await?;
    out.print(&ElementRow::new(&element, out), |row| {
        element_table(std::slice::from_ref(row))
    });
    Ok(())
}

async fn import(store: &dyn AdminStore, out: Output, file: &Path) -> Outcome {
    let registrations = read_csv(file)?;
    let mut imported = Vec::with_capacity(registrations.len());
    for registration in &registrations {
        match register(store, registration).await {
            Ok(element) => imported.push(ElementRow::new(&element, out)),
            Err(Failure::Store(message)) => {
                return Err(Failure::Store(format!(
                    "{message} (after {} of {} elements were registered; running the \
                     import again is safe)",
                    imported.len(),
                    registrations.len()
                )));
            }
            Err(other) => return Err(other),
        }
    }
    #[derive(Serialize)]
    struct Imported {
        imported: usize,
        elements: Vec<ElementRow>,
    }
    out.print(
        &Imported {
            imported: imported.len(),
            elements: imported,
        },
        |i| {
            format!(
                "Registered {} elements from {}.\n{}",
                i.imported,
                file.display(),
                element_table(&i.elements)
            )
        },
    );
    Ok(())
}

async fn list(store: &dyn AdminStore, out: Output) -> Outcome {
    let rows: Vec<ElementRow> = store
        .elements(&Scope::installation())
        .await?
        .iter()
        .map(|e| ElementRow::new(e, out))
        .collect();
    out.print(&rows, |rows| element_table(rows));
    Ok(())
}

/// The thresholds of `elements health`: the service's settings (DECISIONS §10,
/// §12), from the same variables.
#[derive(Debug, Args)]
pub(crate) struct HealthArgs {
    /// A battery below this percentage is low.
    #[arg(long, env = "LOW_BATTERY_PERCENT", default_value = "20",
          value_parser = parse_low_battery_percent)]
    low_battery_percent: f64,
    /// An element that sent nothing for longer than this many hours is stale.
    #[arg(long, env = "STALE_AFTER_HOURS", default_value = "24",
          value_parser = parse_stale_after_hours)]
    stale_after_hours: chrono::Duration,
}

/// An element that needs attention, with why; times local, as [`ElementRow`].
#[derive(Serialize)]
struct AttentionRow {
    #[serde(flatten)]
    element: ElementRow,
    reasons: Vec<AttentionReason>,
}

async fn health(store: &dyn AdminStore, out: Output, args: &HealthArgs) -> Outcome {
    let thresholds = Thresholds {
        low_battery_percent: args.low_battery_percent,
        stale_after: args.stale_after_hours,
    };
    let now = clock::now();
    let elements = store.elements(&Scope::installation()).await?;
    let checked = elements.len();
    let rows: Vec<AttentionRow> = elements
        .iter()
        .filter_map(|element| {
            let reasons = attention_reasons(element, now, &thresholds);
            (!reasons.is_empty()).then(|| AttentionRow {
                element: ElementRow::new(element, out),
                reasons,
            })
        })
        .collect();
    out.print(&rows, |rows| {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|row| {
                let e = &row.element;
                let reasons: Vec<&str> = row.reasons.iter().map(|r| r.as_str()).collect();
                vec![
                    e.address.clone(),
                    e.code.clone(),
                    e.name.clone(),
                    reasons.join(","),
                    or_dash(e.battery),
                    or_dash(e.reachable.map(|r| if r { "yes" } else { "no" })),
                    e.updated_at.clone(),
                ]
            })
            .collect();
        format!(
            "{} of {checked} elements need attention (battery below {}%, or silent for more \
             than {} h).\n{}",
            rows.len(),
            thresholds.low_battery_percent,
            thresholds.stale_after.num_hours(),
            table(
                &[
                    "ADDRESS",
                    "CODE",
                    "NAME",
                    "REASONS",
                    "BATTERY",
                    "REACHABLE",
                    "UPDATED"
                ],
                &cells,
            )
        )
    });
    Ok(())
}

async fn remove(store: &dyn AdminStore, out: Output, address: &str) -> Outcome {
    let address = address.trim();
    if !store
        .remove_element(&Scope::installation(), address)
        .await?
    {
        return Err(Failure::refused(format!(
            "no element with address {address:?} (see `nurse-call-admin elements list`)"
        )));
    }
    #[derive(Serialize)]
    struct Removed<'a> {
        address: &'a str,
        removed: bool,
    }
    out.print(
        &Removed {
            address,
            removed: true,
        },
        |r| {
            format!(
                "Removed element {:?}; its calls stay in the history.\n",
                r.address
            )
        },
    );
    Ok(())
}

async fn erase(
    store: &dyn AdminStore,
    out: Output,
    address: &str,
    sandbox_consumer: Option<&str>,
) -> Outcome {
    let address = address.trim();
    if address.is_empty() {
        return Err(Failure::refused("the address is empty"));
    }
    let scope = match sandbox_consumer.map(str::trim) {
        None => Scope::installation(),
        Some(id) if is_uuid(id) => Scope::consumer(id),
        Some(id) => {
            return Err(Failure::refused(format!(
                "--sandbox-consumer {id:?} is not a consumer id (a UUID)"
            )));
        }
    };
    let erased = store.erase_address(&scope, address).await?;
    if erased.is_nothing() {
        // As `remove` does for an unknown address: a typo must not pass for
        // a done erasure. Nothing was there, so nothing was written.
        return Err(Failure::refused(format!(
            "nothing is stored for address {address:?} in scope {}; nothing was removed",
            scope.as_str()
        )));
    }
    out.print(&ErasedRow::new(address, &scope, erased), |r| {
        format!(
            "Erased address {:?} (scope {}): {}, {} (of them {} open), {}.\n",
            r.address,
            r.scope,
            if r.element {
                "its element"
            } else {
                "no element"
            },
            count(r.calls, "call", "calls"),
            r.open_calls,
            count(r.mismatches, "hash mismatch", "hash mismatches"),
        )
    });
    Ok(())
}

/// The printable record of an erasure.
#[derive(Serialize)]
struct ErasedRow<'a> {
    address: &'a str,
    scope: String,
    element: bool,
    calls: u64,
    open_calls: u64,
    mismatches: u64,
}

impl<'a> ErasedRow<'a> {
    fn new(address: &'a str, scope: &Scope, erased: Erased) -> Self {
        ErasedRow {
            address,
            scope: scope.as_str().to_string(),
            element: erased.element,
            calls: erased.calls,
            open_calls: erased.open_calls,
            mismatches: erased.mismatches,
        }
    }
}

fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
