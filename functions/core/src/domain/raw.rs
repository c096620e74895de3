//! A field of a hand-edited item as stored, before the service trusts it.
//!
//! Admins edit call types, consumers and displays directly: in the DynamoDB
//! console, or the SQLite file with its command-line tool (SQLite's type
//! affinity lets the text `high` into an INTEGER column). Any attribute may
//! then be missing or of another type than the service writes. Each store
//! turns its own values into a [`Raw`]; what is usable is decided once, in
//! core ([`crate::domain::call_type_items`], [`crate::domain::credentials`]),
//! the same for both stores.

use std::fmt;

/// One field of a stored item, as the store found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Raw {
    /// No such attribute (DynamoDB), or SQL `NULL`.
    Missing,
    /// Text (DynamoDB `S`, SQLite `TEXT`).
    Text(String),
    /// A number as the store spells it: DynamoDB keeps up to 38 digits as
    /// decimal text, more than any integer type holds.
    Number(String),
    /// DynamoDB `BOOL`; SQLite's 0 and 1 in a boolean column.
    Bool(bool),
    /// DynamoDB `L` or `SS`; SQLite: a JSON array kept as text.
    List(Vec<Raw>),
    /// Any other type, by what it is: `a map`, `a number set`, `binary`.
    Other(&'static str),
}

/// Longest text quoted in a description (a log line stays a line).
const QUOTED_CHARS: usize = 64;

impl Raw {
    /// The text, when the field is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Raw::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The whole number in `range`, when the field is one. `Err` says why
    /// not, for the log: missing, not a whole number, out of range.
    pub fn integer_in(&self, range: std::ops::RangeInclusive<i64>) -> Result<i64, String> {
        let Raw::Number(text) = self else {
            return Err(self.not_a("a number"));
        };
        match text.trim().parse::<i64>() {
            Ok(value) if range.contains(&value) => Ok(value),
            Ok(_) => Err(format!(
                "out of range ({} to {})",
                range.start(),
                range.end()
            )),
            // Too many digits for an integer is out of range too, and says so.
            Err(_) if text.trim().bytes().all(|b| b.is_ascii_digit() || b == b'-') => Err(format!(
                "out of range ({} to {})",
                range.start(),
                range.end()
            )),
            Err(_) => Err("not a whole number".to_string()),
        }
    }

    /// Why this value is not the `wanted` type: `missing`, or `text, not a number`.
    pub fn not_a(&self, wanted: &str) -> String {
        match self {
            Raw::Missing => "missing".to_string(),
            other => format!("{}, not {wanted}", other.kind()),
        }
    }

    /// What kind of value this is, without the value (for a secret's field).
    pub fn kind(&self) -> &'static str {
        match self {
            Raw::Missing => "missing",
            Raw::Text(_) => "text",
            Raw::Number(_) => "a number",
            Raw::Bool(_) => "true/false",
            Raw::List(_) => "a list",
            Raw::Other(what) => what,
        }
    }
}

/// The value for a log line or the admin's table: text in JSON quotes (so
/// `"3"` and `3` differ), numbers and booleans as they are, `missing`, or
/// what an other value is. Never used for a field that may hold a secret.
impl fmt::Display for Raw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raw::Missing => f.write_str("missing"),
            Raw::Text(text) => {
                let mut shown: String = text.chars().take(QUOTED_CHARS).collect();
                if shown.len() < text.len() {
                    shown.push('…');
                }
                f.write_str(&serde_json::to_string(&shown).expect("strings serialise"))
            }
            Raw::Number(number) => f.write_str(number),
            Raw::Bool(value) => write!(f, "{value}"),
            Raw::List(items) => write!(f, "a list of {}", items.len()),
            Raw::Other(what) => f.write_str(what),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_whole_numbers_in_range() {
        let n = |text: &str| Raw::Number(text.to_string());
        assert_eq!(n("3").integer_in(1..=9), Ok(3));
        assert_eq!(n(" 3 ").integer_in(1..=9), Ok(3));
        assert_eq!(
            n("0").integer_in(1..=9),
            Err("out of range (1 to 9)".into())
        );
        assert_eq!(
            n("100000000000000000000").integer_in(1..=9),
            Err("out of range (1 to 9)".into())
        );
        assert_eq!(n("2.5").integer_in(1..=9), Err("not a whole number".into()));
        assert_eq!(Raw::Missing.integer_in(1..=9), Err("missing".into()));
        assert_eq!(
            Raw::Text("high".into()).integer_in(1..=9),
            Err("text, not a number".into())
        );
    }

    #[test]
    fn descriptions_tell_text_from_numbers_and_stay_short() {
        assert_eq!(Raw::Text("3".into()).to_string(), "\"3\"");
        assert_eq!(Raw::Number("3".into()).to_string(), "3");
        assert_eq!(Raw::Bool(true).to_string(), "true");
        assert_eq!(Raw::Missing.to_string(), "missing");
        assert_eq!(Raw::List(vec![Raw::Missing]).to_string(), "a list of 1");
        assert_eq!(Raw::Other("a map").to_string(), "a map");
        let long = Raw::Text("x".repeat(200)).to_string();
        assert_eq!(long.chars().count(), QUOTED_CHARS + 3);
    }
}
