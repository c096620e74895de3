//! Whole requests through the router (`nurse_call_core::serve`) on the
//! embedded store (SQLite in memory), in sandbox or production mode.
//!
//! An input is a [`Scenario`]: a mode and a few exchanges (method, path,
//! content type, query, cookie, body). A body is raw bytes, or a
//! [`RequestSpec`] that the harness renders to JSON in some style (spacing,
//! escapes) and signs with the secret of a consumer created at start, so that
//! the fuzzer gets past the signature check (or not: the hash choice may be a
//! wrong one). An input is read as a `Scenario` in JSON when it starts with
//! `{` and parses (the readable seeds in `fuzz/seeds/`), else through
//! `arbitrary`.
//!
//! Each scenario runs on a fresh in-memory store (reproducible: a crash input
//! replays alone). Every response is checked beyond "no panic":
//! - its status is a documented one (DECISIONS §3); a 500 or 503 is a finding
//!   too, since the in-memory store never fails;
//! - the body is a JSON object starting with `success`, true exactly for a
//!   2xx, with the error shape of spec 7 (`status_code` = the status);
//! - `Allow` on a 405, `debug` only on a sandbox `invalid_hash` for a known
//!   consumer, and then with the signing string the harness signed;
//! - the status the harness can predict from what it built (404, 405, 413,
//!   415, 400 `malformed_request`, never `invalid_hash` for a correctly
//!   signed request), and a 2xx only for a correctly signed one.
//!
//! The endpoint-specific checks live in the `check_*` functions.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use chrono::Duration;
use chrono_tz::Tz;
use http::{HeaderValue, Method, header};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::runtime::Runtime;

use nurse_call_core::{ApiRequest, ApiResponse, AppState, Backend, Consumer, Endpoint, MAX_BODY_BYTES, Mode, Scope, Settings, clock, default_call_types, serve, wire_time};
use nurse_call_sqlite::SqliteStore;

use crate::pure::{oracle_sha1, oracle_sha256};

/// At most this many exchanges of a scenario run (the rest is ignored).
pub const MAX_EXCHANGES: usize = 4;
/// JSON nesting deeper than this is rendered as `null`.
const MAX_DEPTH: usize = 12;
/// The largest call id (DECISIONS §5).
const MAX_SAFE_ID: i64 = (1 << 53) - 1;

/// Addresses a request may name; the first two are registered elements
/// (production), the others not.
pub const ADDRESSES: [&str; 6] = [
    "Zimmer-101",
    "Zimmer-102",
    "Zimmer-999",
    "zimmer-101",
    "00:0a:95:9d:68:16",
    " Zimmer-101",
];
const REGISTERED: [(&str, &str, &str); 2] = [
    ("Zimmer-101", "Z101", "Zimmer 101, Bett 1"),
    ("Zimmer-102", "Z102", "Zimmer 102, Bett 1"),
];
/// Keys of `data` with a meaning.
const DATA_KEYS: [&str; 11] = [
    "event",
    "closed",
    "battery",
    "position",
    "section",
    "reachable",
    "attribute",
    "code",
    "created_at",
    "closed_at",
    "target",
];
/// Top-level keys an extra entry may have (duplicates make a body malformed).
const TOP_KEYS: [&str; 5] = ["target", "consumer", "hash", "data", "extra"];
/// JSON text inserted as is: number spellings and escapes, some invalid
/// (`INVALID_LITERALS` of them).
const LITERALS: [&str; 16] = [
    "80.0",
    "1e2",
    "-0",
    "-0.0",
    "1E+2",
    "100.0000000000001",
    "1e-400",
    "12345678901234567890",
    "0.5e1",
    "\"a\\/b\"",
    "\"\\u00e4\\u00f6\"",
    "\"\\ud83d\\ude00\"",
    "\"\\\"\\\\\"",
    // Invalid from here on.
    "1e400",
    "\"\\ud800\"",
    "-1e309",
];
const INVALID_LITERALS: usize = 3;
/// Strings with escapes, non-ASCII and control characters.
const TRICKY: [&str; 8] = [
    "Zimmer 1/2",
    "Störung",
    "\"quoted\" \\ back",
    "tab\there\nnewline",
    "emoji 😀",
    "\u{0}\u{1f}",
    "\u{2028}\u{feff}",
    "  ",
];
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
/// A UUID that no consumer has.
const UNKNOWN_CONSUMER: &str = "00000000-0000-4000-8000-000000000000";

// ---------------------------------------------------------------------------
// The input. Arbitrary's first enum variant, `None` and zero are what an
// exhausted input yields, so the usual request comes first everywhere, and
// deviations from it sit behind [`Rarely`].

/// One fuzz input: a mode and up to [`MAX_EXCHANGES`] requests.
#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    pub sandbox: bool,
    /// Calls opened (and closed) with correctly signed display requests
    /// before the exchanges (the sandbox-state target shows them).
    pub setup: Vec<Setup>,
    pub exchanges: Vec<Exchange>,
}

#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Setup {
    pub consumer: u8,
    pub address: u8,
    pub event: u8,
    pub close: bool,
}

/// Mostly absent (7 times in 8 for arbitrary input): a deviation from the
/// usual request. In JSON seeds an optional value.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Rarely<T>(pub Option<T>);

impl<T> Default for Rarely<T> {
    fn default() -> Self {
        Rarely(None)
    }
}

impl<'a, T: Arbitrary<'a>> Arbitrary<'a> for Rarely<T> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Rarely(if u8::arbitrary(u)? >= 224 {
            Some(T::arbitrary(u)?)
        } else {
            None
        }))
    }
}

/// One request. Unset parts are the usual ones: the target's path and
/// method, `application/json`, a body built from `request`.
#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Exchange {
    pub query: QueryPick,
    pub request: RequestSpec,
    pub path: Rarely<PathPick>,
    /// An index into [`METHODS`].
    pub method: Rarely<u8>,
    pub content_type: Rarely<ContentTypePick>,
    pub cookie: Rarely<CookiePick>,
    /// A body other than the rendered request.
    pub raw: Rarely<RawBody>,
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum PathPick {
    /// Another endpoint's path (`Endpoint::ALL`).
    Endpoint(u8),
    Trailing,
    Upper,
    Raw(String),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum ContentTypePick {
    JsonCharset,
    JsonUpper,
    JsonSpaced,
    Missing,
    TextPlain,
    Form,
    Raw(String),
}

#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
pub enum QueryPick {
    #[default]
    None,
    IncludeType,
    /// `?consumer=…&hash=…` (the sandbox state).
    Proof {
        consumer: ConsumerPick,
        proof: HashPick,
    },
    Include(String),
    /// Percent-encoded where needed, then used as the query.
    Raw(String),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum CookiePick {
    /// `nc_sandbox=<id>.<proof>`.
    Sandbox {
        consumer: ConsumerPick,
        proof: HashPick,
    },
    Raw(String),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum RawBody {
    Empty,
    Bytes(Vec<u8>),
    /// Raw text (readable in JSON seeds).
    Text(String),
    /// The rendered request padded with spaces beyond 256 KiB.
    Oversize,
}

/// A request body the harness renders and signs.
#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestSpec {
    /// An index into [`ADDRESSES`] (0 and 1 are registered).
    pub target: u8,
    pub consumer: ConsumerPick,
    /// Unset: HMAC-SHA256 with the consumer's newest secret.
    pub hash: Rarely<HashPick>,
    pub data: DataSpec,
    pub style: Style,
    /// Rotates the order of the top-level keys.
    pub order: u8,
    /// Replaces or drops a top-level field.
    pub odd: Rarely<OddField>,
    /// More top-level entries (a known key again makes the body malformed).
    pub extra: Rarely<Vec<(Key, Json)>>,
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum OddField {
    NoTarget,
    Target(Json),
    NoConsumer,
    Consumer(Json),
    NoData,
    Data(Json),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum ConsumerPick {
    /// Known consumer 0 to 3: SHA-256 only, SHA-1 allowed, two secrets, expired.
    Known(u8),
    /// The same id in uppercase (signed as sent).
    KnownUpper(u8),
    Unknown,
    Absent,
    Json(Json),
}

impl Default for ConsumerPick {
    fn default() -> Self {
        ConsumerPick::Known(0)
    }
}

#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
pub enum HashPick {
    /// HMAC-SHA256 with the consumer's newest secret.
    #[default]
    Sha256,
    Upper,
    /// HMAC-SHA256 with the consumer's oldest secret (rotation).
    Old,
    /// HMAC-SHA1 (valid only for the consumer that allows it).
    Sha1,
    WrongSecret,
    /// One hex digit changed: position, new digit.
    Changed(u8, u8),
    Short,
    Empty,
    Absent,
    Json(Json),
}

/// `data`: an object of the fields the spec knows, or (`multi` ≥ 192) an
/// array of such objects (the element multi form).
#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSpec {
    pub fields: Fields,
    pub multi: u8,
    pub items: Vec<Fields>,
}

/// The fields of a display or element `data` object (or a multi-form item).
#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fields {
    /// Multi-form items: an index into [`ADDRESSES`], one past it for none.
    pub target: u8,
    /// An index into the call type names (and a few unknown names).
    pub event: Option<u8>,
    pub closed: Option<bool>,
    pub battery: Option<Num>,
    pub position: Option<Text>,
    pub section: Option<Text>,
    pub reachable: Option<bool>,
    pub attribute: Option<Text>,
    pub code: Option<Text>,
    pub created_at: Option<Time>,
    pub closed_at: Option<Time>,
    /// Rotates the order of the keys.
    pub order: u8,
    /// More entries: unknown keys, known keys again (malformed), odd types.
    pub extra: Rarely<Vec<(Key, Json)>>,
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum Num {
    Small(u8),
    Float(f64),
    Literal(u8),
    Json(Json),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum Text {
    Plain(String),
    Tricky(u8),
    /// A string of this many characters plus 200 (the limit is 255).
    Long(u8),
    Address(u8),
    Json(Json),
}

#[derive(Debug, Clone, Default, Arbitrary, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Style {
    /// 0 compact, 1 spaces, 2 pretty, 3 every kind of JSON whitespace.
    pub whitespace: u8,
    /// `/` as `\/` (PHP's default).
    pub escape_slash: bool,
    /// Non-ASCII as `\uXXXX` (Python's default).
    pub ensure_ascii: bool,
}

/// An object key: one with a meaning, or any text. In JSON seeds a plain
/// string.
#[derive(Debug, Clone, Arbitrary, Deserialize)]
#[serde(untagged)]
pub enum Key {
    Known(u8),
    Other(String),
}

/// A JSON value to render. In JSON seeds it is written as plain JSON.
#[derive(Debug, Clone, Arbitrary, Deserialize)]
#[serde(from = "Value")]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Small(u8),
    Float(f64),
    Literal(u8),
    Text(String),
    Tricky(u8),
    /// A string of this many characters plus 200 (the limit is 255).
    Long(u8),
    Event(u8),
    Address(u8),
    Time(Time),
    Array(Vec<Json>),
    Object(Vec<(Key, Json)>),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum Time {
    Now,
    /// Seconds from now.
    Offset(i32),
    Wire {
        year: Year,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
    },
    Json(Box<Json>),
}

#[derive(Debug, Clone, Arbitrary, Deserialize)]
pub enum Year {
    Recent(u8),
    Zero,
    Max,
    Any(u16),
}

impl From<Value> for Json {
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Json::Int(i),
                None => Json::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Json::Text(s),
            Value::Array(items) => Json::Array(items.into_iter().map(Json::from).collect()),
            Value::Object(map) => Json::Object(
                map.into_iter()
                    .map(|(k, v)| (Key::Other(k), Json::from(v)))
                    .collect(),
            ),
        }
    }
}

impl Fields {
    /// The object this stands for, keys in the spec's order rotated by `order`.
    fn to_json(&self, item: bool) -> Json {
        let mut entries: Vec<(&str, Json)> = Vec::new();
        if item && usize::from(self.target) % (ADDRESSES.len() + 1) < ADDRESSES.len() {
            entries.push(("target", Json::Address(self.target)));
        }
        if let Some(event) = self.event {
            entries.push(("event", Json::Event(event)));
        }
        if let Some(closed) = self.closed {
            entries.push(("closed", Json::Bool(closed)));
        }
        if let Some(battery) = &self.battery {
            entries.push(("battery", battery.to_json()));
        }
        for (key, text) in [
            ("position", &self.position),
            ("section", &self.section),
            ("attribute", &self.attribute),
            ("code", &self.code),
        ] {
            if let Some(text) = text {
                entries.push((key, text.to_json()));
            }
        }
        if let Some(reachable) = self.reachable {
            entries.push(("reachable", Json::Bool(reachable)));
        }
        for (key, time) in [
            ("created_at", &self.created_at),
            ("closed_at", &self.closed_at),
        ] {
            if let Some(time) = time {
                entries.push((key, Json::Time(time.clone())));
            }
        }
        let mut entries: Vec<(Key, Json)> = entries
            .into_iter()
            .map(|(k, v)| (Key::Other(k.to_string()), v))
            .collect();
        if !entries.is_empty() {
            let by = usize::from(self.order) % entries.len();
            entries.rotate_left(by);
        }
        if let Some(extra) = &self.extra.0 {
            entries.extend(extra.iter().cloned());
        }
        Json::Object(entries)
    }
}

impl DataSpec {
    fn to_json(&self) -> Json {
        if self.multi >= 192 {
            Json::Array(self.items.iter().map(|item| item.to_json(true)).collect())
        } else {
            self.fields.to_json(false)
        }
    }
}

impl Num {
    fn to_json(&self) -> Json {
        match self {
            Num::Small(n) => Json::Small(*n),
            Num::Float(f) => Json::Float(*f),
            Num::Literal(i) => Json::Literal(*i),
            Num::Json(json) => json.clone(),
        }
    }
}

impl Text {
    fn to_json(&self) -> Json {
        match self {
            Text::Plain(text) => Json::Text(text.clone()),
            Text::Tricky(i) => Json::Tricky(*i),
            Text::Long(n) => Json::Long(*n),
            Text::Address(i) => Json::Address(*i),
            Text::Json(json) => json.clone(),
        }
    }
}

/// Reads an input: a JSON scenario when it starts with `{` and parses, else
/// through `arbitrary`.
pub fn decode<T>(bytes: &[u8]) -> Option<T>
where
    T: DeserializeOwned + for<'a> Arbitrary<'a>,
{
    if bytes.first() == Some(&b'{')
        && let Ok(value) = serde_json::from_slice(bytes)
    {
        return Some(value);
    }
    T::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}
// ---------------------------------------------------------------------------
// The world: runtime, consumers, store.

/// The current-thread runtime every target drives its handlers on.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("tokio runtime")
    })
}

pub fn zone() -> Tz {
    "Europe/Berlin".parse().expect("known zone")
}

/// The consumers created at start: 0 SHA-256 only, 1 SHA-1 allowed, 2 two
/// secrets (rotation), 3 expired.
pub fn consumers() -> &'static [Consumer] {
    static CONSUMERS: OnceLock<Vec<Consumer>> = OnceLock::new();
    CONSUMERS.get_or_init(|| {
        // The service's own constructor, so that fields added to `Consumer`
        // later keep their defaults; only what the fuzzer needs is changed.
        let make = |name: &str, adjust: &dyn Fn(&mut Consumer)| {
            let mut consumer = nurse_call_core::new_sandbox_consumer();
            consumer.name = name.to_string();
            consumer.expires_at = None;
            adjust(&mut consumer);
            consumer
        };
        vec![
            make("fuzz sha256", &|_| {}),
            make("fuzz sha1", &|c| c.allow_sha1 = true),
            make("fuzz rotated", &|c| {
                c.secrets.insert(0, "previous secret".into())
            }),
            make("fuzz expired", &|c| {
                c.expires_at = Some(c.created_at - Duration::days(1));
            }),
        ]
    })
}

fn consumer_at(index: u8) -> (usize, &'static Consumer) {
    let all = consumers();
    let i = usize::from(index) % all.len();
    (i, &all[i])
}

fn is_live(consumer: &Consumer) -> bool {
    !consumer.is_expired(clock::now())
}

pub fn call_type_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| default_call_types().into_iter().map(|t| t.name).collect())
}

/// Event names a request may send: the configured ones and a few others.
fn event_name(index: u8) -> String {
    let names = call_type_names();
    let extra = ["", "Unbekannt", "normalruf", " Notruf"];
    let i = usize::from(index) % (names.len() + extra.len());
    names
        .get(i)
        .cloned()
        .unwrap_or_else(|| extra[i - names.len()].to_string())
}

fn address(index: u8) -> &'static str {
    ADDRESSES[usize::from(index) % ADDRESSES.len()]
}

/// A fresh store with the call types, the consumers and two registered
/// elements, in the given mode.
pub struct World {
    pub state: AppState,
    pub sandbox: bool,
}

impl World {
    pub fn new(sandbox: bool) -> Self {
        let store = SqliteStore::open(Path::new(":memory:")).expect("in-memory store");
        let store: Arc<dyn Backend> = Arc::new(store);
        runtime().block_on(async {
            store
                .seed_call_types(&default_call_types())
                .await
                .expect("seed call types");
            for consumer in consumers() {
                store
                    .create_consumer(consumer)
                    .await
                    .expect("create consumer");
            }
            let now = clock::now();
            for (address, code, name) in REGISTERED {
                store
                    .register_element(&Scope::installation(), address, code, name, now)
                    .await
                    .expect("register element");
            }
        });
        let settings = Settings {
            mode: if sandbox {
                Mode::Sandbox
            } else {
                Mode::Production
            },
            time_zone: zone(),
            call_retention: Default::default(),
            supervision: nurse_call_core::Thresholds::default(),
            live_url: None,
            staff: Default::default(),
        };
        World {
            state: AppState::new(store.clone(), settings).with_alarms(store),
            sandbox,
        }
    }

    pub fn send(&self, request: &Prepared) -> ApiResponse {
        runtime().block_on(serve(&self.state, request.request()))
    }
}

// ---------------------------------------------------------------------------
// Rendering JSON.

struct Render<'a> {
    style: &'a Style,
    compact: String,
    spaced: String,
    duplicates: bool,
    invalid: bool,
}

impl<'a> Render<'a> {
    fn new(style: &'a Style) -> Self {
        Render {
            style,
            compact: String::new(),
            spaced: String::new(),
            duplicates: false,
            invalid: false,
        }
    }

    fn token(&mut self, text: &str) {
        self.compact.push_str(text);
        self.spaced.push_str(text);
    }

    fn gap(&mut self, depth: usize) {
        match self.style.whitespace % 4 {
            0 => {}
            1 => self.spaced.push(' '),
            2 => {
                self.spaced.push('\n');
                self.spaced.push_str(&"  ".repeat(depth));
            }
            _ => self.spaced.push_str(" \t\r\n"),
        }
    }

    fn string(&mut self, text: &str) {
        let mut out = String::with_capacity(text.len() + 2);
        out.push('"');
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' if self.style.escape_slash => out.push_str("\\/"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c if !c.is_ascii() && self.style.ensure_ascii => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
        self.token(&out);
    }

    fn value(&mut self, json: &Json, depth: usize) {
        if depth > MAX_DEPTH {
            self.token("null");
            return;
        }
        match json {
            Json::Null => self.token("null"),
            Json::Bool(b) => self.token(if *b { "true" } else { "false" }),
            Json::Int(i) => self.token(&i.to_string()),
            Json::Small(n) => self.token(&n.to_string()),
            Json::Float(f) if f.is_finite() => self.token(&format!("{f:?}")),
            Json::Float(_) => self.token("null"),
            Json::Literal(i) => {
                let i = usize::from(*i) % LITERALS.len();
                self.invalid |= i >= LITERALS.len() - INVALID_LITERALS;
                self.token(LITERALS[i]);
            }
            Json::Text(text) => self.string(text),
            Json::Tricky(i) => self.string(TRICKY[usize::from(*i) % TRICKY.len()]),
            Json::Long(n) => self.string(&"x".repeat(200 + usize::from(*n))),
            Json::Event(i) => self.string(&event_name(*i)),
            Json::Address(i) => self.string(address(*i)),
            Json::Time(Time::Json(inner)) => self.value(inner, depth + 1),
            Json::Time(time) => self.string(&time.render()),
            Json::Array(items) => {
                self.token("[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.token(",");
                    }
                    self.gap(depth + 1);
                    self.value(item, depth + 1);
                }
                if !items.is_empty() {
                    self.gap(depth);
                }
                self.token("]");
            }
            Json::Object(entries) => {
                self.token("{");
                let mut seen = BTreeSet::new();
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.token(",");
                    }
                    self.gap(depth + 1);
                    let key = key.name();
                    self.duplicates |= !seen.insert(key.clone());
                    self.string(&key);
                    self.token(":");
                    if !self.style.whitespace.is_multiple_of(4) {
                        self.spaced.push(' ');
                    }
                    self.value(value, depth + 1);
                }
                if !entries.is_empty() {
                    self.gap(depth);
                }
                self.token("}");
            }
        }
    }
}

impl Key {
    fn name(&self) -> String {
        match self {
            Key::Known(i) => DATA_KEYS[usize::from(*i) % DATA_KEYS.len()].to_string(),
            Key::Other(name) => name.clone(),
        }
    }

    fn top_name(&self) -> String {
        match self {
            Key::Known(i) => TOP_KEYS[usize::from(*i) % TOP_KEYS.len()].to_string(),
            Key::Other(name) => name.clone(),
        }
    }
}

impl Time {
    fn render(&self) -> String {
        let zone = zone();
        match self {
            Time::Now => wire_time::format_local(clock::now(), zone),
            Time::Offset(seconds) => wire_time::format_local(
                clock::now() + Duration::seconds(i64::from(*seconds)),
                zone,
            ),
            Time::Wire {
                year,
                month,
                day,
                hour,
                minute,
                second,
            } => {
                let (minute, second) = (minute % 61, second % 61);
                let year = match year {
                    // The first and last minutes of the wire format: the
                    // installation's zone may move them out of four digits.
                    Year::Zero => return format!("0000-01-01 00:{minute:02}:{second:02}"),
                    Year::Max => return format!("9999-12-31 23:{minute:02}:{second:02}"),
                    Year::Recent(n) => 2000 + u32::from(*n % 100),
                    Year::Any(n) => u32::from(*n % 10_000),
                };
                format!(
                    "{year:04}-{:02}-{:02} {:02}:{minute:02}:{second:02}",
                    month % 14,
                    day % 33,
                    hour % 25,
                )
            }
            Time::Json(json) => render(json, &Style::default()).compact,
        }
    }
}

/// A rendered JSON value: as sent (spaced) and compact (what is signed).
struct Rendered {
    compact: String,
    spaced: String,
    duplicates: bool,
    invalid: bool,
}

fn render(json: &Json, style: &Style) -> Rendered {
    let mut render = Render::new(style);
    render.value(json, 0);
    Rendered {
        compact: render.compact,
        spaced: render.spaced,
        duplicates: render.duplicates,
        invalid: render.invalid,
    }
}

fn render_string(text: &str, style: &Style) -> Rendered {
    render(&Json::Text(text.to_string()), style)
}

// ---------------------------------------------------------------------------
// Building requests.

/// A request the harness built, and what it knows about it.
pub struct Prepared {
    method: Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
    pub facts: Facts,
}

impl Prepared {
    fn request(&self) -> ApiRequest {
        let mut request = http::Request::builder()
            .method(self.method.clone())
            .uri(self.uri.clone())
            .body(self.body.clone())
            .expect("valid request");
        *request.headers_mut() = self.headers.clone();
        request
    }
}

#[derive(Debug, Default)]
pub struct Facts {
    /// The path is the target's endpoint.
    pub right_path: bool,
    /// The path is no endpoint at all.
    pub unknown_path: bool,
    pub right_method: bool,
    /// `Some(true)` for an `application/json` content type, `None` when the
    /// harness does not know (a raw header).
    pub json_type: Option<bool>,
    pub oversize: bool,
    /// Set for a body from a [`RequestSpec`].
    pub signed: Option<Signed>,
    /// A raw body that is not a JSON object (400 when it gets that far).
    pub raw_not_object: bool,
    /// `include` as the harness sent it.
    pub include: Include,
}

/// The `include` query parameter of a request.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    #[default]
    Absent,
    Type,
    Other,
    /// A raw query: the harness does not know.
    Unknown,
}

#[derive(Debug, Default)]
pub struct Signed {
    /// A live known consumer and a hash that must verify.
    pub correct: bool,
    /// The known consumer the body names (any case), if any.
    pub consumer: Option<usize>,
    /// The signing string, when the harness knows what the service composes.
    pub string: Option<String>,
    /// A duplicate key or an invalid literal: the body is malformed.
    pub malformed: bool,
    /// `target` as sent, when a string.
    pub target: Option<String>,
    /// `data` as sent, parsed.
    pub data: Option<Value>,
}

fn percent_encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The consumer id a pick sends, and the known consumer it names.
fn consumer_text(pick: &ConsumerPick, style: &Style) -> (Option<Rendered>, Option<usize>) {
    let (text, known) = match pick {
        ConsumerPick::Known(i) => {
            let (i, c) = consumer_at(*i);
            (c.id.clone(), Some(i))
        }
        ConsumerPick::KnownUpper(i) => {
            let (i, c) = consumer_at(*i);
            (c.id.to_ascii_uppercase(), Some(i))
        }
        ConsumerPick::Unknown => (UNKNOWN_CONSUMER.to_string(), None),
        ConsumerPick::Absent => return (None, None),
        ConsumerPick::Json(json) => return (Some(render(json, style)), None),
    };
    (Some(render_string(&text, style)), known)
}

/// The hash a pick sends for `message`, and whether it must verify for the
/// known consumer `known`.
fn hash_text(
    pick: &HashPick,
    known: Option<usize>,
    message: &str,
    style: &Style,
) -> (Option<Rendered>, bool) {
    let consumer = &consumers()[known.unwrap_or(0)];
    let newest = consumer.secrets.last().map_or("", String::as_str);
    let oldest = consumer.secrets.first().map_or("", String::as_str);
    let live = known.is_some() && is_live(consumer);
    let (text, valid) = match pick {
        HashPick::Sha256 => (oracle_sha256(newest, message), live),
        HashPick::Upper => (oracle_sha256(newest, message).to_ascii_uppercase(), live),
        HashPick::Old => (oracle_sha256(oldest, message), live),
        HashPick::Sha1 => (oracle_sha1(newest, message), live && consumer.allow_sha1),
        HashPick::WrongSecret => (oracle_sha256("wrong secret", message), false),
        HashPick::Changed(at, to) => {
            let mut chars: Vec<char> = oracle_sha256(newest, message).chars().collect();
            let at = usize::from(*at) % chars.len();
            let digits: Vec<char> = "0123456789abcdef"
                .chars()
                .filter(|c| *c != chars[at])
                .collect();
            chars[at] = digits[usize::from(*to) % digits.len()];
            (chars.into_iter().collect(), false)
        }
        HashPick::Short => (oracle_sha256(newest, message)[..62].to_string(), false),
        HashPick::Empty => (String::new(), false),
        HashPick::Absent => return (None, false),
        HashPick::Json(json) => return (Some(render(json, style)), false),
    };
    (Some(render_string(&text, style)), valid)
}

/// Renders and signs a request body for `endpoint`.
fn build_body(spec: &RequestSpec, endpoint: Endpoint) -> (String, Signed) {
    let style = &spec.style;
    let mut target = Some(render_string(address(spec.target), style));
    let (mut consumer, known) = consumer_text(&spec.consumer, style);
    let mut known = known;
    let mut data = Some(render(&spec.data.to_json(), style));
    match &spec.odd.0 {
        None => {}
        Some(OddField::NoTarget) => target = None,
        Some(OddField::Target(json)) => target = Some(render(json, style)),
        Some(OddField::NoConsumer) => (consumer, known) = (None, None),
        Some(OddField::Consumer(json)) => (consumer, known) = (Some(render(json, style)), None),
        Some(OddField::NoData) => data = None,
        Some(OddField::Data(json)) => data = Some(render(json, style)),
    }

    let parse = |r: &Option<Rendered>| -> Option<Value> {
        r.as_ref()
            .and_then(|r| serde_json::from_str(&r.compact).ok())
    };
    let target_value = parse(&target);
    let consumer_value = parse(&consumer);
    let data_value = parse(&data);
    let multi = endpoint == Endpoint::Element && matches!(data_value, Some(Value::Array(_)));
    let signed_target = if multi {
        ""
    } else {
        target_value.as_ref().and_then(Value::as_str).unwrap_or("")
    };
    let signed_consumer = consumer_value
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or("");
    let data_json = data.as_ref().map_or("{}", |d| d.compact.as_str());
    let message = format!("{signed_target}.{signed_consumer}.{data_json}");
    let hash_pick = spec.hash.0.clone().unwrap_or_default();
    let (hash, valid) = hash_text(&hash_pick, known, &message, style);

    let mut entries: Vec<(String, Rendered)> = Vec::new();
    for (key, value) in [
        ("target", target),
        ("consumer", consumer),
        ("hash", hash),
        ("data", data),
    ] {
        if let Some(value) = value {
            entries.push((key.to_string(), value));
        }
    }
    if !entries.is_empty() {
        let by = usize::from(spec.order) % entries.len();
        entries.rotate_left(by);
    }
    for (key, json) in spec.extra.0.iter().flatten() {
        entries.push((key.top_name(), render(json, style)));
    }
    let mut top_duplicates = false;
    let mut top_signed_at = false;
    let mut seen = BTreeSet::new();
    let mut body = Render::new(style);
    body.token("{");
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            body.token(",");
        }
        body.gap(1);
        top_duplicates |= !seen.insert(key.clone());
        top_signed_at |= key == "signed_at";
        body.string(key);
        body.token(":");
        body.gap(1);
        body.spaced.push_str(&value.spaced);
        body.duplicates |= value.duplicates;
        body.invalid |= value.invalid;
    }
    if !entries.is_empty() {
        body.gap(0);
    }
    body.token("}");
    let malformed = body.duplicates || body.invalid || top_duplicates;
    // What the service signs is known when the signing fields are what the
    // harness rendered: no second `target`, `consumer` or `data`, no
    // `signed_at` (replay protection extends the string).
    let string = (!malformed && !top_signed_at).then_some(message);
    let signed = Signed {
        correct: valid && !top_signed_at && !malformed,
        consumer: known,
        string,
        malformed,
        target: target_value.and_then(|t| t.as_str().map(str::to_string)),
        data: data_value,
    };
    (body.spaced, signed)
}

/// Builds the HTTP request of an exchange against `endpoint`.
pub fn prepare(exchange: &Exchange, endpoint: Endpoint) -> Prepared {
    let mut facts = Facts::default();
    let right = endpoint.path();
    let path = match &exchange.path.0 {
        None => right.to_string(),
        Some(PathPick::Endpoint(i)) => Endpoint::ALL[usize::from(*i) % Endpoint::ALL.len()]
            .path()
            .to_string(),
        Some(PathPick::Trailing) => format!("{right}/"),
        Some(PathPick::Upper) => right.to_ascii_uppercase(),
        Some(PathPick::Raw(raw)) => format!("/{}", percent_encode(raw, b"/")),
    };
    let method = match exchange.method.0 {
        None => endpoint.method(),
        Some(i) => METHODS[usize::from(i) % METHODS.len()]
            .parse()
            .expect("method"),
    };

    let mut query = String::new();
    match &exchange.query {
        QueryPick::None => {}
        QueryPick::IncludeType => {
            query = "include=type".into();
            facts.include = Include::Type;
        }
        QueryPick::Include(value) => {
            query = format!("include={}", percent_encode(value, b""));
            facts.include = if value == "type" {
                Include::Type
            } else {
                Include::Other
            };
        }
        QueryPick::Proof { consumer, proof } => {
            let mut parts = Vec::new();
            if let Some(id) = proof_consumer(consumer) {
                parts.push(format!("consumer={}", percent_encode(&id, b"")));
            }
            if let Some(hash) = proof_hash(consumer, proof) {
                parts.push(format!("hash={}", percent_encode(&hash, b"")));
            }
            query = parts.join("&");
        }
        QueryPick::Raw(raw) => {
            query = percent_encode(raw, b"=&+%");
            facts.include = Include::Unknown;
        }
    }
    let uri_text = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    let uri: http::Uri = uri_text
        .parse()
        .unwrap_or_else(|_| right.parse().expect("endpoint path"));
    facts.right_path = uri.path() == right;
    facts.unknown_path = Endpoint::from_path(uri.path()).is_none();
    facts.right_method = method == endpoint.method();

    let mut headers = http::HeaderMap::new();
    let content_type = match &exchange.content_type.0 {
        None => Some(("application/json".to_string(), Some(true))),
        Some(ContentTypePick::JsonCharset) => {
            Some(("application/json; charset=utf-8".to_string(), Some(true)))
        }
        Some(ContentTypePick::JsonUpper) => Some(("Application/JSON".to_string(), Some(true))),
        Some(ContentTypePick::JsonSpaced) => {
            Some((" application/json ;x=y".to_string(), Some(true)))
        }
        Some(ContentTypePick::Missing) => None,
        Some(ContentTypePick::TextPlain) => Some(("text/plain".to_string(), Some(false))),
        Some(ContentTypePick::Form) => {
            Some(("application/x-www-form-urlencoded".to_string(), Some(false)))
        }
        Some(ContentTypePick::Raw(raw)) => Some((raw.clone(), None)),
    };
    facts.json_type = Some(false);
    if let Some((value, known)) = content_type
        && let Ok(value) = HeaderValue::from_str(&value)
    {
        headers.insert(header::CONTENT_TYPE, value);
        facts.json_type = known;
    }
    match &exchange.cookie.0 {
        None => {}
        Some(CookiePick::Sandbox { consumer, proof }) => {
            let id = proof_consumer(consumer).unwrap_or_default();
            let hash = proof_hash(consumer, proof).unwrap_or_default();
            if let Ok(value) = HeaderValue::from_str(&format!("other=1; nc_sandbox={id}.{hash}")) {
                headers.insert(header::COOKIE, value);
            }
        }
        Some(CookiePick::Raw(raw)) => {
            if let Ok(value) = HeaderValue::from_str(raw) {
                headers.insert(header::COOKIE, value);
            }
        }
    }

    let body: Vec<u8> = match &exchange.raw.0 {
        None => {
            let (body, signed) = build_body(&exchange.request, endpoint);
            facts.signed = Some(signed);
            body.into_bytes()
        }
        Some(RawBody::Oversize) => {
            let (mut body, signed) = build_body(&exchange.request, endpoint);
            body.push_str(&" ".repeat(MAX_BODY_BYTES + 1 - body.len().min(MAX_BODY_BYTES)));
            facts.signed = Some(signed);
            body.into_bytes()
        }
        Some(RawBody::Empty) => {
            facts.raw_not_object = true;
            Vec::new()
        }
        Some(RawBody::Bytes(bytes)) => {
            facts.raw_not_object = !is_json_object(bytes);
            bytes.clone()
        }
        Some(RawBody::Text(text)) => {
            facts.raw_not_object = !is_json_object(text.as_bytes());
            text.clone().into_bytes()
        }
    };
    facts.oversize = body.len() > MAX_BODY_BYTES;
    Prepared {
        method,
        uri,
        headers,
        body: Bytes::from(body),
        facts,
    }
}

fn is_json_object(bytes: &[u8]) -> bool {
    matches!(serde_json::from_slice::<Value>(bytes), Ok(Value::Object(_)))
}

/// The consumer id of a proof (query or cookie); `None` leaves it out.
fn proof_consumer(pick: &ConsumerPick) -> Option<String> {
    match pick {
        ConsumerPick::Known(i) => Some(consumer_at(*i).1.id.clone()),
        ConsumerPick::KnownUpper(i) => Some(consumer_at(*i).1.id.to_ascii_uppercase()),
        ConsumerPick::Unknown => Some(UNKNOWN_CONSUMER.to_string()),
        ConsumerPick::Absent => None,
        ConsumerPick::Json(json) => Some(render(json, &Style::default()).compact),
    }
}

fn proof_known(pick: &ConsumerPick) -> Option<usize> {
    match pick {
        ConsumerPick::Known(i) | ConsumerPick::KnownUpper(i) => Some(consumer_at(*i).0),
        _ => None,
    }
}

/// The proof (HMAC of the stored, lowercase consumer id) a pick sends.
fn proof_hash(consumer: &ConsumerPick, pick: &HashPick) -> Option<String> {
    let known = proof_known(consumer);
    let message = consumers()[known.unwrap_or(0)].id.clone();
    let (text, _) = hash_text(pick, known, &message, &Style::default());
    text.and_then(|t| serde_json::from_str::<Value>(&t.compact).ok())
        .map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        })
}

/// Whether a proof pick authenticates (the sandbox state): a live known
/// consumer and a hash that verifies.
fn proof_valid(consumer: &ConsumerPick, pick: &HashPick) -> bool {
    let Some(known) = proof_known(consumer) else {
        return false;
    };
    let message = consumers()[known].id.clone();
    hash_text(pick, Some(known), &message, &Style::default()).1
}

// ---------------------------------------------------------------------------
// Checking responses.

/// A response, read.
pub struct Seen {
    pub status: u16,
    pub body: Value,
    pub response: ApiResponse,
}

impl Seen {
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    fn code(&self) -> Option<&str> {
        self.body["messages"][0]["code"].as_str()
    }
}

/// The checks every response passes; returns it read.
pub fn check_common(world: &World, prepared: &Prepared, response: ApiResponse) -> Seen {
    let status = response.status().as_u16();
    let facts = &prepared.facts;
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if content_type.starts_with("text/html") {
        // Only the test page is HTML: sandbox, GET /.
        assert_eq!(status, 200, "HTML with status {status}");
        assert!(world.sandbox, "the test page in production");
        assert_eq!(prepared.uri.path(), "/", "HTML from {}", prepared.uri);
        return Seen {
            status,
            body: Value::Null,
            response,
        };
    }
    assert!(
        matches!(status, 200 | 201 | 400 | 404 | 405 | 413 | 415 | 422),
        "undocumented or failure status {status}: {}",
        response.body()
    );
    assert_eq!(content_type, "application/json", "content type ({status})");
    let text = response.body().clone();
    assert!(
        text.starts_with("{\"success\":"),
        "body does not start with success: {text}"
    );
    let body: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"));
    let success = body["success"]
        .as_bool()
        .unwrap_or_else(|| panic!("success is not a boolean: {text}"));
    let ok = (200..300).contains(&status);
    assert_eq!(success, ok, "success for status {status}: {text}");
    if ok {
        assert!(body.get("data").is_some(), "no data: {text}");
        assert!(
            body.get("messages").is_none(),
            "messages on success: {text}"
        );
    } else if status == 422 {
        let messages = &body["messages"];
        assert_eq!(messages["code"], "validation_failed", "{text}");
        assert_eq!(messages["status_code"], 422, "{text}");
        let errors = messages["errors"]
            .as_object()
            .unwrap_or_else(|| panic!("422 errors not an object: {text}"));
        assert!(!errors.is_empty(), "422 without field errors: {text}");
        for (key, list) in errors {
            let list = list.as_array().unwrap_or_else(|| panic!("{key}: {text}"));
            assert!(!list.is_empty(), "{key} without messages: {text}");
            assert!(list.iter().all(Value::is_string), "{key}: {text}");
        }
    } else {
        let messages = body["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("messages not an array: {text}"));
        assert_eq!(messages.len(), 1, "{text}");
        assert_eq!(messages[0]["status_code"], status, "{text}");
        assert!(messages[0]["code"].is_string(), "{text}");
        assert!(messages[0]["errors"].is_string(), "{text}");
    }
    if status == 405 {
        let allow = response
            .headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok());
        assert!(
            matches!(allow, Some("GET" | "POST")),
            "405 with Allow {allow:?}"
        );
    }
    let seen = Seen {
        status,
        body,
        response,
    };

    // A debug object: sandbox, invalid hash, known live consumer only.
    if let Some(debug) = seen.body.get("debug") {
        assert!(world.sandbox, "debug in production: {text}");
        assert_eq!(seen.code(), Some("invalid_hash"), "debug on another error");
        let signed = facts.signed.as_ref().expect("debug for a raw body");
        let known = signed.consumer.expect("debug for an unknown consumer");
        let consumer = &consumers()[known];
        assert!(is_live(consumer), "debug for an expired consumer");
        let newest = consumer.secrets.last().expect("a secret");
        assert_eq!(debug["secret"], newest.as_str(), "debug secret");
        let string = debug["string"].as_str().expect("debug string");
        assert_eq!(
            debug["hash"]["expected"],
            oracle_sha256(newest, string),
            "debug expected hash"
        );
        if let Some(expected) = &signed.string {
            assert_eq!(string, expected, "the service signed another string");
        }
    } else if world.sandbox
        && seen.code() == Some("invalid_hash")
        && let Some(signed) = &facts.signed
        && let Some(known) = signed.consumer
        && is_live(&consumers()[known])
        && prepared.uri.path() != Endpoint::SandboxState.path()
        && prepared.uri.path() != Endpoint::SandboxStaff.path()
    {
        panic!("sandbox invalid_hash without debug for a known consumer: {text}");
    }
    seen
}

/// The status the harness can tell in advance for a POST endpoint, if any.
fn predicted(world: &World, endpoint: Endpoint, facts: &Facts) -> Option<u16> {
    if facts.unknown_path {
        return Some(404);
    }
    if !facts.right_path {
        return None;
    }
    if endpoint.sandbox_only() && !world.sandbox {
        return Some(404);
    }
    if !facts.right_method {
        return Some(405);
    }
    None
}

/// Checks shared by the two signed endpoints (display, element).
fn check_signed_endpoint(world: &World, endpoint: Endpoint, prepared: &Prepared, seen: &Seen) {
    let facts = &prepared.facts;
    let status = seen.status;
    if let Some(expected) = predicted(world, endpoint, facts) {
        assert_eq!(status, expected, "{}", seen.response.body());
        return;
    }
    if !facts.right_path {
        return;
    }
    if facts.oversize {
        assert_eq!(status, 413, "oversize body: {}", seen.response.body());
        return;
    }
    match facts.json_type {
        Some(false) => {
            assert_eq!(status, 415, "{}", seen.response.body());
            return;
        }
        None => return,
        Some(true) => {}
    }
    match &facts.signed {
        None => {
            assert!(!(200..300).contains(&status), "raw body accepted");
            if facts.raw_not_object {
                assert_eq!(
                    seen.code(),
                    Some("malformed_request"),
                    "{}",
                    seen.response.body()
                );
            }
        }
        Some(signed) => {
            if signed.malformed {
                assert_eq!(
                    seen.code(),
                    Some("malformed_request"),
                    "{}",
                    seen.response.body()
                );
                return;
            }
            assert_ne!(
                seen.code(),
                Some("malformed_request"),
                "well-formed body refused: {}",
                seen.response.body()
            );
            if signed.correct {
                assert_ne!(
                    seen.code(),
                    Some("invalid_hash"),
                    "correctly signed request refused: {}",
                    seen.response.body()
                );
            }
            if (200..300).contains(&status) {
                assert!(signed.correct, "2xx without a valid signature");
            }
        }
    }
}

/// What one exchange's checks learn (for the scenario's later checks).
pub struct Outcome {
    pub prepared: Prepared,
    pub seen: Seen,
}

/// Whether to print every exchange (`NURSE_CALL_FUZZ_TRACE=1`, for reading
/// what a seed or a crash input does).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("NURSE_CALL_FUZZ_TRACE").is_some_and(|v| v == "1"))
}

/// Sends an exchange, runs the common checks.
pub fn exchange(world: &World, endpoint: Endpoint, exchange: &Exchange) -> Outcome {
    let prepared = prepare(exchange, endpoint);
    let response = world.send(&prepared);
    if trace() {
        eprintln!(
            "{} {} -> {}\n  sent: {}\n  got:  {}",
            prepared.method,
            prepared.uri,
            response.status(),
            String::from_utf8_lossy(&prepared.body[..prepared.body.len().min(2000)]),
            response.body()
        );
    }
    let seen = check_common(world, &prepared, response);
    Outcome { prepared, seen }
}

// ---------------------------------------------------------------------------
// Endpoint targets.

fn exchanges(scenario: &Scenario) -> &[Exchange] {
    &scenario.exchanges[..scenario.exchanges.len().min(MAX_EXCHANGES)]
}

/// `display`: open and close calls.
pub fn run_display(scenario: &Scenario) {
    let world = World::new(scenario.sandbox);
    for ex in exchanges(scenario) {
        let outcome = exchange(&world, Endpoint::Display, ex);
        check_signed_endpoint(&world, Endpoint::Display, &outcome.prepared, &outcome.seen);
        if (200..300).contains(&outcome.seen.status) && outcome.prepared.facts.right_path {
            check_display_success(&world, &outcome);
        }
    }
}

fn check_display_success(world: &World, outcome: &Outcome) {
    let facts = &outcome.prepared.facts;
    let seen = &outcome.seen;
    let signed = facts.signed.as_ref().expect("2xx for a signed body");
    let target = signed.target.as_deref().expect("2xx with a string target");
    let data = signed.data.as_ref().expect("2xx with data");
    if !world.sandbox {
        assert!(
            REGISTERED.iter().any(|(a, _, _)| *a == target),
            "production accepted the unregistered {target:?}"
        );
    }
    let closing = data["closed"] == Value::Bool(true);
    let check_record = |record: &Value| {
        assert_eq!(record["address"], target, "record address");
        let id = record["id"].as_i64().expect("integer id");
        assert!((1..=MAX_SAFE_ID).contains(&id), "id {id}");
        assert!(
            record["duration"].as_i64().is_some_and(|d| d >= 0),
            "duration"
        );
        match facts.include {
            Include::Type => assert!(record.get("type").is_some(), "include=type without type"),
            Include::Absent => assert!(record.get("type").is_none(), "type without include"),
            Include::Other => panic!("an include other than type accepted"),
            Include::Unknown => {}
        }
        id
    };
    if closing {
        assert_eq!(seen.status, 200, "close status");
        let closed = seen.data().as_array().expect("close returns an array");
        let ids: Vec<i64> = closed.iter().map(&check_record).collect();
        for record in closed {
            assert!(
                record["closed_at"].is_string(),
                "closed call without closed_at"
            );
        }
        // A repeat closes none of these again.
        let again = world.send(&outcome.prepared);
        let again = check_common(world, &outcome.prepared, again);
        assert_eq!(
            again.status,
            200,
            "repeated close: {}",
            again.response.body()
        );
        for record in again.data().as_array().expect("array") {
            let id = record["id"].as_i64().expect("id");
            assert!(!ids.contains(&id), "call {id} closed twice");
        }
    } else {
        assert!(
            matches!(seen.status, 200 | 201),
            "open status {}",
            seen.status
        );
        let event = data["event"].as_str().expect("open with an event");
        assert!(
            call_type_names().iter().any(|n| n == event),
            "opened the unknown event {event:?}"
        );
        let id = check_record(seen.data());
        assert!(seen.data()["closed_at"].is_null(), "opened call is closed");
        // A repeat opens nothing new: 200 with the same call.
        let again = world.send(&outcome.prepared);
        let again = check_common(world, &outcome.prepared, again);
        assert_eq!(
            again.status,
            200,
            "repeated open: {}",
            again.response.body()
        );
        assert_eq!(again.data()["id"], id, "repeated open gave another call");
    }
}

/// `element`: battery, position, reachability (single and multi form).
pub fn run_element(scenario: &Scenario) {
    let world = World::new(scenario.sandbox);
    for ex in exchanges(scenario) {
        let outcome = exchange(&world, Endpoint::Element, ex);
        check_signed_endpoint(&world, Endpoint::Element, &outcome.prepared, &outcome.seen);
        if (200..300).contains(&outcome.seen.status) && outcome.prepared.facts.right_path {
            check_element_success(&world, &outcome);
        }
    }
}

fn check_element_success(world: &World, outcome: &Outcome) {
    let seen = &outcome.seen;
    assert_eq!(seen.status, 200, "element status");
    let signed = outcome.prepared.facts.signed.as_ref().expect("signed");
    let data = signed.data.as_ref().expect("2xx with data");
    let sent: Vec<(String, &Value)> = match data {
        Value::Array(items) => items
            .iter()
            .map(|item| {
                let target = item["target"].as_str().expect("item target").to_string();
                (target, item)
            })
            .collect(),
        item => vec![(signed.target.clone().expect("target"), item)],
    };
    let mut order: Vec<&str> = Vec::new();
    let mut last: HashMap<&str, HashMap<&str, &Value>> = HashMap::new();
    for (target, item) in &sent {
        if !order.contains(&target.as_str()) {
            order.push(target);
        }
        let fields = last.entry(target).or_default();
        for key in ["battery", "position", "reachable"] {
            if let Some(value) = item.get(key).filter(|v| !v.is_null()) {
                fields.insert(key, value);
            }
        }
    }
    let records: Vec<&Value> = match seen.data() {
        Value::Array(records) => {
            assert!(data.is_array(), "array answer for the single form");
            records.iter().collect()
        }
        record => {
            assert!(data.is_object(), "object answer for the multi form");
            vec![record]
        }
    };
    let addresses: Vec<&str> = records
        .iter()
        .map(|r| r["address"].as_str().expect("address"))
        .collect();
    assert_eq!(addresses, order, "elements in the order first sent");
    for record in records {
        let address = record["address"].as_str().expect("address");
        if !world.sandbox {
            assert!(
                REGISTERED.iter().any(|(a, _, _)| *a == address),
                "production accepted the unregistered {address:?}"
            );
        }
        for (key, value) in &last[address] {
            match *key {
                "battery" => {
                    let sent = value.as_f64().expect("number");
                    let shown = record["battery"].as_f64().expect("battery shown");
                    assert!(sent == shown, "battery {sent} shown as {shown}");
                }
                _ => assert_eq!(&record[*key], *value, "{key} of {address}"),
            }
        }
    }
}

/// `call_types`: the list, unauthenticated.
pub fn run_call_types(scenario: &Scenario) {
    let world = World::new(scenario.sandbox);
    for ex in exchanges(scenario) {
        let outcome = exchange(&world, Endpoint::CallTypes, ex);
        let (facts, seen) = (&outcome.prepared.facts, &outcome.seen);
        if let Some(expected) = predicted(&world, Endpoint::CallTypes, facts) {
            assert_eq!(seen.status, expected, "{}", seen.response.body());
            continue;
        }
        if !facts.right_path {
            continue;
        }
        assert_eq!(seen.status, 200, "{}", seen.response.body());
        let list = seen.data().as_object().expect("an object");
        let names: Vec<&String> = list.keys().collect();
        let mut expected: Vec<&String> = call_type_names().iter().collect();
        expected.sort();
        let mut names_sorted = names.clone();
        names_sorted.sort();
        assert_eq!(names_sorted, expected, "call type names");
        assert!(list.values().all(|v| v == ""), "internal names");
        assert_eq!(
            seen.response.headers().get(header::CACHE_CONTROL),
            Some(&HeaderValue::from_static("max-age=60")),
            "Cache-Control"
        );
    }
}

/// A correctly signed display request, for setups.
fn signed_display(consumer: u8, target: u8, fields: Fields) -> Exchange {
    Exchange {
        request: RequestSpec {
            target,
            consumer: ConsumerPick::Known(consumer),
            data: DataSpec {
                fields,
                ..DataSpec::default()
            },
            ..RequestSpec::default()
        },
        ..Exchange::default()
    }
}

/// What the setups left open, per consumer: (address, event).
type OpenCalls = HashMap<usize, BTreeSet<(String, String)>>;
/// Every address a consumer's setups touched.
type Touched = HashMap<usize, BTreeSet<String>>;

fn run_setup(world: &World, setups: &[Setup]) -> (OpenCalls, Touched) {
    let mut open: OpenCalls = HashMap::new();
    let mut touched: Touched = HashMap::new();
    for setup in setups.iter().take(6) {
        // The first three consumers are live.
        let consumer = setup.consumer % 3;
        let index = usize::from(consumer);
        let target = address(setup.address);
        if target.trim().is_empty() {
            continue;
        }
        let event = event_name(setup.event % 10);
        let fields = if setup.close {
            Fields {
                closed: Some(true),
                ..Fields::default()
            }
        } else {
            Fields {
                event: Some(setup.event % 10),
                ..Fields::default()
            }
        };
        let outcome = exchange(
            world,
            Endpoint::Display,
            &signed_display(consumer, setup.address, fields),
        );
        let status = outcome.seen.status;
        let registered = REGISTERED.iter().any(|(a, _, _)| *a == target);
        if !world.sandbox && !registered {
            assert_eq!(status, 422, "setup: {}", outcome.seen.response.body());
            continue;
        }
        touched.entry(index).or_default().insert(target.to_string());
        let calls = open.entry(index).or_default();
        if setup.close {
            assert_eq!(status, 200, "setup close: {}", outcome.seen.response.body());
            calls.retain(|(a, _)| a != target);
        } else {
            assert!(
                matches!(status, 200 | 201),
                "setup open: {}",
                outcome.seen.response.body()
            );
            calls.insert((target.to_string(), event));
        }
    }
    (open, touched)
}

/// `sandbox_state`: the test page's data, by query proof or cookie.
pub fn run_sandbox_state(scenario: &Scenario) {
    let world = World::new(scenario.sandbox);
    let (open, touched) = run_setup(&world, &scenario.setup);
    for ex in exchanges(scenario) {
        let outcome = exchange(&world, Endpoint::SandboxState, ex);
        let (facts, seen) = (&outcome.prepared.facts, &outcome.seen);
        if let Some(expected) = predicted(&world, Endpoint::SandboxState, facts) {
            assert_eq!(seen.status, expected, "{}", seen.response.body());
            continue;
        }
        if !facts.right_path {
            continue;
        }
        // Who the harness authenticated as, when it can tell.
        let expected: Option<(u16, Option<usize>)> = match (&ex.query, &ex.cookie.0) {
            (QueryPick::Proof { consumer, proof }, _) => match consumer {
                ConsumerPick::Absent => cookie_expectation(ex.cookie.0.as_ref()),
                ConsumerPick::Json(_) => None,
                _ if matches!(proof, HashPick::Absent | HashPick::Empty) => Some((422, None)),
                _ if matches!(proof, HashPick::Json(_)) => None,
                _ if proof_valid(consumer, proof) => Some((200, proof_known(consumer))),
                _ => Some((400, None)),
            },
            (QueryPick::None | QueryPick::IncludeType, _) => {
                cookie_expectation(ex.cookie.0.as_ref())
            }
            (QueryPick::Include(_) | QueryPick::Raw(_), _) => None,
        };
        if let Some((status, _)) = expected {
            assert_eq!(seen.status, status, "state: {}", seen.response.body());
        }
        if seen.status != 200 {
            continue;
        }
        let data = seen.data();
        let calls = data["calls"].as_array().expect("calls");
        let elements = data["elements"].as_array().expect("elements");
        assert!(data["mismatches"].is_array(), "mismatches");
        for call in calls {
            assert!(call.get("type").is_some(), "state call without type");
        }
        if let Some((_, Some(who))) = expected {
            // Only this consumer's data, and all of it.
            let mine = touched.get(&who).cloned().unwrap_or_default();
            for item in calls.iter().chain(elements) {
                let address = item["address"].as_str().expect("address");
                assert!(
                    mine.contains(address),
                    "another consumer's {address:?} shown"
                );
            }
            let open_now: BTreeSet<(String, String)> = calls
                .iter()
                .filter(|c| c["closed_at"].is_null())
                .map(|c| {
                    (
                        c["address"].as_str().unwrap_or("").to_string(),
                        c["type"]["name"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
            assert_eq!(
                open_now,
                open.get(&who).cloned().unwrap_or_default(),
                "open calls of consumer {who}"
            );
        }
    }
}

fn cookie_expectation(cookie: Option<&CookiePick>) -> Option<(u16, Option<usize>)> {
    match cookie {
        None => Some((422, None)),
        Some(CookiePick::Raw(_)) => None,
        Some(CookiePick::Sandbox { consumer, proof }) => match consumer {
            ConsumerPick::Json(_) => None,
            _ if matches!(proof, HashPick::Json(_)) => None,
            _ if proof_valid(consumer, proof) => Some((200, proof_known(consumer))),
            _ => Some((422, None)),
        },
    }
}

/// `sandbox_consumers`: a new pair, which then works.
pub fn run_sandbox_consumers(scenario: &Scenario) {
    let world = World::new(scenario.sandbox);
    for ex in exchanges(scenario) {
        let outcome = exchange(&world, Endpoint::SandboxConsumers, ex);
        let (facts, seen) = (&outcome.prepared.facts, &outcome.seen);
        if let Some(expected) = predicted(&world, Endpoint::SandboxConsumers, facts) {
            assert_eq!(seen.status, expected, "{}", seen.response.body());
            continue;
        }
        if !facts.right_path {
            continue;
        }
        assert_eq!(seen.status, 201, "{}", seen.response.body());
        let id = seen.data()["consumer"].as_str().expect("consumer");
        let secret = seen.data()["secret"].as_str().expect("secret");
        assert!(nurse_call_core::is_uuid(id), "id {id}");
        assert_eq!(id, id.to_ascii_lowercase(), "id in lowercase");
        assert_eq!(secret.len(), 64, "secret length");
        assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()), "secret hex");
        let proof = oracle_sha256(secret, id);
        let cookie = seen
            .response
            .headers()
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .expect("Set-Cookie");
        assert!(
            cookie.starts_with(&format!("nc_sandbox={id}.{proof};")),
            "cookie {cookie}"
        );
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"));

        // The pair works: state by query and by cookie, a signed open.
        let state_query = Exchange {
            query: QueryPick::Raw(format!("consumer={id}&hash={proof}")),
            ..Exchange::default()
        };
        let state = exchange(&world, Endpoint::SandboxState, &state_query);
        assert_eq!(state.seen.status, 200, "{}", state.seen.response.body());
        assert_eq!(state.seen.data()["calls"], Value::Array(Vec::new()));
        let state_cookie = Exchange {
            cookie: Rarely(Some(CookiePick::Raw(format!("nc_sandbox={id}.{proof}")))),
            ..Exchange::default()
        };
        let state = exchange(&world, Endpoint::SandboxState, &state_cookie);
        assert_eq!(state.seen.status, 200, "{}", state.seen.response.body());

        let target = address(ex.request.target);
        let data = format!("{{\"event\":\"{}\"}}", call_type_names()[0]);
        let body = format!(
            "{{\"target\":{},\"consumer\":\"{id}\",\"hash\":\"{}\",\"data\":{data}}}",
            serde_json::to_string(target).expect("string"),
            oracle_sha256(secret, &format!("{target}.{id}.{data}"))
        );
        let open = exchange(
            &world,
            Endpoint::Display,
            &Exchange {
                raw: Rarely(Some(RawBody::Text(body))),
                ..Exchange::default()
            },
        );
        let expected = if target.trim().is_empty() { 422 } else { 201 };
        assert_eq!(open.seen.status, expected, "{}", open.seen.response.body());
    }
}
