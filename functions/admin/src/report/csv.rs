//! The audit export: one row per call of the period (presences included),
//! UTF-8 with a byte order mark and `;` between fields, so that a spreadsheet
//! in a German locale opens it by double-click with umlauts and columns
//! intact; quoting by the `csv` crate.

use nurse_call_core::domain::report::Report;

use super::rows::CallRow;
use crate::failure::Failure;

/// Excel reads a file without it as the system's legacy code page.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// German-locale spreadsheets split on `;` (`,` is their decimal comma).
const SEPARATOR: u8 = b';';

pub fn render(report: &Report) -> Result<Vec<u8>, Failure> {
    let mut writer = ::csv::WriterBuilder::new()
        .delimiter(SEPARATOR)
        .from_writer(UTF8_BOM.to_vec());
    for reported in &report.calls {
        writer
            .serialize(CallRow::new(reported, report.options.zone))
            .map_err(|e| Failure::Store(format!("cannot write a CSV row: {e}")))?;
    }
    if report.calls.is_empty() {
        // serde writes the header with the first row; an empty period still
        // gets its header.
        writer
            .write_record(HEADER)
            .map_err(|e| Failure::Store(format!("cannot write the CSV header: {e}")))?;
    }
    writer
        .into_inner()
        .map_err(|e| Failure::Store(format!("cannot finish the CSV: {e}")))
}

/// The header serde writes for [`CallRow`], for an export without rows.
const HEADER: [&str; 16] = [
    "id",
    "opened_at",
    "closed_at",
    "address",
    "element_code",
    "element_name",
    "position",
    "section",
    "call_type",
    "type",
    "response_seconds",
    "answered_by",
    "duration_seconds",
    "over_threshold",
    "opened_by",
    "closed_by",
];
