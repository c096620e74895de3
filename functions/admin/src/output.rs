//! What the command prints: aligned tables (or `key  value` lines) for people,
//! one JSON document with `--json` for scripts. Results go to stdout; notes
//! for people go to stderr, so that stdout stays clean for pipes.

use serde::Serialize;

#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
}

impl Output {
    pub fn new(json: bool) -> Self {
        Output { json }
    }

    /// Prints `value` as JSON, or the text `human` makes from it.
    pub fn print<T: Serialize>(&self, value: &T, human: impl FnOnce(&T) -> String) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(value).expect("results serialise")
            );
        } else {
            let text = human(value);
            print!("{text}");
            if !text.is_empty() && !text.ends_with('\n') {
                println!();
            }
        }
    }

    /// A hint for people (stderr; left out with `--json`).
    pub fn note(&self, text: &str) {
        if !self.json {
            eprintln!("{text}");
        }
    }
}

/// Columns padded to their widest cell (counted in characters, so that
/// umlauts line up), separated by two spaces.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
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
pub fn fields(pairs: &[(&str, String)]) -> String {
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
pub fn or_dash<T: ToString>(value: Option<T>) -> String {
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
