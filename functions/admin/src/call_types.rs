//! `call-types …`: list, edit, seed and check the call types (DECISIONS §7).
//! The service reads them on every request locally and within 60 s in AWS.
//!
//! `set` changes only the fields given. A name that does not exist yet is
//! created with the next free id (ids 1–10 belong to the ten defaults) and,
//! for fields not given: empty internal name, NORMAL, CALL, no notification,
//! the fallback escalation (section at once, the house after 60 s).
//! `--escalation` takes the policy as JSON (DECISIONS §14) and refuses an
//! invalid one with the reason. `list` and `show` print the call types
//! (`rows.rs`); `check` lists the fallbacks of hand-edited items (`check.rs`).

use clap::{Args, Subcommand};
use serde::Serialize;

use nurse_call_core::{
    AdminStore, CallType, MAX_ACCEPT_TIMEOUT, admin_text, alarm::Policy, default_call_types,
    has_control_characters, optional_admin_text,
};

use crate::failure::{Failure, Outcome};
use crate::output::Output;

mod check;
mod rows;

use rows::{CallTypeRow, call_type_table};

const CACHE_NOTE: &str = "The Lambda functions see the change within 60 s; \
                          the local server at once.";

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the call types, ordered by id, with their escalation policy.
    List,
    /// Show one call type with every field and its escalation policy level by level.
    Show {
        /// The call type's name, e.g. Notruf.
        name: String,
    },
    /// Create a call type or change the given fields of one.
    Set(Box<SetArgs>),
    /// Add those of the ten default call types that are missing (never
    /// overwrites an edit).
    Seed,
    /// List the fields of hand-edited items the service does not take as
    /// stored, and what it uses instead; exit status 1 when there is any.
    Check,
}

#[derive(Debug, Args)]
pub(crate) struct SetArgs {
    /// The call type's name (the `event` of display requests), e.g. Notruf.
    name: String,
    /// The name a connected central system uses for it (may be empty).
    #[arg(long)]
    internal_name: Option<String>,
    /// Priority, a whole number ≥ 1; 1 is the most urgent. Required to create.
    #[arg(long, value_parser = parse_priority)]
    priority: Option<i64>,
    /// Display colour, #rrggbb. Required to create.
    #[arg(long, value_parser = parse_color)]
    color: Option<String>,
    /// Urgency, e.g. NORMAL, URGENT, EMERGENCY.
    #[arg(long, value_parser = parse_word)]
    urgency: Option<String>,
    /// Kind of call type, e.g. CALL, PRESENCE, FAULT.
    #[arg(long = "type", value_name = "TYPE", value_parser = parse_word)]
    kind: Option<String>,
    /// Whether displays notify (true or false).
    #[arg(long, value_name = "true|false")]
    notify: Option<bool>,
    /// Seconds between notifications (≥ 0).
    #[arg(long, value_name = "SECONDS", value_parser = parse_count)]
    notification_interval: Option<i64>,
    /// How often a notification repeats (≥ 0).
    #[arg(long, value_name = "COUNT", value_parser = parse_count)]
    notification_maxloops: Option<i64>,
    /// Sound file name, e.g. emergency.mp3.
    #[arg(long, value_name = "FILE")]
    notification_sound: Option<String>,
    /// Who is alerted when (docs/alarms.md): a JSON list of levels, e.g.
    /// '[{"after":0,"to":"section"},{"after":60,"to":"house"},{"after":180,"to":"group:Leitung"}]';
    /// '[]' for no alarm.
    #[arg(long, value_name = "JSON")]
    escalation: Option<String>,
    /// Seconds an accept waits for a presence or the close before the
    /// alarm resumes (1 to 86400; DECISIONS §19, docs/alarms.md).
    #[arg(long, value_name = "SECONDS", value_parser = parse_accept_timeout)]
    accept_timeout: Option<i64>,
    /// The policy of `escalation`, read by [`SetArgs::checked`].
    #[arg(skip)]
    policy: Option<Policy>,
}

pub(crate) async fn run(command: Command, store: &dyn AdminStore, out: Output) -> Outcome {
    match command {
        Command::List => list(store, out).await,
        Command::Show { name } => rows::show(store, out, &name).await,
        Command::Set(args) => set(store, out, *args).await,
        Command::Seed => seed(store, out).await,
        Command::Check => check::run(store, out).await,
    }
}

async fn list(store: &dyn AdminStore, out: Output) -> Outcome {
    let rows: Vec<CallTypeRow> = store
        .call_types()
        .await?
        .types
        .iter()
        .map(Into::into)
        .collect();
    out.print(&rows, |rows| {
        call_type_table(&rows.iter().collect::<Vec<_>>())
    });
    if rows.is_empty() {
        out.note("`nurse-call-admin call-types seed` adds the ten default call types.");
    }
    Ok(())
}

async fn set(store: &dyn AdminStore, out: Output, args: SetArgs) -> Outcome {
    let args = args.checked()?;
    let name = args.name.clone();
    let existing = store.call_types().await?.types;
    let (mut call_type, created) = match existing.iter().find(|t| t.name == name) {
        Some(found) => {
            if !args.changes_something() {
                return Err(Failure::refused(format!(
                    "nothing to change for call type {name:?}: give at least one option \
                     (see `nurse-call-admin call-types set --help`)"
                )));
            }
            (found.clone(), false)
        }
        None => (new_call_type(&name, &existing, &args)?, true),
    };
    args.apply(&mut call_type);
    store.put_call_type(&call_type).await?;

    #[derive(Serialize)]
    struct Set {
        created: bool,
        #[serde(flatten)]
        call_type: CallTypeRow,
    }
    out.print(
        &Set {
            created,
            call_type: CallTypeRow::from(&call_type),
        },
        |set| {
            let verb = if set.created { "Created" } else { "Updated" };
            format!(
                "{verb} call type {:?} (id {}).\n{}",
                set.call_type.name,
                set.call_type.id,
                call_type_table(&[&set.call_type])
            )
        },
    );
    out.note(CACHE_NOTE);
    Ok(())
}

/// A new call type: the next free id, fallbacks for what `args` does not give.
fn new_call_type(name: &str, existing: &[CallType], args: &SetArgs) -> Result<CallType, Failure> {
    if args.priority.is_none() || args.color.is_none() {
        return Err(Failure::refused(format!(
            "call type {name:?} does not exist; to create it give at least --priority and --color"
        )));
    }
    // Ids 1–10 stay reserved for the defaults, so that seeding later still works.
    let reserved = i64::try_from(default_call_types().len()).unwrap_or(i64::MAX);
    let highest = existing
        .iter()
        .map(|t| t.id)
        .max()
        .unwrap_or(0)
        .max(reserved);
    Ok(CallType {
        id: highest + 1,
        name: name.to_string(),
        internal_name: String::new(),
        urgency: "NORMAL".into(),
        priority: 0,
        kind: "CALL".into(),
        color: String::new(),
        notify: false,
        notification_interval: 0,
        notification_maxloops: 0,
        notification_sound: String::new(),
        // Alert rather than stay silent: a new type escalates like the
        // fallback until an admin says otherwise (`--escalation`).
        escalation: Policy::fallback(),
        // DECISIONS §19's value for a type without a seeded one.
        accept_timeout: 300,
    })
}

impl SetArgs {
    /// The name and the free texts trimmed and checked ([`admin_text`]); the
    /// internal name and the sound may be empty. The escalation policy is
    /// read; an invalid one is refused with what is wrong ([`Policy::parse`]).
    fn checked(self) -> Result<SetArgs, Failure> {
        let optional = |field: &str, text: Option<String>| {
            text.map(|text| optional_admin_text(field, &text))
                .transpose()
                .map_err(Failure::refused)
        };
        Ok(SetArgs {
            name: admin_text("the name", &self.name).map_err(Failure::refused)?,
            internal_name: optional("--internal-name", self.internal_name)?,
            notification_sound: optional("--notification-sound", self.notification_sound)?,
            policy: self
                .escalation
                .as_deref()
                .map(|json| {
                    Policy::parse(json).map_err(|problem| {
                        Failure::refused(format!(
                            "--escalation is not a valid policy: {problem} \
                             (e.g. '[{{\"after\":0,\"to\":\"section\"}},{{\"after\":60,\"to\":\"house\"}}]', \
                             see docs/alarms.md)"
                        ))
                    })
                })
                .transpose()?,
            ..self
        })
    }

    fn changes_something(&self) -> bool {
        self.internal_name.is_some()
            || self.priority.is_some()
            || self.color.is_some()
            || self.urgency.is_some()
            || self.kind.is_some()
            || self.notify.is_some()
            || self.notification_interval.is_some()
            || self.notification_maxloops.is_some()
            || self.notification_sound.is_some()
            || self.policy.is_some()
            || self.accept_timeout.is_some()
    }

    /// Sets the fields given ([`SetArgs::checked`]); the others keep their value.
    fn apply(&self, t: &mut CallType) {
        if let Some(v) = &self.internal_name {
            t.internal_name.clone_from(v);
        }
        if let Some(v) = self.priority {
            t.priority = v;
        }
        if let Some(v) = &self.color {
            t.color.clone_from(v);
        }
        if let Some(v) = &self.urgency {
            t.urgency.clone_from(v);
        }
        if let Some(v) = &self.kind {
            t.kind.clone_from(v);
        }
        if let Some(v) = self.notify {
            t.notify = v;
        }
        if let Some(v) = self.notification_interval {
            t.notification_interval = v;
        }
        if let Some(v) = self.notification_maxloops {
            t.notification_maxloops = v;
        }
        if let Some(v) = &self.notification_sound {
            t.notification_sound.clone_from(v);
        }
        if let Some(v) = &self.policy {
            t.escalation.clone_from(v);
        }
        if let Some(v) = self.accept_timeout {
            t.accept_timeout = v;
        }
    }
}

async fn seed(store: &dyn AdminStore, out: Output) -> Outcome {
    let before: Vec<String> = store
        .call_types()
        .await?
        .types
        .into_iter()
        .map(|t| t.name)
        .collect();
    let defaults = default_call_types();
    store.seed_call_types(&defaults).await?;
    let (kept, added): (Vec<String>, Vec<String>) = defaults
        .into_iter()
        .map(|t| t.name)
        .partition(|name| before.contains(name));
    #[derive(Serialize)]
    struct Seeded {
        added: Vec<String>,
        kept: Vec<String>,
    }
    out.print(&Seeded { added, kept }, |s| {
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        format!(
            "Added {} default call types: {}\nKept {} existing ones as they are: {}\n",
            s.added.len(),
            list(&s.added),
            s.kept.len(),
            list(&s.kept)
        )
    });
    Ok(())
}

/// `#rrggbb`, stored in lowercase.
fn parse_color(text: &str) -> Result<String, String> {
    let text = text.trim();
    match text.strip_prefix('#') {
        Some(hex) if hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(text.to_ascii_lowercase())
        }
        _ => Err("a colour is written #rrggbb, e.g. #e74c3c".to_string()),
    }
}

fn parse_priority(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(priority) if priority >= 1 => Ok(priority),
        _ => Err("the priority is a whole number ≥ 1 (1 is the most urgent)".to_string()),
    }
}

fn parse_count(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(count) if count >= 0 => Ok(count),
        _ => Err("a whole number ≥ 0 is expected".to_string()),
    }
}

fn parse_accept_timeout(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(seconds) if (1..=MAX_ACCEPT_TIMEOUT).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "the accept timeout is whole seconds from 1 to {MAX_ACCEPT_TIMEOUT}"
        )),
    }
}

/// Urgency and type: one word, kept as written (the service passes it on).
fn parse_word(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.is_empty()
        || text.chars().count() > 64
        || text.contains(char::is_whitespace)
        || has_control_characters(text)
    {
        Err("one word is expected, e.g. NORMAL".to_string())
    } else {
        Ok(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_hash_and_six_hex_digits() {
        assert_eq!(parse_color("#E74C3C").unwrap(), "#e74c3c");
        for bad in ["e74c3c", "#e74c3", "#e74c3cc", "#g74c3c", "red", ""] {
            assert!(parse_color(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn priorities_are_positive_integers() {
        assert_eq!(parse_priority("1").unwrap(), 1);
        for bad in ["0", "-1", "1.5", "high"] {
            assert!(parse_priority(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn urgency_and_type_are_one_word_without_control_characters() {
        assert_eq!(parse_word(" URGENT ").unwrap(), "URGENT");
        for bad in ["", "VERY URGENT", "URGENT\u{7}", "\u{1b}[2J"] {
            assert!(parse_word(bad).is_err(), "{bad:?} accepted");
        }
    }

    fn args(name: &str) -> SetArgs {
        SetArgs {
            name: name.into(),
            internal_name: None,
            priority: None,
            color: None,
            urgency: None,
            kind: None,
            notify: None,
            notification_interval: None,
            notification_maxloops: None,
            notification_sound: None,
            escalation: None,
            accept_timeout: None,
            policy: None,
        }
    }

    fn refusal(args: SetArgs) -> String {
        match args.checked() {
            Err(Failure::Refused(message)) => message,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn names_and_texts_are_trimmed_and_checked() {
        let checked = SetArgs {
            internal_name: Some(" WC ".into()),
            notification_sound: Some(" ".into()),
            ..args(" Notruf ")
        }
        .checked()
        .unwrap();
        assert_eq!(checked.name, "Notruf");
        assert_eq!(checked.internal_name.as_deref(), Some("WC"));
        assert_eq!(checked.notification_sound.as_deref(), Some(""));

        assert_eq!(refusal(args(" ")), "the name is empty");
        assert_eq!(
            refusal(args("Not\u{1b}ruf")),
            "the name contains a control character"
        );
        assert_eq!(
            refusal(SetArgs {
                internal_name: Some("W\u{0}C".into()),
                ..args("Notruf")
            }),
            "--internal-name contains a control character"
        );
        assert_eq!(
            refusal(SetArgs {
                notification_sound: Some("alarm\n.mp3".into()),
                ..args("Notruf")
            }),
            "--notification-sound contains a control character"
        );
    }

    #[test]
    fn escalation_policies_are_read_or_refused_with_the_reason() {
        let checked = SetArgs {
            escalation: Some(r#"[{"after":0,"to":"section"},{"after":2,"to":"house"}]"#.into()),
            ..args("Notruf")
        }
        .checked()
        .unwrap();
        assert!(checked.changes_something());
        let mut notruf = default_call_types()
            .into_iter()
            .find(|t| t.name == "Notruf")
            .unwrap();
        checked.apply(&mut notruf);
        assert_eq!(
            notruf.escalation.to_json(),
            r#"[{"after":0,"to":"section"},{"after":2,"to":"house"}]"#
        );
        let refused = refusal(SetArgs {
            escalation: Some(r#"[{"after":5,"to":"section"}]"#.into()),
            ..args("Notruf")
        });
        assert!(
            refused.starts_with(
                "--escalation is not a valid policy: the first level must have after 0 (e.g. '["
            ),
            "{refused}"
        );
    }

    #[test]
    fn new_ids_follow_the_highest_and_skip_the_defaults() {
        let args = SetArgs {
            name: "Test".into(),
            internal_name: None,
            priority: Some(3),
            color: Some("#000000".into()),
            urgency: None,
            kind: None,
            notify: None,
            notification_interval: None,
            notification_maxloops: None,
            notification_sound: None,
            escalation: None,
            accept_timeout: None,
            policy: None,
        };
        assert_eq!(new_call_type("Test", &[], &args).unwrap().id, 11);
        let mut many = default_call_types();
        many[3].id = 40;
        assert_eq!(new_call_type("Test", &many, &args).unwrap().id, 41);
    }
}
