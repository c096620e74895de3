//! The things the service keeps: calls, elements, call types, consumers and
//! displays (with which sections a display shows, [`sections_show`]). Plain
//! data; times are UTC instants, converted to wire times only in [`crate::wire`].

use chrono::{DateTime, Utc};

/// Whose data a request reads and writes. In production every consumer of the
/// installation works on the same calls and elements; in sandbox mode each
/// visitor has their own (DECISIONS §8).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope(String);

impl Scope {
    const INSTALLATION: &'static str = "installation";

    /// The scope of production, shared by every consumer of the installation.
    pub fn installation() -> Self {
        Scope(Self::INSTALLATION.to_string())
    }

    /// A sandbox visitor's own scope: their consumer id, lowercase.
    pub fn consumer(consumer_id: &str) -> Self {
        Scope(consumer_id.to_ascii_lowercase())
    }

    /// Restores a scope from its stored key.
    pub fn from_key(key: &str) -> Self {
        Scope(key.to_string())
    }

    /// The stored form: `installation`, or a sandbox consumer's id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether the `data_json` of a multi-form request has an item whose `target`
/// is `address`. A text that is no JSON array (cut because it was very long)
/// counts when it holds the address as a JSON string anywhere: erasing one
/// mismatch too many is harmless, keeping one is not.
fn multi_form_names(data_json: &str, address: &str) -> bool {
    match serde_json::from_str::<serde_json::Value>(data_json) {
        Ok(serde_json::Value::Array(items)) => items
            .iter()
            .any(|item| item.get("target").and_then(serde_json::Value::as_str) == Some(address)),
        Ok(_) => false,
        Err(_) => {
            let quoted = serde_json::to_string(address).expect("strings serialise");
            data_json.contains(&quoted)
        }
    }
}

/// The largest call id (DECISIONS §5: safe in JavaScript). A number beyond
/// it, or below 1, names no call.
pub(crate) const MAX_CALL_ID: i64 = (1 << 53) - 1;

/// A call on an element: open while `closed_at` is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Unique within the stack and at most 2^53 - 1 (safe in JavaScript).
    pub id: i64,
    /// The address of the element it is on (the request's `target`).
    pub address: String,
    /// The call type name (`data.event`).
    pub event: String,
    /// As sent, else the element's last known position (DECISIONS §5); `None`
    /// when neither.
    pub position: Option<String>,
    /// The section code as sent (`data.section`); `None` when not sent.
    pub section: Option<String>,
    /// Bed detection attributes as sent (`data.attribute`; old central systems
    /// only).
    pub attribute: Option<String>,
    /// `data.code` when sent, else the element's code, else empty.
    pub element_code: String,
    /// The element's name at the open (may identify a person), else empty.
    pub element_name: String,
    /// `data.created_at`, else when the open came in (UTC).
    pub opened_at: DateTime<Utc>,
    /// The close's `data.closed_at`, else when the close came in (UTC); `None`
    /// while open.
    pub closed_at: Option<DateTime<Utc>>,
    /// The consumer whose signed request opened the call (audit, DECISIONS
    /// §13); `None` for calls stored before it was kept. Never on the wire.
    pub opened_by: Option<String>,
    /// The consumer whose signed request closed the call; `None` while open
    /// and for calls closed before it was kept. Never on the wire.
    pub closed_by: Option<String>,
    /// Its alarm (DECISIONS §14), as kept beside it; `None` where a read
    /// does not carry it, or for calls stored before alarms existed.
    pub alarm: Option<crate::domain::alarm::Alarm>,
}

impl Call {
    /// The call's version for displays (DECISIONS §11, §14): 1 when opened,
    /// one more with every change of its alarm that displays see, one more
    /// once closed. It follows from what is kept, so no store counts it.
    pub fn version(&self) -> i64 {
        let alarm_changes = self.alarm.as_ref().map_or(0, |a| a.changes);
        1 + alarm_changes + i64::from(self.closed_at.is_some())
    }
}

/// A call about to be opened; the store assigns the id.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCall {
    /// The address of the element it is on (the request's `target`).
    pub address: String,
    /// The call type name (`data.event`).
    pub event: String,
    /// As sent, else the element's last known position; `None` when neither.
    pub position: Option<String>,
    /// The section code as sent; `None` when not sent.
    pub section: Option<String>,
    /// Bed detection attributes as sent (old central systems only).
    pub attribute: Option<String>,
    /// `data.code` when sent, else the element's code, else empty.
    pub element_code: String,
    /// The element's name (may identify a person), else empty.
    pub element_name: String,
    /// `data.created_at`, else when the request came in (UTC).
    pub opened_at: DateTime<Utc>,
    /// The consumer of the signed request that opens it (audit, DECISIONS §13).
    pub opened_by: Option<String>,
}

impl NewCall {
    /// The call as a store opened it, with the id it assigned.
    pub fn opened(&self, id: i64) -> Call {
        Call {
            id,
            address: self.address.clone(),
            event: self.event.clone(),
            position: self.position.clone(),
            section: self.section.clone(),
            attribute: self.attribute.clone(),
            element_code: self.element_code.clone(),
            element_name: self.element_name.clone(),
            opened_at: self.opened_at,
            closed_at: None,
            opened_by: self.opened_by.clone(),
            closed_by: None,
            alarm: None,
        }
    }
}

/// A radio element or call point, addressed by its address.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// The address central systems name it by (`target`); its key in the scope.
    pub address: String,
    /// Provisioned by an admin; empty for elements a sandbox created.
    pub code: String,
    /// Provisioned by an admin (may identify a person); empty when unknown.
    pub name: String,
    /// Percent, 0..=100.
    pub battery: Option<f64>,
    /// Where it is, as last sent (e.g. `Zimmer 103, Bett 2`); `None` until sent.
    pub position: Option<String>,
    /// Whether it last reported itself reachable; `None` until it said.
    pub reachable: Option<bool>,
    /// When a status field last arrived, or when it was created (UTC): what
    /// `stale` is measured from.
    pub updated_at: DateTime<Utc>,
    /// Grows by one with every change the store writes (DECISIONS §11): a
    /// display keeps the newest version per address and ignores older news.
    /// 0 for an element not yet stored.
    pub version: i64,
}

impl Element {
    /// An element the sandbox creates on first use of an address.
    pub fn unregistered(address: &str, at: DateTime<Utc>) -> Self {
        Element {
            address: address.to_string(),
            code: String::new(),
            name: String::new(),
            battery: None,
            position: None,
            reachable: None,
            updated_at: at,
            version: 0,
        }
    }

    /// Applies the fields a request sent; the others keep their value.
    /// `updated_at` moves only when a status field was sent.
    pub fn apply(&mut self, change: &ElementChange) {
        if change.is_empty() {
            return;
        }
        if let Some(battery) = change.battery {
            self.battery = Some(battery);
        }
        if let Some(position) = &change.position {
            self.position = Some(position.clone());
        }
        if let Some(reachable) = change.reachable {
            self.reachable = Some(reachable);
        }
        self.updated_at = change.at;
    }
}

/// The status fields one request sends for one element. Only sent fields change.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementChange {
    /// The element's address (`target`).
    pub address: String,
    /// Percent, 0..=100; `None`: not sent.
    pub battery: Option<f64>,
    /// The element's new position; `None`: not sent.
    pub position: Option<String>,
    /// Whether it is reachable now; `None`: not sent.
    pub reachable: Option<bool>,
    /// When the request came in (UTC): the element's new `updated_at`.
    pub at: DateTime<Utc>,
}

impl ElementChange {
    /// A change that sends no status field (a display request without battery,
    /// position or reachable).
    pub fn is_empty(&self) -> bool {
        self.battery.is_none() && self.position.is_none() && self.reachable.is_none()
    }

    /// Merges a later change for the same address into this one: later values win.
    pub fn merge(&mut self, later: &ElementChange) {
        if later.battery.is_some() {
            self.battery = later.battery;
        }
        if later.position.is_some() {
            self.position.clone_from(&later.position);
        }
        if later.reachable.is_some() {
            self.reachable = later.reachable;
        }
        self.at = later.at;
    }
}

/// What a display open or close does to its element besides the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementPolicy {
    /// Production: the element must be registered (checked before writing).
    MustExist,
    /// Sandbox: an unknown address creates an element.
    CreateMissing,
}

/// A configured call type (DECISIONS §7), edited by admins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallType {
    /// Unique in the stack: the `type` object's `id` (seeded 1 to 10).
    pub id: i64,
    /// The `event` value central systems send (spec 2.5); the table's key.
    pub name: String,
    /// The name a connected central system uses; may be empty.
    pub internal_name: String,
    /// One word; seeded `NORMAL`, `URGENT`, `EMERGENCY`; chooses a display's tone.
    pub urgency: String,
    /// 1 is the most urgent; displays list the most urgent calls first.
    pub priority: i64,
    /// The item's `type`: `CALL`, [`PRESENCE_KIND`] or [`FAULT_KIND`] as seeded.
    pub kind: String,
    /// `#rrggbb`
    pub color: String,
    /// Whether displays sound a tone for its calls.
    pub notify: bool,
    /// Seconds.
    pub notification_interval: i64,
    /// Most tones on a display, and most alerts per person; 0: no limit.
    pub notification_maxloops: i64,
    /// A sound file name for display apps (spec 2.3); may be empty.
    pub notification_sound: String,
    /// Who is alerted when (DECISIONS §14); empty: no alarm.
    pub escalation: crate::domain::alarm::Policy,
    /// Seconds an accept waits for a presence or the close before the
    /// alarm resumes (DECISIONS §19: an accept is not an arrival).
    pub accept_timeout: i64,
}

/// The `type` of a call type whose calls mean "staff present in the room".
pub const PRESENCE_KIND: &str = "PRESENCE";

/// The `type` of a call type whose calls report a fault (Störung).
pub const FAULT_KIND: &str = "FAULT";

/// The `type` of an ordinary call, and of a call type item whose `type` is
/// missing or unreadable (DECISIONS §7).
pub(crate) const CALL_KIND: &str = "CALL";

impl CallType {
    /// Whether its calls are staff present in the room (they answer the
    /// calls on their address and start no alarm).
    pub fn is_presence(&self) -> bool {
        self.kind == PRESENCE_KIND
    }

    /// Whether its calls report a fault (Störung).
    pub fn is_fault(&self) -> bool {
        self.kind == FAULT_KIND
    }
}

/// A central system or gateway allowed to send signed requests.
#[derive(Clone, PartialEq, Eq)]
pub struct Consumer {
    /// UUID, lowercase.
    pub id: String,
    /// What admins call it (`consumers create --name`); `sandbox visitor` for
    /// the sandbox's.
    pub name: String,
    /// One or two active secrets (rotation); the newest is last.
    pub secrets: Vec<String>,
    /// HMAC-SHA1 is accepted only for legacy central systems that need it.
    pub allow_sha1: bool,
    /// When it was created (UTC); the Unix epoch when the item's value is
    /// missing or unreadable.
    pub created_at: DateTime<Utc>,
    /// Sandbox consumers expire (DECISIONS §8); production ones do not.
    pub expires_at: Option<DateTime<Utc>>,
    /// Replay protection (docs/security.md): every request must carry a
    /// signed `signed_at` within [`crate::signing::replay::WINDOW_SECONDS`] of the
    /// server's clock. Off by default, which is the spec's behaviour.
    pub require_signed_time: bool,
    /// Its heartbeat interval in seconds (DECISIONS §19): supervised, it is
    /// silent after 2 × this + 10 s without a request. `None`: not supervised.
    pub heartbeat_seconds: Option<i64>,
}

impl std::fmt::Debug for Consumer {
    // Secrets never appear in logs, not even through a stray `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("id", &self.id)
            .field("name", &self.name)
            .field(
                "secrets",
                &format_args!("[{} redacted]", self.secrets.len()),
            )
            .field("allow_sha1", &self.allow_sha1)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("require_signed_time", &self.require_signed_time)
            .field("heartbeat_seconds", &self.heartbeat_seconds)
            .finish()
    }
}

/// A request of a sandbox consumer whose hash did not verify, as the test
/// server explained it in the `debug` object (spec 7.2), without the secret.
/// Kept for a day so that the test page can show it (DECISIONS §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashMismatch {
    /// The composed signing string `<target>.<consumer>.<data_json>`; a very
    /// long one is cut at [`HashMismatch::TEXT_LIMIT`] bytes and ends in `…`.
    pub string: String,
    /// The hash the service computed (HMAC-SHA256 with the newest secret).
    pub expected: String,
    /// The hash the request carried, as sent (cut like `string`).
    pub provided: String,
    /// When the request came in.
    pub at: DateTime<Utc>,
}

impl HashMismatch {
    /// How many mismatches a store keeps per scope, the newest.
    pub const KEPT: usize = 10;
    /// How long a mismatch is kept.
    pub const LIFETIME_HOURS: i64 = 24;
    /// Longest `string` and `provided` kept, in bytes (a body may be 256 KiB).
    pub const TEXT_LIMIT: usize = 16 * 1024;

    /// A mismatch to keep: the texts cut to [`HashMismatch::TEXT_LIMIT`].
    pub fn new(string: &str, expected: &str, provided: &str, at: DateTime<Utc>) -> Self {
        HashMismatch {
            string: Self::cut(string),
            expected: expected.to_string(),
            provided: Self::cut(provided),
            at,
        }
    }

    /// Whether the request behind this mismatch named `address`, when
    /// `consumer` is the consumer it was recorded for: its target (the string
    /// is `<target>.<consumer>.<data_json>`), or in the multi form (empty
    /// target) an item's `target`. Used to erase an address (docs/security.md).
    pub fn names_address(&self, consumer: &str, address: &str) -> bool {
        let data_after = |target: &str| -> Option<&str> {
            let rest = self.string.strip_prefix(target)?.strip_prefix('.')?;
            let id = rest.get(..consumer.len())?;
            if !id.eq_ignore_ascii_case(consumer) {
                return None;
            }
            rest[consumer.len()..].strip_prefix('.')
        };
        if data_after(address).is_some() {
            return true;
        }
        match data_after("") {
            Some(data_json) => multi_form_names(data_json, address),
            None => false,
        }
    }

    fn cut(text: &str) -> String {
        if text.len() <= Self::TEXT_LIMIT {
            return text.to_string();
        }
        let mut end = Self::TEXT_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    }
}

impl Consumer {
    /// How long a sandbox visitor's consumer and data are kept.
    pub const SANDBOX_LIFETIME_DAYS: i64 = 30;

    /// Whether a sandbox consumer's `expires_at` is `now` or earlier; a
    /// production consumer never expires.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|expiry| expiry <= now)
    }
}

/// A registered reader of open calls: a corridor display, the station's PC,
/// a third-party display app (DECISIONS §11). It authenticates with a bearer
/// token of which only the SHA-256 is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Display {
    /// UUID v4, lowercase.
    pub id: String,
    /// What admins call it (`displays create --name`); its page shows it.
    pub name: String,
    /// Section codes shown; empty = every section.
    pub sections: Vec<String>,
    /// Whose calls it shows: the installation (admins create displays for it).
    pub scope: Scope,
    /// Lowercase hex SHA-256 of the token.
    pub token_hash: String,
    /// When an admin created it (UTC); the Unix epoch when the item's value is
    /// missing or unreadable.
    pub created_at: DateTime<Utc>,
    /// Revoked by an admin: its token no longer authenticates.
    pub revoked: bool,
}

/// Whether a reader of `sections` (empty = every section) sees a call of
/// `section`; a call without a section is seen by every display of the scope
/// (never filtered out of sight). The HTTP reads apply it to the
/// authenticated display, the live feed in AWS to the sections kept with each
/// connection.
pub fn sections_show(sections: &[String], section: Option<&str>) -> bool {
    match section {
        Some(section) if !sections.is_empty() => sections.iter().any(|shown| shown == section),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONSUMER: &str = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";

    fn mismatch(string: &str) -> HashMismatch {
        HashMismatch::new(string, "e", "p", DateTime::<Utc>::default())
    }

    #[test]
    fn a_mismatch_names_its_target() {
        let m = mismatch(&format!("Zimmer.1.{CONSUMER}.{{\"event\":\"WC\"}}"));
        assert!(m.names_address(CONSUMER, "Zimmer.1"));
        assert!(
            !m.names_address(CONSUMER, "Zimmer"),
            "a prefix of the target"
        );
        assert!(!m.names_address(CONSUMER, "Zimmer.1.x"));
        assert!(!m.names_address(CONSUMER, "WC"), "a value in the data");
        // The consumer as the request spelled it (any case).
        let upper = mismatch(&format!("A1.{}.{{}}", CONSUMER.to_uppercase()));
        assert!(upper.names_address(CONSUMER, "A1"));
        // Another consumer's string never matches.
        let other = mismatch("A1.00000000-0000-4000-8000-000000000000.{}");
        assert!(!other.names_address(CONSUMER, "A1"));
    }

    #[test]
    fn a_multi_form_mismatch_names_the_targets_of_its_items() {
        let m = mismatch(&format!(
            ".{CONSUMER}.[{{\"target\":\"A1\",\"battery\":5}},{{\"target\":\"B\\/2\"}}]"
        ));
        assert!(m.names_address(CONSUMER, "A1"));
        assert!(m.names_address(CONSUMER, "B/2"), "escapes as sent");
        assert!(!m.names_address(CONSUMER, "A"));
        assert!(!m.names_address(CONSUMER, "battery"));
        // Cut off (a very long request): any mention as a JSON string counts.
        let cut = mismatch(&format!(
            ".{CONSUMER}.[{{\"target\":\"A1\"}},{{\"target\":\"C3…"
        ));
        assert!(cut.names_address(CONSUMER, "A1"));
        assert!(!cut.names_address(CONSUMER, "C"));
    }
}
