//! The audit export: one row per call of the period (presences included),
//! UTF-8 with a byte order mark and `;` between fields, so that a spreadsheet
//! in a German locale opens it by double-click with umlauts and columns
//! intact; quoting by the `csv` crate.

use nurse_call_core::report::Report;

use super::rows::CallRow;
use crate::failure::Failure;

/// Excel reads a file without it as the system's legacy code page.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// German-locale spreadsheets split on `;` (`,` is their decimal comma).
const SEPARATOR: u8 = b';';

pub(super) fn render(report: &Report) -> Result<Vec<u8>, Failure> {
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
const HEADER: [&str; 22] = [
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
    "alarm_state",
    "levels_started",
    "accept_seconds",
    "presence_seconds",
    "unattended",
    "first_received_at",
];

#[cfg(test)]
mod tests {
    use chrono::{Duration, NaiveDate, TimeZone, Utc};

    use nurse_call_core::Call;
    use nurse_call_core::default_call_types;
    use nurse_call_core::report::{Options, Period, compute};

    use super::*;

    fn report(calls: &[Call]) -> Report {
        let day = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
        let zone = chrono_tz::Europe::Berlin;
        let options = Options {
            period: Period::days(day, day, zone).unwrap(),
            zone,
            threshold: Duration::minutes(5),
            section: None,
            receipt_seconds: 30,
        };
        compute(calls, &default_call_types(), options)
    }

    fn header(csv: &[u8]) -> String {
        let text = String::from_utf8(csv.to_vec()).unwrap();
        text.trim_start_matches('\u{feff}')
            .lines()
            .next()
            .unwrap()
            .to_string()
    }

    #[test]
    fn an_empty_export_has_the_header_serde_writes_for_a_row() {
        let call = Call {
            id: 1,
            address: "R1".into(),
            event: "Notruf".into(),
            position: None,
            section: None,
            attribute: None,
            element_code: String::new(),
            element_name: String::new(),
            opened_at: Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0).unwrap(),
            closed_at: None,
            opened_by: None,
            closed_by: None,
            alarm: None,
        };
        let with_row = header(&render(&report(&[call])).unwrap());
        assert_eq!(header(&render(&report(&[])).unwrap()), with_row);
        assert_eq!(with_row, HEADER.join(";"));
    }
}
