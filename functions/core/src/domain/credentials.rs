//! Consumer and display items, read field by field (DECISIONS §7's rule for
//! hand edits, applied to the credentials): the one place both stores'
//! items become [`Consumer`]s and [`Display`]s.
//!
//! Where a call type falls back, a credential cannot: there is no safe
//! guess of a secret, of which sections a display may show, or of whether
//! it is revoked. An item whose secrets, sections or flags are malformed is
//! [`Stored::Malformed`]: the service refuses that one credential, as if it
//! were unknown, and logs why ([`Malformed`], which never holds a value:
//! secrets never reach a log). Every other credential works as before.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::domain::model::{Consumer, Display, Scope};
use crate::domain::raw::Raw;
use crate::domain::wire_time::from_stored;

/// A credential item as stored: usable, or malformed by a hand edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored<T> {
    /// Read without a fault: the credential works.
    Usable(T),
    /// Refused as if unknown; why is logged.
    Malformed(Malformed),
}

impl<T> Stored<T> {
    /// The credential, or `None` for a malformed one (treated as unknown).
    pub fn usable(self) -> Option<T> {
        match self {
            Stored::Usable(value) => Some(value),
            Stored::Malformed(_) => None,
        }
    }
}

/// Why a credential item is refused: which one, which field, what is wrong
/// with it; never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// `consumer` or `display`.
    pub kind: &'static str,
    /// The consumer's id or the display's id (`display_id`), as stored.
    pub id: String,
    /// The attribute (column) at fault: `secrets`, `sections`, `revoked`, …
    pub field: &'static str,
    /// E.g. `text, not a list`, `an empty list`, `a list with a number in it`.
    pub problem: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:?}: {} is {}",
            self.kind, self.id, self.field, self.problem
        )
    }
}

impl<T> From<Result<T, Malformed>> for Stored<T> {
    fn from(read: Result<T, Malformed>) -> Self {
        match read {
            Ok(value) => Stored::Usable(value),
            Err(malformed) => Stored::Malformed(malformed),
        }
    }
}

/// The [`Malformed`] of the `kind` item `id`, for a field and its problem.
fn refusal<'a>(kind: &'static str, id: &'a str) -> impl Fn(&'static str, String) -> Malformed + 'a {
    move |field, problem| Malformed {
        kind,
        id: id.to_string(),
        field,
        problem,
    }
}

/// A consumer item whose attribute (column) `name` holds `field(name)`.
pub fn read_consumer(mut field: impl FnMut(&'static str) -> Raw) -> Stored<Consumer> {
    let id = field("id").as_text().unwrap_or_default().to_string();
    let malformed = refusal("consumer", &id);
    let mut read = || {
        if id.is_empty() {
            return Err(malformed("id", "missing or empty".to_string()));
        }
        let secrets = secrets(&field("secrets")).map_err(|p| malformed("secrets", p))?;
        let allow_sha1 = flag(&field("allow_sha1")).map_err(|p| malformed("allow_sha1", p))?;
        let require_signed_time =
            flag(&field("require_signed_time")).map_err(|p| malformed("require_signed_time", p))?;
        // A sandbox consumer's expiry: unreadable would mean "never expires".
        let expires_at = time(&field("expires_at")).map_err(|p| malformed("expires_at", p))?;
        Ok(Consumer {
            name: field("name").as_text().unwrap_or_default().to_string(),
            secrets,
            allow_sha1,
            created_at: time(&field("created_at"))
                .ok()
                .flatten()
                .unwrap_or_default(),
            expires_at,
            require_signed_time,
            heartbeat_seconds: heartbeat(&field("heartbeat_seconds")),
            id: id.clone(),
        })
    };
    read().into()
}

/// A consumer's heartbeat interval: absent is none. A hand edit out of
/// range is held to the range, and one that is no whole number supervises
/// at the longest interval: a link an admin meant to supervise stays
/// supervised (silence is never calm, DECISIONS §19), and the consumer's
/// requests are never refused for it.
pub fn heartbeat(raw: &Raw) -> Option<i64> {
    use crate::domain::links::{MAX_HEARTBEAT_SECONDS, MIN_HEARTBEAT_SECONDS};
    match raw {
        Raw::Missing => None,
        Raw::Number(text) => Some(match text.trim().parse::<i64>() {
            Ok(seconds) => seconds.clamp(MIN_HEARTBEAT_SECONDS, MAX_HEARTBEAT_SECONDS),
            Err(_) => MAX_HEARTBEAT_SECONDS,
        }),
        _ => Some(MAX_HEARTBEAT_SECONDS),
    }
}

/// A display item whose attribute (column) `name` holds `field(name)`.
pub fn read_display(mut field: impl FnMut(&'static str) -> Raw) -> Stored<Display> {
    let id = field("display_id")
        .as_text()
        .unwrap_or_default()
        .to_string();
    let malformed = refusal("display", &id);
    let mut read = || {
        if id.is_empty() {
            return Err(malformed("display_id", "missing or empty".to_string()));
        }
        let sections = sections(&field("sections")).map_err(|p| malformed("sections", p))?;
        let scope = field("scope")
            .as_text()
            .filter(|s| !s.is_empty())
            .map(Scope::from_key)
            .ok_or_else(|| malformed("scope", "missing or not text".to_string()))?;
        let token_hash = field("token_hash")
            .as_text()
            .map(str::to_string)
            .ok_or_else(|| malformed("token_hash", "missing or not text".to_string()))?;
        // Unreadable must not mean "not revoked".
        let revoked = flag(&field("revoked")).map_err(|p| malformed("revoked", p))?;
        Ok(Display {
            name: field("name").as_text().unwrap_or_default().to_string(),
            sections,
            scope,
            token_hash,
            created_at: time(&field("created_at"))
                .ok()
                .flatten()
                .unwrap_or_default(),
            revoked,
            id: id.clone(),
        })
    };
    read().into()
}

/// One or more secrets, each non-empty text. `Err` names the problem
/// without any secret.
pub fn secrets(raw: &Raw) -> Result<Vec<String>, String> {
    let secrets = texts(raw)?;
    if secrets.is_empty() {
        return Err("an empty list".to_string());
    }
    Ok(secrets)
}

/// Section codes (none = every section), each non-blank text.
pub fn sections(raw: &Raw) -> Result<Vec<String>, String> {
    texts(raw)
}

/// A list of non-blank texts.
fn texts(raw: &Raw) -> Result<Vec<String>, String> {
    let Raw::List(items) = raw else {
        return Err(raw.not_a("a list"));
    };
    items
        .iter()
        .map(|item| match item {
            Raw::Text(text) if !text.trim().is_empty() => Ok(text.clone()),
            Raw::Text(_) => Err("a list with a blank text in it".to_string()),
            other => Err(format!("a list with {} in it", other.kind())),
        })
        .collect()
}

/// `true` or `false`; absent is `false` (items written before the flag).
fn flag(raw: &Raw) -> Result<bool, String> {
    match raw {
        Raw::Missing => Ok(false),
        Raw::Bool(value) => Ok(*value),
        other => Err(other.not_a("true/false")),
    }
}

/// An RFC 3339 instant, or none when absent.
fn time(raw: &Raw) -> Result<Option<DateTime<Utc>>, String> {
    match raw {
        Raw::Missing => Ok(None),
        Raw::Text(text) => from_stored(text)
            .map(Some)
            .ok_or_else(|| "text, not an RFC 3339 time".to_string()),
        other => Err(other.not_a("text")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str) -> Raw {
        Raw::Text(value.to_string())
    }

    fn consumer_with(secrets: Raw) -> Stored<Consumer> {
        read_consumer(|field| match field {
            "id" => text("c1"),
            "name" => text("Zentrale"),
            "secrets" => secrets.clone(),
            "created_at" => text("2026-01-05T10:00:00Z"),
            _ => Raw::Missing,
        })
    }

    fn display_with(field_value: impl Fn(&str) -> Option<Raw>) -> Stored<Display> {
        read_display(|field| {
            field_value(field).unwrap_or_else(|| match field {
                "display_id" => text("d1"),
                "sections" => Raw::List(vec![text("A")]),
                "scope" => text("installation"),
                "token_hash" => text("ab"),
                "revoked" => Raw::Bool(false),
                _ => Raw::Missing,
            })
        })
    }

    fn problem<T: fmt::Debug>(stored: Stored<T>) -> (String, &'static str, String) {
        match stored {
            Stored::Malformed(m) => (m.id, m.field, m.problem),
            Stored::Usable(value) => panic!("usable: {value:?}"),
        }
    }

    #[test]
    fn a_hand_edited_heartbeat_stays_supervised_and_never_refuses_the_consumer() {
        assert_eq!(heartbeat(&Raw::Missing), None);
        assert_eq!(heartbeat(&Raw::Number("60".into())), Some(60));
        assert_eq!(
            heartbeat(&Raw::Number("5".into())),
            Some(30),
            "held to the range"
        );
        assert_eq!(heartbeat(&Raw::Number("99999".into())), Some(3600));
        assert_eq!(heartbeat(&Raw::Number("1.5".into())), Some(3600));
        assert_eq!(heartbeat(&text("often")), Some(3600));
        let consumer = read_consumer(|field| match field {
            "id" => text("c1"),
            "secrets" => Raw::List(vec![text("s")]),
            "heartbeat_seconds" => text("often"),
            _ => Raw::Missing,
        });
        assert_eq!(consumer.usable().unwrap().heartbeat_seconds, Some(3600));
    }

    #[test]
    fn a_list_of_secrets_is_usable() {
        let consumer = consumer_with(Raw::List(vec![text("old"), text("new")]))
            .usable()
            .unwrap();
        assert_eq!(consumer.secrets, ["old", "new"]);
        assert!(!consumer.allow_sha1 && !consumer.require_signed_time);
        assert_eq!(consumer.expires_at, None);
    }

    #[test]
    fn malformed_secrets_refuse_the_consumer_without_naming_a_secret() {
        for (raw, said) in [
            (text("s3cret"), "text, not a list"),
            (Raw::List(vec![]), "an empty list"),
            (
                Raw::List(vec![text("s3cret"), Raw::Number("5".into())]),
                "a list with a number in it",
            ),
            (Raw::List(vec![text(" ")]), "a list with a blank text in it"),
            (Raw::Missing, "missing"),
            (Raw::Other("a map"), "a map, not a list"),
        ] {
            let (id, field, problem) = problem(consumer_with(raw));
            assert_eq!(
                (id.as_str(), field, problem.as_str()),
                ("c1", "secrets", said)
            );
            assert!(!problem.contains("s3cret"));
        }
    }

    #[test]
    fn a_flag_or_expiry_that_cannot_be_read_refuses_the_consumer() {
        let read = |name: &'static str, raw: Raw| {
            read_consumer(|field| match field {
                "id" => text("c1"),
                "secrets" => Raw::List(vec![text("s")]),
                f if f == name => raw.clone(),
                _ => Raw::Missing,
            })
        };
        assert_eq!(
            problem(read("require_signed_time", text("yes"))).1,
            "require_signed_time"
        );
        assert_eq!(
            problem(read("allow_sha1", Raw::Number("1".into()))).1,
            "allow_sha1"
        );
        assert_eq!(
            problem(read("expires_at", text("tomorrow"))).1,
            "expires_at"
        );
        assert!(
            read("allow_sha1", Raw::Bool(true))
                .usable()
                .unwrap()
                .allow_sha1
        );
    }

    #[test]
    fn a_display_needs_a_list_of_sections_and_a_readable_revoked() {
        let display = display_with(|_| None).usable().unwrap();
        assert_eq!(display.sections, ["A"]);
        assert!(!display.revoked);
        let every = display_with(|f| (f == "sections").then(|| Raw::List(vec![])));
        assert_eq!(every.usable().unwrap().sections, Vec::<String>::new());
        for (field, raw, said) in [
            ("sections", text("A"), "text, not a list"),
            ("sections", Raw::Missing, "missing"),
            (
                "sections",
                Raw::List(vec![Raw::Bool(true)]),
                "a list with true/false in it",
            ),
            ("revoked", text("true"), "text, not true/false"),
        ] {
            let (id, named, problem) = problem(display_with(|f| (f == field).then(|| raw.clone())));
            assert_eq!((id.as_str(), named, problem.as_str()), ("d1", field, said));
        }
    }

    #[test]
    fn the_log_text_names_kind_id_field_and_problem() {
        let malformed = Malformed {
            kind: "consumer",
            id: "c1".into(),
            field: "secrets",
            problem: "an empty list".into(),
        };
        assert_eq!(
            malformed.to_string(),
            "consumer \"c1\": secrets is an empty list"
        );
    }
}
