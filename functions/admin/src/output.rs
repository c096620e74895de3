//! What the command prints: aligned tables (or `key  value` lines) for people,
//! one JSON document with `--json` for scripts. Results go to stdout; notes
//! for people go to stderr, so that stdout stays clean for pipes. Times are
//! wire times in the installation's zone (DECISIONS §10), as everywhere else.
//!
//! A reader that stops early (`… | head -1`) closes the pipe: the command then
//! ends quietly with exit status 0, as ripgrep does, instead of panicking in
//! `println!`. What it did to the store was done before it printed.

use std::io::{ErrorKind, Write};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use nurse_call_core::wire_time::format_local;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    json: bool,
    zone: Tz,
}

impl Output {
    pub(crate) fn new(json: bool, zone: Tz) -> Self {
        Output { json, zone }
    }

    /// The installation's zone, for commands that compute in local days.
    pub(crate) fn zone(&self) -> Tz {
        self.zone
    }

    /// An instant as people and scripts read it: `YYYY-MM-DD HH:MM:SS`, local.
    pub(crate) fn time(&self, instant: DateTime<Utc>) -> String {
        format_local(instant, self.zone)
    }

    /// Prints `value` as JSON, or the text `human` makes from it.
    pub(crate) fn print<T: Serialize>(&self, value: &T, human: impl FnOnce(&T) -> String) {
        let mut text = if self.json {
            serde_json::to_string_pretty(value).expect("results serialise")
        } else {
            human(value)
        };
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        write_stdout(text.as_bytes());
    }

    /// A hint for people (stderr; left out with `--json`).
    pub(crate) fn note(&self, text: &str) {
        if !self.json {
            note(text);
        }
    }
}

/// A line on stderr; a closed stderr is no reason to fail a command whose
/// work is done.
pub(crate) fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Writes the command's result to stdout. A closed pipe ends the process
/// with status 0 (the reader has what it wanted); any other failure to write
/// (a full disk behind a redirect) with status 1, saying so.
pub(crate) fn write_stdout(bytes: &[u8]) {
    let written = {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes).and_then(|()| stdout.flush())
    };
    match written {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            note(&format!("error: cannot write the result: {error}"));
            std::process::exit(1);
        }
    }
}

/// Columns padded to their widest cell (counted in characters, so that
/// umlauts line up), separated by two spaces.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return "(none)\n".to_string();
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> = cells
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut text = line(&mut headers.iter().copied());
    for row in rows {
        text.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    text
}

/// `key  value` lines, keys padded to the longest.
pub(crate) fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    pairs
        .iter()
        .map(|(key, value)| format!("{key:<width$}  {value}\n"))
        .collect()
}

/// An optional value for a table cell.
pub(crate) fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_by_characters() {
        let text = table(
            &["NAME", "ID"],
            &[
                vec!["Störung".into(), "10".into()],
                vec!["WC".into(), "6".into()],
            ],
        );
        assert_eq!(text, "NAME     ID\nStörung  10\nWC       6\n");
    }

    #[test]
    fn empty_tables_say_so() {
        assert_eq!(table(&["A"], &[]), "(none)\n");
    }

    #[test]
    fn fields_align() {
        assert_eq!(
            fields(&[("id", "1".into()), ("secret", "s".into())]),
            "id      1\nsecret  s\n"
        );
    }
}
