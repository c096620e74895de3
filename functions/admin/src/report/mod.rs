//! `report`: the quality report and audit export of DECISIONS §13 for local
//! days of the installation: how fast calls were answered, per call type and
//! section, by hour of day, the slowest calls; as one HTML file with charts,
//! as CSV (one row per call, the audit export) or as JSON.
//!
//! The figures come from [`nurse_call_core::domain::report`] (definitions there and
//! in docs/report.md); this module reads the store and writes the formats.

mod alarm_tables;
mod chart;
mod csv;
mod duration;
mod html;
mod json;
mod rows;

use std::io::Write;
use std::path::PathBuf;

use chrono::{Duration, NaiveDate};
use chrono_tz::Tz;
use clap::{Args, ValueEnum};

use nurse_call_core::Settings;
use nurse_call_core::config::parse_time_zone;
use nurse_call_core::domain::model::Scope;
use nurse_call_core::domain::report::{self, Options, Period};
use nurse_call_core::store::admin::AdminStore;

use crate::failure::{Failure, Outcome};
use crate::output::Output;

#[derive(Debug, Args)]
pub struct Command {
    /// First day of the report (YYYY-MM-DD, a local day of the installation).
    #[arg(long, value_name = "DATE")]
    from: NaiveDate,
    /// Last day of the report, included (YYYY-MM-DD).
    #[arg(long, value_name = "DATE")]
    to: NaiveDate,
    /// Only calls of this section.
    #[arg(long)]
    section: Option<String>,
    /// Responses longer than this many minutes are counted as over the threshold.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1440))]
    threshold_minutes: u32,
    /// html: one self-contained file with charts; csv: one row per call (the
    /// audit export, UTF-8 with BOM, `;`-separated); json: figures and calls.
    #[arg(long)]
    format: Format,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// IANA time zone of the installation: days, hours and times are local to it.
    #[arg(long, env = "SERVICE_TIME_ZONE", default_value = Settings::DEFAULT_TIME_ZONE,
          value_parser = parse_time_zone)]
    time_zone: Tz,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Html,
    Csv,
    Json,
}

pub async fn run(command: Command, store: &dyn AdminStore, out: Output) -> Outcome {
    let period = Period::days(command.from, command.to, command.time_zone).ok_or_else(|| {
        Failure::refused(format!(
            "--from {} is after --to {}: nothing to report",
            command.from, command.to
        ))
    })?;
    let scope = Scope::installation();
    let calls = store
        .calls_opened_between(&scope, period.from, period.read_until())
        .await?;
    let call_types = store.call_types().await?.types;
    let options = Options {
        period,
        zone: command.time_zone,
        threshold: Duration::minutes(i64::from(command.threshold_minutes)),
        section: command.section.clone(),
    };
    let report = report::compute(&calls, &call_types, options);
    let days = Days {
        first: command.from,
        last: command.to,
    };
    let bytes = match command.format {
        Format::Html => html::render(&report, &call_types, &days).into_bytes(),
        Format::Csv => csv::render(&report)?,
        Format::Json => json::render(&report, &days).into_bytes(),
    };
    match &command.out {
        Some(path) => {
            std::fs::write(path, &bytes)
                .map_err(|e| Failure::refused(format!("cannot write {}: {e}", path.display())))?;
            out.note(&format!(
                "Wrote the report of {} calls to {}.",
                report.total.count,
                path.display()
            ));
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&bytes)
                .and_then(|()| stdout.flush())
                .map_err(|e| Failure::refused(format!("cannot write the report: {e}")))?;
        }
    }
    Ok(())
}

/// The days asked for, as the reader named them.
#[derive(Debug, Clone, Copy)]
pub struct Days {
    pub first: NaiveDate,
    pub last: NaiveDate,
}
