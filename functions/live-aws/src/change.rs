//! From a record of the data table's DynamoDB stream to what displays are
//! told (DECISIONS §11), without any I/O: which records are a change a
//! display shows, and the message for it.
//!
//! A display shows open calls with their alarms, and elements, so these
//! records count:
//!
//! - a call item (`sk` `call`) inserted open: `call.opened`;
//! - a call item modified from open (no `closed_at` in the old image) to
//!   closed: `call.closed`;
//! - an open call item whose alarm changed in a way displays see (its
//!   `changes` grew, DECISIONS §14): `call.accepted` when it was accepted,
//!   `call.unattended` when it became unattended, else `call.escalated`;
//! - an element item (`sk` `element`) inserted, or modified with a larger
//!   `version`: `element.updated`.
//!
//! A silence's history item (`silence`, DECISIONS §19) inserted is
//! `consumer.silent`, and its `ended_at` set `consumer.back`, to every
//! display and staff page of the link's scope ([`Change::Link`]).
//!
//! A credential marker inserted (`credential#gone`, written with a staff
//! member's or display's rotate, revoke or erase) is no message but
//! [`Change::CredentialGone`]: the holder's connections are closed (§20).
//!
//! Everything else is nothing to send: the open-call locks and index items
//! (they repeat the call), audit items, staff and duties, hash mismatches,
//! removals (TTL, erasure), a call's other modifications (an alarm's
//! re-alert, a closed call's alarm stopping: the close was its last
//! message), an element write that changed nothing a display shows (the
//! version stays). `call.declined` is for staff pages only. The images are read with the store's own item
//! parsing (`nurse_call_dynamodb::item`), so the stream and the store cannot
//! disagree about what an item means.

use std::collections::HashMap;
use std::fmt;

use aws_lambda_events::dynamodb::EventRecord;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use nurse_call_core::{
    Call, CallType, Element, Scope, Settings,
    alarm::AlarmStatus,
    links::{SilenceRecord, link_event},
    live::{AlarmNews, LiveEvent, LiveMessage},
};
use nurse_call_dynamodb::credentials_gone::{CREDENTIAL_GONE_PK, CredentialGone};
use nurse_call_dynamodb::item::{
    CALL_SK, ELEMENT_SK, Item, alarm_from_item, call_from_item, element_from_item, get_n, get_s,
};
use nurse_call_dynamodb::{SILENCE_PK, silence_from_item};

/// A change a display shows, read from one stream record.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Opened (no `closed_at`) or closed: the message follows the call's state.
    Call {
        /// Whose displays get the message (the call item's scope).
        scope: Scope,
        /// Boxed: a call with its alarm is several times an element's size.
        call: Box<Call>,
    },
    /// An open call's alarm changed in a way displays see.
    Alarm {
        /// Whose displays get the message.
        scope: Scope,
        /// The call with its changed alarm (boxed as in [`Change::Call`]).
        call: Box<Call>,
        /// Which alarm message displays get: accepted, unattended or escalated.
        news: AlarmNews,
    },
    /// An element inserted, or changed in what displays show (its `version`
    /// grew): `element.updated`.
    Element {
        /// Whose displays get the message.
        scope: Scope,
        /// The element as written.
        element: Element,
    },
    /// A staff member's or a display's credential stopped working (its
    /// marker item inserted, `nurse_call_dynamodb::credentials_gone`): its
    /// open connections are closed, no message is sent (DECISIONS §20).
    CredentialGone(CredentialGone),
    /// A central system's silence began (its history item inserted) or
    /// ended (its `ended_at` set): `consumer.silent` or `consumer.back` to
    /// every display and staff page of the link's scope (DECISIONS §19).
    Link {
        /// The silence as its history item keeps it.
        silence: SilenceRecord,
        /// Whether it ended (`consumer.back`).
        back: bool,
    },
}

/// A record that should be a change but cannot be read (an item without a
/// required attribute, a stream without old images). It is logged and
/// skipped: retrying it would never succeed and would hold up every record
/// behind it. The reason names attributes, never values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poison(pub String);

impl fmt::Display for Poison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Change {
    /// The change in `record`, if it is one a display shows.
    pub fn from_record(record: &EventRecord) -> Result<Option<Change>, Poison> {
        let operation = record.event_name.as_str();
        if !matches!(operation, "INSERT" | "MODIFY") {
            return Ok(None);
        }
        let keys = to_sdk(&record.change.keys);
        let Some(sort_key) = get_s(&keys, "sk") else {
            return Err(Poison("the record's keys have no string \"sk\"".into()));
        };
        let new = to_sdk(&record.change.new_image);
        if get_s(&keys, "pk").as_deref() == Some(SILENCE_PK) {
            return link_change(operation, &new, &to_sdk(&record.change.old_image));
        }
        if operation == "INSERT" && get_s(&keys, "pk").as_deref() == Some(CREDENTIAL_GONE_PK) {
            return CredentialGone::from_item(&new)
                .map(|gone| Some(Change::CredentialGone(gone)))
                .ok_or_else(|| Poison("a credential marker without scope or holder".into()));
        }
        // INSERT has no old image; a MODIFY always has one on a stream with
        // NEW_AND_OLD_IMAGES (the data table's, docs/data-model.md).
        let old = match operation {
            "INSERT" => None,
            _ if record.change.old_image.is_empty() => {
                return Err(Poison(
                    "a MODIFY without an old image: the stream must carry NEW_AND_OLD_IMAGES"
                        .into(),
                ));
            }
            _ => Some(to_sdk(&record.change.old_image)),
        };
        match sort_key.as_str() {
            CALL_SK => call_change(&new, old.as_ref()),
            ELEMENT_SK => element_change(&new, old.as_ref()),
            _ => Ok(None),
        }
    }

    /// Whose displays get it; `None` for a link's silence, whose scope
    /// depends on the installation's mode ([`link_event`]).
    pub fn scope(&self) -> Option<&Scope> {
        match self {
            Change::Call { scope, .. }
            | Change::Alarm { scope, .. }
            | Change::Element { scope, .. }
            | Change::CredentialGone(CredentialGone { scope, .. }) => Some(scope),
            Change::Link { .. } => None,
        }
    }

    /// Whether its message needs the call types (a call's record carries its
    /// type, DECISIONS §11).
    pub fn needs_call_types(&self) -> bool {
        matches!(self, Change::Call { .. } | Change::Alarm { .. })
    }

    /// The message, ready to send: a call's `duration` as of `now`; `None`
    /// for a change that closes connections instead.
    pub fn into_event(
        self,
        types: &[CallType],
        settings: &Settings,
        now: DateTime<Utc>,
    ) -> Option<LiveEvent> {
        let zone = settings.time_zone;
        Some(match self {
            Change::Call { scope, call } => LiveEvent {
                message: LiveMessage::call(&call, types, zone, now).to_json(),
                section: call.section,
                scope,
            },
            // Never `Declined`: that news is for staff pages only.
            Change::Alarm { scope, call, news } => LiveEvent {
                message: LiveMessage::alarm(news, &call, types, zone, now).to_json(),
                section: call.section.clone(),
                scope,
            },
            Change::Element { scope, element } => LiveEvent {
                message: LiveMessage::element(&element, zone).to_json(),
                section: None,
                scope,
            },
            Change::CredentialGone(_) => return None,
            Change::Link { silence, back } => link_event(
                settings,
                &silence.consumer,
                &silence.name,
                silence.since,
                back,
            ),
        })
    }
}

/// A silence's history item: inserted, the silence began; modified so
/// that it has an `ended_at` it had not, it ended. Anything else (a TTL,
/// a removal) is no news.
fn link_change(operation: &str, new: &Item, old: &Item) -> Result<Option<Change>, Poison> {
    let back = match operation {
        "INSERT" => false,
        "MODIFY" if new.contains_key("ended_at") && !old.contains_key("ended_at") => true,
        _ => return Ok(None),
    };
    let silence = silence_from_item(new)
        .ok_or_else(|| Poison("a silence item without consumer or since".into()))?;
    Ok(Some(Change::Link { silence, back }))
}

fn call_change(new: &Item, old: Option<&Item>) -> Result<Option<Change>, Poison> {
    let call = call_from_item(new).map_err(|error| Poison(error.to_string()))?;
    let closed_now = call.closed_at.is_some();
    let shown = match old {
        // Calls are put open; one put closed is no news to a display.
        None => !closed_now,
        // The close sets `closed_at` once; anything else (a retention TTL
        // set later, an admin's edit) is no change a display shows.
        Some(old) => closed_now && !old.contains_key("closed_at"),
    };
    if shown {
        return Ok(Some(Change::Call {
            scope: scope_of(new, "call")?,
            call: Box::new(call),
        }));
    }
    match old {
        Some(old) if !closed_now => alarm_change(call, new, old),
        _ => Ok(None),
    }
}

/// An open call's alarm write: news for displays when its `changes` grew.
fn alarm_change(call: Call, new: &Item, old: &Item) -> Result<Option<Change>, Poison> {
    let before = alarm_from_item(old).map_err(|error| Poison(error.to_string()))?;
    let Some(after) = &call.alarm else {
        return Ok(None);
    };
    let status_before = before.as_ref().map(|alarm| alarm.status);
    if after.changes <= before.as_ref().map_or(0, |alarm| alarm.changes) {
        return Ok(None);
    }
    let became = |status: AlarmStatus| after.status == status && status_before != Some(status);
    let news = if became(AlarmStatus::Accepted) {
        AlarmNews::Accepted
    } else if became(AlarmStatus::Unattended) {
        AlarmNews::Unattended
    } else {
        AlarmNews::Escalated
    };
    Ok(Some(Change::Alarm {
        scope: scope_of(new, "call")?,
        call: Box::new(call),
        news,
    }))
}

fn element_change(new: &Item, old: Option<&Item>) -> Result<Option<Change>, Poison> {
    let element = element_from_item(new).map_err(|error| Poison(error.to_string()))?;
    // Items written before versions existed count as version 1, as the
    // store reads them; a new item has grown from nothing.
    let before = old.map_or(0, |old| get_n::<i64>(old, "version").unwrap_or(1));
    if element.version <= before {
        return Ok(None);
    }
    Ok(Some(Change::Element {
        scope: scope_of(new, "element")?,
        element,
    }))
}

fn scope_of(item: &Item, what: &str) -> Result<Scope, Poison> {
    get_s(item, "scope")
        .map(|scope| Scope::from_key(&scope))
        .ok_or_else(|| Poison(format!("stored {what} has no usable \"scope\"")))
}

/// A stream image (serde_dynamo's attribute values, as Lambda delivers
/// them) as the SDK's, which the store's item parsing reads.
fn to_sdk(image: &serde_dynamo::Item) -> Item {
    HashMap::<String, AttributeValue>::from(image.clone())
}
