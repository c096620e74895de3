//! The CSV file of `elements import` (header `address,code,name` in any
//! column order): every row checked before anything is written, every bad
//! row named by its spreadsheet number (the header is row 1).

use std::collections::HashMap;
use std::path::Path;

use super::Registration;
use crate::failure::Failure;

/// Reads and checks every row of `file`; a refusal lists every bad row.
pub(super) fn read_csv(file: &Path) -> Result<Vec<Registration>, Failure> {
    let bytes = std::fs::read(file)
        .map_err(|e| Failure::refused(format!("cannot read {}: {e}", file.display())))?;
    parse_csv(&bytes).map_err(|problems| {
        Failure::refused(format!(
            "{} is not valid; nothing was imported:\n  {}",
            file.display(),
            problems.join("\n  ")
        ))
    })
}

/// The registrations of a CSV text, or every problem found (by row).
fn parse_csv(bytes: &[u8]) -> Result<Vec<Registration>, Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let columns = header_columns(&mut reader).map_err(|problem| vec![problem])?;

    let mut problems = Vec::new();
    let mut registrations = Vec::new();
    let mut first_row_of: HashMap<String, u64> = HashMap::new();
    for record in reader.records() {
        let record = match record {
            Ok(record) => record,
            Err(error) => {
                let row = error.position().map_or(0, csv::Position::line);
                problems.push(format!("row {row}: {error}"));
                continue;
            }
        };
        let row = record.position().map_or(0, csv::Position::line);
        if record.len() != 3 {
            let count = match record.len() {
                1 => "1 field".to_string(),
                n => format!("{n} fields"),
            };
            problems.push(format!(
                "row {row}: {count}, expected 3 (address,code,name)"
            ));
            continue;
        }
        let field = |name: &str| record.get(columns[name]).unwrap_or_default();
        match Registration::check(field("address"), field("code"), field("name")) {
            Err(found) => problems.push(format!("row {row}: {}", found.join("; "))),
            Ok(registration) => match first_row_of.get(&registration.address) {
                Some(first) => problems.push(format!(
                    "row {row}: address {:?} is already on row {first}",
                    registration.address
                )),
                None => {
                    first_row_of.insert(registration.address.clone(), row);
                    registrations.push(registration);
                }
            },
        }
    }
    if problems.is_empty() {
        Ok(registrations)
    } else {
        Err(problems)
    }
}

/// The column index of `address`, `code` and `name` in the header row.
fn header_columns<R: std::io::Read>(
    reader: &mut csv::Reader<R>,
) -> Result<HashMap<&'static str, usize>, String> {
    let headers = reader
        .headers()
        .map_err(|e| format!("row 1 (the header): {e}"))?
        .clone();
    let names: Vec<String> = headers
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_ascii_lowercase())
        .collect();
    let mut columns = HashMap::new();
    for wanted in ["address", "code", "name"] {
        if let Some(index) = names.iter().position(|n| n == wanted) {
            columns.insert(wanted, index);
        }
    }
    if names.len() != 3 || columns.len() != 3 {
        return Err(format!(
            "row 1: the header must be `address,code,name` (found `{}`)",
            headers.iter().collect::<Vec<_>>().join(",")
        ));
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use nurse_call_core::MAX_TEXT_CHARS;

    use super::*;

    fn registration(address: &str, code: &str, name: &str) -> Registration {
        Registration {
            address: address.into(),
            code: code.into(),
            name: name.into(),
        }
    }

    #[test]
    fn reads_quoted_fields_any_column_order_and_a_bom() {
        let text = "\u{feff}name,address,code\n\"Zimmer 101, Bett 1\", A1 ,Z101\nFlur,A2,F1\n";
        assert_eq!(
            parse_csv(text.as_bytes()).unwrap(),
            [
                registration("A1", "Z101", "Zimmer 101, Bett 1"),
                registration("A2", "F1", "Flur")
            ]
        );
    }

    #[test]
    fn reports_every_bad_row_by_its_spreadsheet_number() {
        let text = "address,code,name\nA1,Z1,Eins\n,Z2,Zwei\nA3,Z3\nA1,Z4,Vier\nA5,Z5,Fünf\n";
        assert_eq!(
            parse_csv(text.as_bytes()).unwrap_err(),
            [
                "row 3: address is empty",
                "row 4: 2 fields, expected 3 (address,code,name)",
                "row 5: address \"A1\" is already on row 2",
            ]
        );
    }

    #[test]
    fn refuses_another_header() {
        let problems = parse_csv(b"addr,code,name\nA1,Z1,Eins\n").unwrap_err();
        assert_eq!(
            problems,
            ["row 1: the header must be `address,code,name` (found `addr,code,name`)"]
        );
    }

    #[test]
    fn checks_lengths() {
        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        assert_eq!(
            Registration::check("A", &long, " ").unwrap_err(),
            ["code is longer than 255 characters", "name is empty"]
        );
    }

    #[test]
    fn refuses_control_characters() {
        assert_eq!(
            Registration::check("A\u{0}1", "Z1", "Eins\u{7f}").unwrap_err(),
            [
                "address contains a control character",
                "name contains a control character"
            ]
        );
    }
}
