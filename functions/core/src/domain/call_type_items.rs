//! Hand-edited call types, read field by field (DECISIONS §7): the one place
//! both stores' items become [`CallType`]s.
//!
//! A field that is missing, of the wrong type or out of range falls back to a
//! fail-safe value, never to one that outranks or silences a call: the seeded
//! value of that name where there is one, else a generic value no more urgent
//! than the defaults and never silent. Every fallback is returned as a
//! [`Fallback`], for the log (`crate::store::fallbacks`) and for
//! `nurse-call-admin call-types check`.
//!
//! Ids: a valid id (a whole number from 1 to 2^53 - 1, safe in JavaScript)
//! that no other item claims is kept. Of two items with the same id, the one
//! seeded with that id keeps it, else the first by name. An item without a
//! usable id, or one that lost it, gets the seeded id of its name when that
//! is free, else one derived from its name ([`generated_id`]): the same on
//! every read and in every Lambda instance, unique in the stack.

use std::collections::{BTreeMap, HashMap, HashSet};

use sha2::{Digest, Sha256};

use crate::domain::alarm::Policy;
use crate::domain::call_types::{default_call_types, seeded_accept_timeout};
use crate::domain::model::CallType;
use crate::domain::raw::Raw;

/// The largest id and priority: 2^53 - 1, exact in JavaScript.
pub(crate) const MAX_SAFE: i64 = (1 << 53) - 1;
/// Generated ids lie in 2^52 ..= 2^53 - 1, far above the ids the seeding and
/// the admin command give (1, 2, 3 …).
const GENERATED_FROM: i64 = 1 << 52;
/// The priority of a type that has no seeded one: less urgent than Notruf
/// and Flucht (1), WC (2) and Normalruf (3).
pub(crate) const FALLBACK_PRIORITY: i64 = 5;
pub(crate) const FALLBACK_COLOR: &str = "#808080";
pub(crate) const FALLBACK_INTERVAL: i64 = 60;
pub(crate) const FALLBACK_MAXLOOPS: i64 = 0;
pub(crate) const FALLBACK_URGENCY: &str = "NORMAL";
pub(crate) const FALLBACK_KIND: &str = crate::domain::model::CALL_KIND;
/// The longest accept timeout (DECISIONS §19): a day.
pub const MAX_ACCEPT_TIMEOUT: i64 = 86_400;
/// What `used` says of an item that is skipped (no usable name).
pub(crate) const SKIPPED: &str = "skipped";

/// A call-type item as stored: each field as the store found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTypeItem {
    /// `name`, the table's key; an item without a non-blank text is skipped.
    pub name: Raw,
    /// `id`: a whole number from 1 to 2^53 - 1 that no other item claims.
    pub id: Raw,
    /// `internal_name`: any text, may be empty.
    pub internal_name: Raw,
    /// `urgency`: one word (`NORMAL`, `URGENT`, `EMERGENCY` as seeded).
    pub urgency: Raw,
    /// `priority`: a whole number from 1 (the most urgent).
    pub priority: Raw,
    /// The attribute `type`: one word (`CALL`, `PRESENCE`, `FAULT` as seeded).
    pub kind: Raw,
    /// `color`: `#rrggbb`.
    pub color: Raw,
    /// `notify`: true or false (SQLite's 0 and 1 arrive as such).
    pub notify: Raw,
    /// `notification_interval`: whole seconds, 0 or more.
    pub notification_interval: Raw,
    /// `notification_maxloops`: a whole number, 0 or more.
    pub notification_maxloops: Raw,
    /// `notification_sound`: any text, may be empty.
    pub notification_sound: Raw,
    /// The escalation policy's JSON text (DECISIONS §14).
    pub escalation: Raw,
    /// `accept_timeout`: whole seconds, 1 to a day (DECISIONS §19).
    pub accept_timeout: Raw,
}

impl CallTypeItem {
    /// The item whose attribute (column) `name` holds `field(name)`; the
    /// names are those of docs/data-model.md, the same in both stores.
    pub fn from_fields(mut field: impl FnMut(&'static str) -> Raw) -> Self {
        CallTypeItem {
            name: field("name"),
            id: field("id"),
            internal_name: field("internal_name"),
            urgency: field("urgency"),
            priority: field("priority"),
            kind: field("type"),
            color: field("color"),
            notify: field("notify"),
            notification_interval: field("notification_interval"),
            notification_maxloops: field("notification_maxloops"),
            notification_sound: field("notification_sound"),
            escalation: field("escalation"),
            accept_timeout: field("accept_timeout"),
        }
    }
}

/// The item as the seeding and the admin command write `t`.
impl From<&CallType> for CallTypeItem {
    fn from(t: &CallType) -> Self {
        let text = |value: &str| Raw::Text(value.to_string());
        let number = |value: i64| Raw::Number(value.to_string());
        CallTypeItem {
            name: text(&t.name),
            id: number(t.id),
            internal_name: text(&t.internal_name),
            urgency: text(&t.urgency),
            priority: number(t.priority),
            kind: text(&t.kind),
            color: text(&t.color),
            notify: Raw::Bool(t.notify),
            notification_interval: number(t.notification_interval),
            notification_maxloops: number(t.notification_maxloops),
            notification_sound: text(&t.notification_sound),
            escalation: text(&t.escalation.to_json()),
            accept_timeout: number(t.accept_timeout),
        }
    }
}

/// One field the service did not take as stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fallback {
    /// The item's name as stored (the table's key).
    pub item: String,
    /// The attribute, as in the table (`priority`, `type`, …).
    pub field: &'static str,
    /// What the item holds ([`Raw`]'s description: `"high"`, `missing`, `7`).
    pub found: String,
    /// What the service uses instead (`3`, `"#808080"`, `true`), or
    /// [`SKIPPED`] for an item without a usable name.
    pub used: String,
    /// Why: `missing`, `text, not a number`, `out of range (1 to …)`, …
    pub problem: String,
}

/// The call types of the stored items, ordered by id, and the fallbacks
/// that made them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTypesRead {
    /// The call types of the items with a usable name, ordered by id (then
    /// name).
    pub types: Vec<CallType>,
    /// Ordered by item, then field.
    pub fallbacks: Vec<Fallback>,
}

/// Reads `items` under the rules of DECISIONS §7 (see the module).
pub fn read_items(items: Vec<CallTypeItem>) -> CallTypesRead {
    let seeded: HashMap<String, CallType> = default_call_types()
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect();
    let mut fallbacks = Vec::new();
    // By name, so that which duplicate keeps an id, and the probing of
    // generated ids, never depends on the order a Scan returned.
    let mut named: BTreeMap<String, CallTypeItem> = BTreeMap::new();
    for item in items {
        match &item.name {
            Raw::Text(name) if !name.trim().is_empty() => {
                named.insert(name.clone(), item);
            }
            other => fallbacks.push(Fallback {
                item: other.as_text().unwrap_or_default().to_string(),
                field: "name",
                found: other.to_string(),
                used: SKIPPED.to_string(),
                problem: match other {
                    Raw::Text(_) => "blank".to_string(),
                    other => other.not_a("text"),
                },
            }),
        }
    }

    let ids = assign_ids(&named, &seeded);
    let mut types = Vec::with_capacity(named.len());
    for (name, item) in &named {
        let mut fields = Fields {
            item: name,
            seeded: seeded.get(name),
            fallbacks: &mut fallbacks,
        };
        let (id, id_fallback) = &ids[name];
        if let Some((problem, used)) = id_fallback {
            fields.fell_back("id", &item.id, used.to_string(), problem.clone());
        }
        types.push(CallType {
            id: *id,
            name: name.clone(),
            internal_name: fields.text("internal_name", &item.internal_name, |_| ""),
            urgency: fields.word("urgency", &item.urgency, |t| &t.urgency, FALLBACK_URGENCY),
            priority: fields.integer(
                "priority",
                &item.priority,
                1..=MAX_SAFE,
                |t| t.priority,
                FALLBACK_PRIORITY,
            ),
            kind: fields.word("type", &item.kind, |t| &t.kind, FALLBACK_KIND),
            color: fields.color(&item.color),
            notify: fields.notify(&item.notify),
            notification_interval: fields.integer(
                "notification_interval",
                &item.notification_interval,
                0..=MAX_SAFE,
                |t| t.notification_interval,
                FALLBACK_INTERVAL,
            ),
            notification_maxloops: fields.integer(
                "notification_maxloops",
                &item.notification_maxloops,
                0..=MAX_SAFE,
                |t| t.notification_maxloops,
                FALLBACK_MAXLOOPS,
            ),
            notification_sound: fields.text("notification_sound", &item.notification_sound, |t| {
                &t.notification_sound
            }),
            escalation: fields.escalation(&item.escalation),
            accept_timeout: fields.accept_timeout(&item.accept_timeout),
        });
    }
    types.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.name.cmp(&b.name)));
    // Stable: each item's fields stay in the order read.
    fallbacks.sort_by(|a, b| a.item.cmp(&b.item));
    CallTypesRead { types, fallbacks }
}

/// Each name's id, and for an id that is not the stored one why and what
/// was stored.
type Ids = HashMap<String, (i64, Option<(String, i64)>)>;

fn assign_ids(named: &BTreeMap<String, CallTypeItem>, seeded: &HashMap<String, CallType>) -> Ids {
    // Who claims which valid id, in name order.
    let mut claims: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    let mut problems: Vec<(&str, String)> = Vec::new();
    for (name, item) in named {
        match item.id.integer_in(1..=MAX_SAFE) {
            Ok(id) => claims.entry(id).or_default().push(name),
            Err(problem) => problems.push((name, problem)),
        }
    }
    let mut ids: Ids = HashMap::new();
    let mut taken: HashSet<i64> = HashSet::new();
    for (&id, claimants) in &claims {
        let seeded_with_it = claimants
            .iter()
            .find(|name| seeded.get(**name).is_some_and(|t| t.id == id));
        let keeper = *seeded_with_it.unwrap_or(&claimants[0]);
        ids.insert(keeper.to_string(), (id, None));
        taken.insert(id);
        for other in claimants.iter().filter(|name| **name != keeper) {
            let taken_by = serde_json::to_string(keeper).expect("strings serialise");
            problems.push((other, format!("taken by {taken_by}")));
        }
    }
    // Names in order again: the probing below must not depend on whether an
    // id was missing or taken.
    problems.sort();
    for (name, problem) in problems {
        let own = seeded
            .get(name)
            .map(|t| t.id)
            .filter(|id| !taken.contains(id))
            .unwrap_or_else(|| generated_id(name, &taken));
        taken.insert(own);
        ids.insert(name.to_string(), (own, Some((problem, own))));
    }
    ids
}

/// An id of `name`'s own: from the SHA-256 of the name, in the generated
/// range, the next free one when that is taken. SHA-256 rather than the
/// standard library's hasher, whose output may change between Rust releases.
pub(crate) fn generated_id(name: &str, taken: &HashSet<i64>) -> i64 {
    let digest = Sha256::digest(name.as_bytes());
    let first = u64::from_be_bytes(digest[..8].try_into().expect("eight bytes"));
    let span = (MAX_SAFE - GENERATED_FROM + 1) as u64;
    let mut offset = first % span;
    loop {
        let id = GENERATED_FROM + offset as i64;
        if !taken.contains(&id) {
            return id;
        }
        offset = (offset + 1) % span;
    }
}

/// Reads the fields of one item, noting each fallback.
struct Fields<'a> {
    item: &'a str,
    seeded: Option<&'a CallType>,
    fallbacks: &'a mut Vec<Fallback>,
}

impl Fields<'_> {
    fn fell_back(&mut self, field: &'static str, found: &Raw, used: String, problem: String) {
        self.fallbacks.push(Fallback {
            item: self.item.to_string(),
            field,
            found: found.to_string(),
            used,
            problem,
        });
    }

    fn quoted(text: &str) -> String {
        serde_json::to_string(text).expect("strings serialise")
    }

    /// Any text (may be empty); else the seeded one.
    fn text(
        &mut self,
        field: &'static str,
        raw: &Raw,
        seeded: impl Fn(&CallType) -> &str,
    ) -> String {
        if let Raw::Text(text) = raw {
            return text.clone();
        }
        let used = self.seeded.map(seeded).unwrap_or_default().to_string();
        self.fell_back(field, raw, Self::quoted(&used), raw.not_a("text"));
        used
    }

    /// One word (what the admin command accepts for urgency and type).
    fn word(
        &mut self,
        field: &'static str,
        raw: &Raw,
        seeded: impl Fn(&CallType) -> &str,
        fallback: &str,
    ) -> String {
        let problem = match raw {
            Raw::Text(text)
                if !text.is_empty()
                    && text.chars().count() <= 64
                    && !text.contains(char::is_whitespace) =>
            {
                return text.clone();
            }
            Raw::Text(_) => "not one word".to_string(),
            other => other.not_a("text"),
        };
        let used = self.seeded.map_or(fallback, seeded).to_string();
        self.fell_back(field, raw, Self::quoted(&used), problem);
        used
    }

    fn integer(
        &mut self,
        field: &'static str,
        raw: &Raw,
        range: std::ops::RangeInclusive<i64>,
        seeded: impl Fn(&CallType) -> i64,
        fallback: i64,
    ) -> i64 {
        match raw.integer_in(range) {
            Ok(value) => value,
            Err(problem) => {
                let used = self.seeded.map_or(fallback, seeded);
                self.fell_back(field, raw, used.to_string(), problem);
                used
            }
        }
    }

    /// `#rrggbb`; else the seeded colour of the name, else grey.
    fn color(&mut self, raw: &Raw) -> String {
        let problem = match raw {
            Raw::Text(text) if is_rrggbb(text) => return text.clone(),
            Raw::Text(_) => "not #rrggbb".to_string(),
            other => other.not_a("text"),
        };
        let used = self.seeded.map_or(FALLBACK_COLOR, |t| &t.color).to_string();
        self.fell_back("color", raw, Self::quoted(&used), problem);
        used
    }

    /// The escalation policy (DECISIONS §14). Missing (an item stored
    /// before alarms existed): the seeded policy of the name, without a
    /// fallback line; a name that is not seeded gets [`Policy::fallback`],
    /// noted. Invalid: [`Policy::fallback`], noted (logged as an error),
    /// even for a seeded name: never a stopped alarm.
    fn escalation(&mut self, raw: &Raw) -> Policy {
        let problem = match raw {
            Raw::Missing => match self.seeded {
                Some(seeded) => return seeded.escalation.clone(),
                None => raw.not_a("text"),
            },
            Raw::Text(json) => match Policy::parse(json) {
                Ok(policy) => return policy,
                Err(problem) => problem,
            },
            other => other.not_a("text"),
        };
        let used = Policy::fallback();
        self.fell_back("escalation", raw, used.to_json(), problem);
        used
    }

    /// The accept timeout (DECISIONS §19): whole seconds from 1 to
    /// [`MAX_ACCEPT_TIMEOUT`]. Missing (an item stored before accept
    /// timeouts existed): the seeded value of the name, else
    /// `FALLBACK_ACCEPT_TIMEOUT` (300), both §19's own values, without a
    /// fallback line. Unreadable or out of range: the same values, noted.
    fn accept_timeout(&mut self, raw: &Raw) -> i64 {
        let seeded = seeded_accept_timeout(self.item);
        if *raw == Raw::Missing {
            return seeded;
        }
        self.integer(
            "accept_timeout",
            raw,
            1..=MAX_ACCEPT_TIMEOUT,
            |_| seeded,
            seeded,
        )
    }

    /// `true` or `false`; else `true`: a call is never silenced by an edit.
    fn notify(&mut self, raw: &Raw) -> bool {
        if let Raw::Bool(value) = raw {
            return *value;
        }
        self.fell_back("notify", raw, "true".to_string(), raw.not_a("true/false"));
        true
    }
}

fn is_rrggbb(text: &str) -> bool {
    text.strip_prefix('#')
        .is_some_and(|hex| hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests;
