//! `report`: the quality report and audit export of DECISIONS §13 for local
//! days of the installation: how fast calls were answered, per call type and
//! section, by hour of day, the slowest calls, and apart from them the
//! faults; as one HTML file with charts,
//! as CSV (one row per call, the audit export) or as JSON.
//!
//! The figures come from [`nurse_call_core::report`] (definitions there and
//! in docs/report.md); this module reads the store and writes the formats.

mod alarm_tables;
mod chart;
mod csv;
mod duration;
mod fault_table;
mod html;
mod json;
mod rows;
mod silence_table;

use std::path::PathBuf;

use chrono::{Duration, NaiveDate};
use clap::{Args, ValueEnum};

use nurse_call_core::{Backend, Scope, report, report::Options, report::Period};

use crate::failure::{Failure, Outcome};
use crate::output::{Output, write_stdout};

#[derive(Debug, Args)]
pub(crate) struct Command {
    /// First day of the report (YYYY-MM-DD, a local day of the installation).
    #[arg(long, value_name = "DATE", value_parser = parse_day)]
    from: NaiveDate,
    /// Last day of the report, included (YYYY-MM-DD).
    #[arg(long, value_name = "DATE", value_parser = parse_day)]
    to: NaiveDate,
    /// Only calls of this section.
    #[arg(long)]
    section: Option<String>,
    /// Responses longer than this many minutes are counted as over the threshold.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1440))]
    threshold_minutes: u32,
    /// An alert received within this many seconds of a person's first alert
    /// counts as in time (the service's `RECEIPT_SECONDS`, DECISIONS §18).
    #[arg(long, env = "RECEIPT_SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(i64).range(1..=600))]
    receipt_seconds: i64,
    /// html: one self-contained file with charts; csv: one row per call (the
    /// audit export, UTF-8 with BOM, `;`-separated); json: figures and calls
    /// (also `--json`). Required unless --json is given.
    #[arg(long)]
    format: Option<Format>,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Html,
    Csv,
    Json,
}

impl Command {
    /// `--json` is every command's switch to JSON, so here it means
    /// `--format json`; with another `--format` the two contradict.
    pub(crate) fn check_format(&self, json: bool) -> Result<(), String> {
        match (self.format, json) {
            (None, false) => Err("report needs --format html|csv|json (or --json)".to_string()),
            (Some(format), true) if format != Format::Json => Err(format!(
                "--json asks for JSON, --format {} for another format: give one of them",
                format!("{format:?}").to_lowercase()
            )),
            _ => Ok(()),
        }
    }
}

/// A day as `--from` and `--to` take it; the error names the format.
fn parse_day(text: &str) -> Result<NaiveDate, String> {
    let well_formed = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    well_formed
        .then(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
        .flatten()
        .ok_or_else(|| format!("{text} is not a date in the format YYYY-MM-DD"))
}

pub(crate) async fn run(command: Command, store: &dyn Backend, out: Output) -> Outcome {
    let zone = out.zone();
    let period = Period::days(command.from, command.to, zone).ok_or_else(|| {
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
        zone,
        threshold: Duration::minutes(i64::from(command.threshold_minutes)),
        section: command.section.clone(),
        receipt_seconds: command.receipt_seconds,
    };
    let mut report = report::compute(&calls, &call_types, options);
    let window = &report.options.period;
    report.silences = report::silences_of(&store.silences(window.from, window.to).await?);
    let days = Days {
        first: command.from,
        last: command.to,
    };
    // `check_format` made sure that no format means `--json`.
    let bytes = match command.format.unwrap_or(Format::Json) {
        Format::Html => html::render(&report, &call_types, &days).into_bytes(),
        Format::Csv => csv::render(&report)?,
        Format::Json => json::render(&report, &days).into_bytes(),
    };
    match &command.out {
        Some(path) => {
            std::fs::write(path, &bytes)
                .map_err(|e| Failure::refused(format!("cannot write {}: {e}", path.display())))?;
            // The note is for people: with --json, stderr stays quiet too.
            out.note(&format!(
                "Wrote the report of {} calls and {} faults to {}.",
                report.total.count,
                report.faults.total.count,
                path.display()
            ));
        }
        None => write_stdout(&bytes),
    }
    Ok(())
}

/// The days asked for, as the reader named them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Days {
    pub first: NaiveDate,
    pub last: NaiveDate,
}

#[cfg(test)]
mod tests {
    use super::parse_day;

    #[test]
    fn days_are_read_only_in_the_documented_format() {
        assert_eq!(parse_day("2026-11-25").unwrap().to_string(), "2026-11-25");
        for wrong in [
            "25.11.2026",
            "2026-11-5",
            "2026-02-30",
            "2026-11-25 ",
            "+2026-11-2",
        ] {
            assert_eq!(
                parse_day(wrong).unwrap_err(),
                format!("{wrong} is not a date in the format YYYY-MM-DD")
            );
        }
    }
}
