//! The nurse-call service without any cloud types: what a request is, how it is
//! validated and signed, what calls and elements are, the `Store` trait that
//! persists them, and the HTTP handlers that every entry point (the Lambda
//! functions and the local server) shares.
//!
//! One folder per concern, each using only the ones listed before it:
//!
//! 1. [`domain`]: calls, elements, call types, consumers, displays and the
//!    sections they show, wire times, element supervision, the quality report
//!    and what a line of kept text may be; plain data and pure functions.
//! 2. [`config`]: the installation's settings (DECISIONS §10).
//! 3. [`wire`]: the JSON the service answers with, and the messages of the
//!    displays' live feed ([`wire::live`]).
//! 4. [`signing`]: what is signed and how it is checked; consumer secrets and
//!    the readers' bearer tokens (minted here, only their hash is stored).
//! 5. [`request`]: from a body to a validated request (the 422 catalogue).
//! 6. [`store`]: the `Store` trait the request path uses, the admin's and the
//!    sandbox's own traits, and the caching decorator.
//! 7. [`app`]: the state every handler gets (store, settings, live feed),
//!    whose data a consumer works on, and the element policy.
//! 8. [`http`]: who is asking (the one door, [`http::auth`]), errors and
//!    their bodies, the router and the routes (which handler serves which
//!    endpoint; a Lambda function links only its own), one handler per
//!    endpoint, the three pages' among them.
//!
//! [`logging`] sets up the structured JSON logs of every binary; [`clock`]
//! is where the time and fresh event ids come from (the domain takes them
//! as parameters).
//!
//! The folders are private: what the other crates (the stores, the Lambda
//! functions, the local server, the admin tool, the tests) use is listed
//! below, re-exported by name, so this file is core's whole interface.
//! Everything else is `pub(crate)` (the `unreachable_pub` lint keeps it so).

mod app;
pub mod clock;
mod config;
mod domain;
mod http;
pub mod logging;
mod request;
mod signing;
mod store;
mod wire;

// The request path: the state every handler gets, the endpoints, and the
// functions that serve a request (the Lambda functions and the local server).
pub use app::AppState;
pub use http::auth::{Authenticated, Reader, SandboxProof, live_reader, live_token_holds, proof};
pub use http::endpoint::Endpoint;
pub use http::error::ApiError;
pub use http::handlers::openapi::DOCUMENT as OPENAPI_DOCUMENT;
pub use http::handlers::sandbox::new_sandbox_consumer;
pub use http::handlers::staff_push::host_of;
pub use http::io::{ApiRequest, ApiResponse, MAX_BODY_BYTES, error_response};
pub use http::router::{serve, serve_endpoint, serve_only, serve_route, unreadable_body};
pub use http::routes::{self, Route};
pub use request::envelope::{Envelope, parse_strict};
pub use request::validation::is_uuid;
pub use signing::compact::compact_json;

// The installation's settings (DECISIONS §10) and the parsers the binaries'
// flags share.
pub use config::{
    CallRetention, Mode, Settings, StaffSettings, env_value, non_blank, parse_duty_hours,
    parse_live_url, parse_low_battery_percent, parse_receipt_seconds, parse_stale_after_hours,
    parse_time_zone, parse_vapid_subject,
};
pub use domain::push_services::{DEFAULT_PUSH_SERVICES, PushServices, parse_push_services};

// Calls, elements and what they belong to.
pub use domain::call_type_items::{
    CallTypeItem, CallTypesRead, Fallback, MAX_ACCEPT_TIMEOUT, read_items,
};
pub use domain::call_types::default_call_types;
pub use domain::model::{
    Call, CallType, Consumer, Display, Element, ElementChange, ElementPolicy, HashMismatch,
    NewCall, Scope, sections_show,
};
pub use domain::raw::Raw;
pub use domain::supervision::{AttentionReason, Thresholds, attention_reasons};
pub use domain::text::{MAX_TEXT_CHARS, admin_text, has_control_characters, optional_admin_text};

// Stored credentials, wire times, the report and the signing helpers: small
// modules whose every public name is meant for the other crates.
pub use domain::{credentials, report, wire_time};
pub use signing::{sealing, secrets, signature, tokens};

// The stores: the traits each store implements and what they take and give.
pub use store::admin::{AdminStore, Erased, SecretsReplaced, listed};
pub use store::alarms::{AlarmStore, AlarmWrite, DueAlarm, FirstAlarm, KeptAlarm, RosterRead};
pub use store::cache::DEFAULT_TTL;
pub use store::links::LinkStore;
pub use store::outbox::EventOutbox;
pub use store::push::{PushStore, Registration};
pub use store::webhooks::{Attempt, AttemptEnd, WebhookStore};
pub use store::{
    AddressSnapshot, Backend, CloseOutcome, ElementBatch, ElementWrite, ElementsOutcome,
    OpenOutcome, SandboxStore, ServiceStore, Store, StoreError,
};

// The adapters around the pure engine: the alarm runner, its timers, the
// push jobs and the webhook dispatcher.
pub use app::alarm::AlarmRunner;
pub use app::alarm::timer::TimerTaken;
pub use app::fair::{FairPermit, FairPermits, host_key};
pub use app::push::{PushJob, PushKind, PushSink, jobs_of_effects};
pub use app::silence::Swept;
pub use app::webhooks::{Dispatcher, Sender};

/// The alarm engine's values and its two pure functions ([`alarm::step`],
/// [`alarm::respond`]), as the stores and the AWS functions use them.
pub mod alarm {
    pub use crate::app::alarm::step::is_presence;
    pub use crate::domain::alarm::audit::AuditEvent;
    pub use crate::domain::alarm::engine::quiet_end;
    pub use crate::domain::alarm::receipt::{Path, Receipt, device_tag};
    pub use crate::domain::alarm::timer::{
        MAX_DELAY_SECONDS, OVERDUE_AFTER_SECONDS, Timer, first_delay, timer_of_change,
    };
    pub use crate::domain::alarm::{
        Alarm, AlarmStatus, Answer, Audience, CancelReason, Duty, Effect, Level, Policy, Recipient,
        Refusal, Response, Roster, Situation, Staff, StaffRef, Step, receive, respond, step,
    };
}

/// Web Push: a person's subscriptions, the server's keys and what follows a
/// push service's answer; each device's state by its receipts (§18).
pub mod push {
    pub use crate::app::push::{SILENCE_CALL_ID, TEST_CALL_ID};
    pub use crate::domain::device::{
        Device, DeviceState, SILENT_AFTER_PUSHES, TestReceipt, all_silent, device_state,
    };
    pub use crate::domain::push::{
        MAX_SUBSCRIPTIONS_PER_STAFF, PUSH_TTL_SECONDS, PushNext, PushSubscription, VapidKeys,
        after_push, topic_of,
    };
}

/// Webhooks to alarm servers: endpoints, event types, the outbox and the
/// attempt schedule.
pub mod webhooks {
    pub use crate::domain::webhooks::attention::{AttentionChange, attention_changes};
    pub use crate::domain::webhooks::endpoint::default_name;
    pub use crate::domain::webhooks::facts::ElementFacts;
    pub use crate::domain::webhooks::outbox;
    pub use crate::domain::webhooks::schedule::{ATTEMPT_TIMEOUT, CONNECT_TIMEOUT};
    pub use crate::domain::webhooks::{
        Endpoint, EventType, Outcome, alerts_reach_handsets, check_url, is_private_address,
        is_private_literal, names_private_host,
    };
}

/// The supervision of central systems (DECISIONS §19): links, their
/// heartbeats and silences.
pub mod links {
    pub use crate::domain::links::{
        GRACE_SECONDS, Link, MAX_HEARTBEAT_SECONDS, MIN_HEARTBEAT_SECONDS, Silence, SilenceRecord,
        is_heartbeat_interval, silent_after,
    };
    pub use crate::wire::silence::link_event;
}

/// The live feed of the displays and staff pages: its hub and its messages.
pub mod live {
    pub use crate::wire::live::{
        AlarmNews, Delivery, LiveAudience, LiveEvent, LiveHub, LiveMessage, OpenPage, PONG, is_ping,
    };
}
