//! The conformance suite of the [`Backend`] traits (the request path's
//! `Store`, the sandbox's, and `AlarmStore`: staff, duties, each call's
//! alarm, its audit and the due index) and of [`WebhookStore`] (endpoints,
//! the outbox kept with the writes, the delivery log): every implementation (SQLite
//! locally, DynamoDB in AWS) must pass the same cases, with the same results
//! and the same atomicity (DECISIONS §9, §14).
//!
//! Each case is a plain `pub async fn case(harness: Harness)` that works on a
//! fresh, empty store (with the default call types seeded) and panics with a
//! clear message when the store breaks its contract. [`conformance_tests!`]
//! turns every case into one `#[tokio::test]` of the implementing crate:
//!
//! ```ignore
//! async fn make_store() -> store_conformance::Harness {
//!     let dir = tempfile::tempdir().unwrap();
//!     let store = SqliteStore::open_dir(dir.path()).unwrap();
//!     store.seed_call_types(&default_call_types()).await.unwrap();
//!     let store = Arc::new(store);
//!     store_conformance::Harness::new(store.clone())
//!         .with_webhooks(store)
//!         .keep_alive(dir)
//! }
//!
//! store_conformance::conformance_tests!(make_store());
//! ```
//!
//! The implementing crate needs `tokio` (features `macros`, `rt-multi-thread`)
//! among its dev-dependencies.

use std::any::Any;
use std::sync::Arc;

use nurse_call_core::{Backend, WebhookStore};

pub mod admin;
// Public for the local server's dispatcher tests (functions/local/tests).
pub mod alarm_support;
mod cases;
pub mod counting_server;
pub mod moto;
pub mod support;
mod webhook_support;

pub use cases::*;

/// A fresh store for one case, with what the store can and cannot do.
pub struct Harness {
    /// A fresh, empty store with the default call types seeded.
    pub store: Arc<dyn Backend>,
    /// Whether `purge_expired` removes expired consumers and their data, and
    /// `purge_closed_calls` closed calls past retention, itself. Stores with
    /// native expiry (DynamoDB TTL) may leave that to the database and return
    /// 0; the purge cases then check only that nothing live is lost.
    pub purges_expired: bool,
    /// Whether `open_call_with_alarm` writes the first step it is given and
    /// `close_calls` ends an alarm that rings for nobody (the store's
    /// option, DECISIONS §14's looks do it otherwise); the cases check the
    /// store does exactly what it declares.
    pub alarms_with_writes: bool,
    /// The same store as [`Harness::store`] as a [`WebhookStore`] (a trait
    /// of its own, not part of [`Backend`]); the webhook cases need it.
    pub webhooks: Option<Arc<dyn WebhookStore>>,
    /// Whatever must outlive the store (a temporary folder, a server process).
    guard: Option<Box<dyn Any + Send + Sync>>,
}

impl Harness {
    /// A store that upholds every capability of the trait.
    pub fn new(store: Arc<dyn Backend>) -> Self {
        Harness {
            store,
            purges_expired: true,
            alarms_with_writes: true,
            webhooks: None,
            guard: None,
        }
    }

    /// Declares whether `purge_expired` purges (see [`Harness::purges_expired`]).
    pub fn with_purges_expired(mut self, purges_expired: bool) -> Self {
        self.purges_expired = purges_expired;
        self
    }

    /// Declares whether the store takes alarm steps with its writes (see
    /// [`Harness::alarms_with_writes`]).
    pub fn with_alarms_with_writes(mut self, alarms_with_writes: bool) -> Self {
        self.alarms_with_writes = alarms_with_writes;
        self
    }

    /// Gives the webhook cases the store (the same one as [`Harness::store`]:
    /// the outbox is what its writes keep).
    pub fn with_webhooks(mut self, webhooks: Arc<dyn WebhookStore>) -> Self {
        self.webhooks = Some(webhooks);
        self
    }

    /// Keeps `guard` alive as long as the case runs (dropped after it).
    pub fn keep_alive(mut self, guard: impl Any + Send + Sync) -> Self {
        self.guard = Some(Box::new(guard));
        self
    }
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("purges_expired", &self.purges_expired)
            .field("alarms_with_writes", &self.alarms_with_writes)
            .field("webhooks", &self.webhooks.is_some())
            .field("guard", &self.guard.is_some())
            .finish_non_exhaustive()
    }
}

impl From<Arc<dyn Backend>> for Harness {
    fn from(store: Arc<dyn Backend>) -> Self {
        Harness::new(store)
    }
}

/// Expands to one `#[tokio::test]` per conformance case.
///
/// `$make_store` is an expression evaluating to a future (`make_store()` or an
/// `async { … }` block) whose output is a [`Harness`] or an `Arc<dyn Backend>`:
/// a fresh, empty store with the default call types seeded. It is evaluated
/// anew in every test, so each test has its own store.
#[macro_export]
macro_rules! conformance_tests {
    ($make_store:expr) => {
        $crate::conformance_tests!(@cases $make_store;
            consumer_round_trip,
            call_types_are_seeded_in_id_order,
            seed_call_types_is_idempotent,
            seed_call_types_never_overwrites,
            register_element_creates_an_element,
            register_element_keeps_status_fields,
            snapshot_of_unknown_address_is_empty,
            update_elements_changes_only_sent_fields,
            update_elements_must_exist_is_all_or_nothing,
            update_elements_create_missing_creates,
            empty_change_keeps_updated_at,
            open_call_opens_a_call,
            open_call_on_open_event_returns_existing,
            open_call_events_are_independent,
            open_call_after_close_opens_a_new_call,
            open_call_element_policies,
            close_calls_closes_listed_open_calls,
            close_calls_ignores_other_addresses_and_unknown_ids,
            close_calls_element_policies,
            recent_calls_orders_open_first_then_newest,
            recent_elements_orders_most_recently_updated_first,
            open_calls_are_the_scopes_open_calls_at_once,
            element_versions_grow_with_every_change,
            purge_expired_removes_expired_consumers_and_their_data,
            scopes_are_isolated,
            call_ids_are_unique_positive_and_safe,
            concurrent_opens_of_one_event_open_once,
            concurrent_opens_and_closes_keep_invariants,
            concurrent_element_batches_are_all_or_nothing,
            hash_mismatches_keep_the_newest_first,
            hash_mismatches_are_scoped,
            purge_expired_removes_old_hash_mismatches,
            purge_closed_calls_removes_only_calls_closed_before_the_cutoff,
            call_types_keep_their_escalation,
            staff_are_found_by_token_hash_and_id,
            staff_of_lists_a_scope_by_name_then_id,
            staff_rotate_revoke_and_erase,
            duties_are_replaced_ended_and_expire,
            staff_and_duties_are_scoped,
            open_call_keeps_a_pending_alarm_due_at_once,
            write_alarm_at_the_kept_version_writes_alarm_and_audit,
            write_alarm_at_a_stale_version_writes_nothing,
            due_alarms_are_the_earliest_first_in_every_scope,
            every_read_of_calls_carries_their_alarm,
            a_closed_calls_alarm_stays_readable_and_writable,
            alarms_are_scoped,
            open_call_with_alarm_writes_the_step_or_the_pending_alarm,
            close_ends_an_alarm_that_rings_for_nobody,
            two_concurrent_alarm_writes_write_once,
            many_concurrent_alarm_writes_write_once,
            purge_closed_calls_removes_their_alarms,
            purge_expired_removes_a_visitors_staff_and_alarms,
            webhook_endpoints_are_created_listed_updated_and_deleted,
            outbox_keeps_the_events_of_an_alarm_write,
            outbox_keeps_the_call_closed_of_a_close,
            a_conflicting_alarm_write_keeps_no_event,
            outbox_events_come_back_in_write_order,
            finish_events_takes_events_out,
            log_and_finish_logs_then_takes_events_out,
            concurrent_alarm_writes_keep_only_the_winners_events,
            events_kept_on_their_own_come_back_as_given,
            the_delivery_log_keeps_every_attempt,
            attention_marks_move_with_their_event_once,
            vapid_keys_are_kept_once,
            push_subscriptions_are_kept_per_person_and_endpoint,
            push_subscriptions_go_with_their_person,
            device_pushes_and_receipts_are_kept,
            a_subscription_is_its_persons_channel_in_the_roster,
            concurrent_registrations_stop_at_the_cap,
            concurrent_sandbox_staff_stop_at_the_cap,
            links_are_the_consumers_with_a_heartbeat,
            sign_of_life_keeps_the_later_time,
            mark_silent_only_while_no_request_came,
            sign_of_life_ends_a_silence,
            silence_alerts_are_counted_once_each,
            removing_a_heartbeat_ends_its_silence,
            silences_are_those_overlapping_the_span,
        );
    };
    (@cases $make_store:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let harness: $crate::Harness = ::core::convert::Into::into($make_store.await);
                $crate::$case(harness).await;
            }
        )*
    };
}
