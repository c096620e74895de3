//! Small builders and checks shared by the cases.

use chrono::{DateTime, Duration, SubsecRound, TimeZone, Utc};

use nurse_call_core::{
    AddressSnapshot, Backend, Call, CloseOutcome, Consumer, Element, ElementBatch, ElementChange,
    ElementPolicy, ElementWrite, ElementsOutcome, NewCall, OpenOutcome, Scope,
};

/// The largest id JavaScript represents exactly (2^53 - 1).
pub const MAX_SAFE_ID: i64 = (1 << 53) - 1;

/// The consumer that opens the cases' calls, and the one that closes them
/// (stored for the audit, DECISIONS §13).
pub const OPENER: &str = "0badc0de-0000-4000-8000-00000000000a";
/// The consumer that closes the cases' calls ([`close`] stores it as
/// `closed_by`).
pub const CLOSER: &str = "0badc0de-0000-4000-8000-00000000000b";

/// Enough to list every call or element a case creates.
pub const ALL: usize = 10_000;

/// A fixed instant plus `seconds`: stored times have whole seconds.
pub fn t(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 8, 0, 0).unwrap() + Duration::seconds(seconds)
}

/// The current instant in whole seconds (for expiry, which a store with
/// native TTL may act on by the real clock).
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

/// A sandbox consumer scope (the id is a lowercase UUID).
pub fn sandbox(id: &str) -> Scope {
    Scope::consumer(id)
}

/// Consumer `id` with one secret made of its id, created a day ago;
/// `expires_at` is a sandbox consumer's end (`None`: an installation's).
pub fn consumer(id: &str, expires_at: Option<DateTime<Utc>>) -> Consumer {
    Consumer {
        id: id.to_string(),
        name: format!("consumer {id}"),
        secrets: vec![format!("{:0>64}", id.replace('-', ""))],
        allow_sha1: false,
        created_at: now() - Duration::days(1),
        expires_at,
        require_signed_time: false,
        heartbeat_seconds: None,
    }
}

/// A call of `event` on `address` opened by [`OPENER`] at `opened_at`, every
/// optional field but `attribute` set (position, section `Station 1`, the
/// element's code and name).
pub fn new_call(address: &str, event: &str, opened_at: DateTime<Utc>) -> NewCall {
    NewCall {
        address: address.to_string(),
        event: event.to_string(),
        position: Some(format!("room of {address}")),
        section: Some("Station 1".to_string()),
        attribute: None,
        element_code: format!("code-{address}"),
        element_name: format!("name-{address}"),
        opened_at,
        opened_by: Some(OPENER.to_string()),
    }
}

/// A change that sends no status field.
pub fn no_change(address: &str, at: DateTime<Utc>) -> ElementChange {
    ElementChange {
        address: address.to_string(),
        battery: None,
        position: None,
        reachable: None,
        at,
    }
}

/// A change that sends only the battery.
pub fn battery(address: &str, value: f64, at: DateTime<Utc>) -> ElementChange {
    ElementChange {
        battery: Some(value),
        ..no_change(address, at)
    }
}

/// Registers the element at `address` (code `code-<address>`, name
/// `name-<address>`) and returns it; panics when the store fails.
pub async fn register(
    store: &dyn Backend,
    scope: &Scope,
    address: &str,
    at: DateTime<Utc>,
) -> Element {
    store
        .register_element(
            scope,
            address,
            &format!("code-{address}"),
            &format!("name-{address}"),
            at,
        )
        .await
        .unwrap_or_else(|e| panic!("register_element({address}) failed: {e}"))
}

/// Opens a call and insists on a new one.
pub async fn open(store: &dyn Backend, scope: &Scope, call: &NewCall) -> Call {
    let change = no_change(&call.address, call.opened_at);
    match store
        .open_call(
            call,
            &AddressSnapshot::default(),
            &ElementWrite::new(
                scope,
                &change,
                ElementPolicy::CreateMissing,
                &AddressSnapshot::default(),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("open_call({}, {}) failed: {e}", call.address, call.event))
    {
        OpenOutcome::Opened(opened) => opened,
        OpenOutcome::AlreadyOpen(existing) => panic!(
            "open_call({}, {}) with no open call of that event returned AlreadyOpen({existing:?})",
            call.address, call.event
        ),
        OpenOutcome::UnknownElement => panic!(
            "open_call({}, {}) with CreateMissing returned UnknownElement",
            call.address, call.event
        ),
    }
}

/// The snapshot a handler would pass to a close: `calls` open on the
/// address (each once), the element left out.
pub fn open_at(calls: &[&Call]) -> AddressSnapshot {
    let mut open_calls: Vec<Call> = Vec::new();
    for call in calls {
        if !open_calls.iter().any(|c| c.id == call.id) {
            open_calls.push((*call).clone());
        }
    }
    AddressSnapshot {
        element: None,
        open_calls,
    }
}

/// The calls a close returned, for closes whose element cannot vanish.
pub trait ClosedCalls {
    /// The closed calls; panics on [`CloseOutcome::UnknownElement`].
    fn calls(self) -> Vec<Call>;
}

impl ClosedCalls for CloseOutcome {
    fn calls(self) -> Vec<Call> {
        match self {
            CloseOutcome::Closed(calls) => calls,
            CloseOutcome::UnknownElement => panic!("close_calls answered UnknownElement"),
        }
    }
}

/// Closes `calls` on `address` with no element change.
pub async fn close(
    store: &dyn Backend,
    scope: &Scope,
    address: &str,
    calls: &[&Call],
    closed_at: DateTime<Utc>,
) -> Vec<Call> {
    let closing = open_at(calls);
    store
        .close_calls(
            &closing,
            closed_at,
            Some(CLOSER),
            &ElementWrite::new(
                scope,
                &no_change(address, closed_at),
                ElementPolicy::CreateMissing,
                &closing,
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("close_calls({address}) failed: {e}"))
        .calls()
}

/// One element batch of `changes` under `policy`; panics when the store
/// fails (unknown elements are an outcome, not a failure).
pub async fn update(
    store: &dyn Backend,
    scope: &Scope,
    changes: &[ElementChange],
    policy: ElementPolicy,
) -> ElementsOutcome {
    store
        .update_elements(&ElementBatch::new(scope, changes, policy))
        .await
        .unwrap_or_else(|e| panic!("update_elements({changes:?}, {policy:?}) failed: {e}"))
}

/// The elements an update wrote; panics, naming `context`, when some were
/// unknown.
pub fn expect_updated(outcome: ElementsOutcome, context: &str) -> Vec<Element> {
    match outcome {
        ElementsOutcome::Updated(elements) => elements,
        ElementsOutcome::Unknown(unknown) => {
            panic!("{context}: expected Updated, got Unknown({unknown:?})")
        }
    }
}

/// The element at `address` as a request reads it (its snapshot); `None`
/// when there is none.
pub async fn element(store: &dyn Backend, scope: &Scope, address: &str) -> Option<Element> {
    store
        .snapshot(scope, address)
        .await
        .unwrap_or_else(|e| panic!("snapshot({address}) failed: {e}"))
        .element
}

/// The open calls at `address` as a request reads them (its snapshot).
pub async fn open_calls(store: &dyn Backend, scope: &Scope, address: &str) -> Vec<Call> {
    store
        .snapshot(scope, address)
        .await
        .unwrap_or_else(|e| panic!("snapshot({address}) failed: {e}"))
        .open_calls
}

/// Every call of a scope (open first, newest first).
pub async fn all_calls(store: &dyn Backend, scope: &Scope) -> Vec<Call> {
    store
        .recent_calls(scope, ALL)
        .await
        .unwrap_or_else(|e| panic!("recent_calls({}) failed: {e}", scope.as_str()))
}

/// Every element of a scope (most recently updated first).
pub async fn all_elements(store: &dyn Backend, scope: &Scope) -> Vec<Element> {
    store
        .recent_elements(scope, ALL)
        .await
        .unwrap_or_else(|e| panic!("recent_elements({}) failed: {e}", scope.as_str()))
}

/// The calls' ids, in the calls' order.
pub fn ids(calls: &[Call]) -> Vec<i64> {
    calls.iter().map(|c| c.id).collect()
}

/// A sorted copy, for comparing lists whose order a store may choose.
pub fn sorted<T: Ord + Clone>(items: &[T]) -> Vec<T> {
    let mut items = items.to_vec();
    items.sort();
    items
}

/// The call `opened` as stored, closed at `closed_at` by [`CLOSER`].
pub fn closed(opened: &Call, closed_at: DateTime<Utc>) -> Call {
    Call {
        closed_at: Some(closed_at),
        closed_by: Some(CLOSER.to_string()),
        ..opened.clone()
    }
}

/// Asserts that a call id is one JavaScript holds exactly, from 1 to
/// [`MAX_SAFE_ID`]; the message names `context`.
pub fn assert_id_valid(id: i64, context: &str) {
    assert!(
        (1..=MAX_SAFE_ID).contains(&id),
        "{context}: call id {id} is not in 1..=2^53-1"
    );
}
