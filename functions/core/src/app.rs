//! What every handler needs: the store, the installation's settings and the
//! live feed; and the two rules every write follows: whose data a consumer
//! works on ([`AppState::scope_for`]) and what happens to an unknown element
//! ([`AppState::element_policy`]). [`alarm`] runs the alarm engine against
//! the store (DECISIONS §14; [`AppState::alarm_runner`]); [`push`] turns its
//! alerts and cancels into Web Push jobs (DECISIONS §15); [`webhooks`]
//! forwards events to alarm servers (DECISIONS §16) and [`forwarding`] says
//! which of them fail.

pub(crate) mod alarm;
pub(crate) mod devices;
pub(crate) mod fair;
pub(crate) mod forwarding;
pub(crate) mod links_read;
pub(crate) mod push;
pub(crate) mod signs_of_life;
pub(crate) mod silence;
pub(crate) mod webhooks;

use std::sync::Arc;

use std::time::Duration;

use crate::config::{Mode, Settings};
use crate::domain::model::{Call, CallType, Consumer, Element, ElementPolicy, Scope};
use crate::store::alarms::AlarmStore;
use crate::store::cache::{Cache, DEFAULT_TTL};
use crate::store::fallbacks::FallbackLog;
use crate::store::links::LinkStore;
use crate::store::push::PushStore;
use crate::store::webhooks::EndpointsRead;
use crate::store::{SandboxStore, Store, StoreError};
use crate::wire::live::LiveHub;

/// The state every handler gets: the store (as each of its traits), the
/// installation's settings, the live feed and the adapters of alarms, pushes
/// and webhooks. Cheap to clone: every part is shared.
#[derive(Clone)]
pub struct AppState {
    /// What the API's handlers use.
    pub store: Arc<dyn Store>,
    /// The same store, for the test server's bookkeeping (sandbox endpoints
    /// and hash mismatches); never used in production mode.
    pub sandbox: Arc<dyn SandboxStore>,
    /// Call types and consumers, cached in the Lambda functions.
    cache: Option<Arc<Cache>>,
    /// Logs the call types' fallbacks once per cache refresh.
    fallback_log: Arc<FallbackLog>,
    /// The installation's settings, read once when the process starts.
    pub settings: Settings,
    /// The in-process live feed of the local server; `None` in the Lambda
    /// functions, where DynamoDB Streams feed the displays instead.
    pub live: Option<LiveHub>,
    /// The same store, for staff, duties and the calls' alarms (DECISIONS
    /// §14). Every service sets it ([`AppState::with_alarms`]); `None` only
    /// where a test or benchmark has a store without alarms, where the
    /// staff endpoints answer 401 and no alarm is run.
    pub alarms: Option<Arc<dyn AlarmStore>>,
    /// Which webhook endpoints fail (DECISIONS §16), kept by the local
    /// server's dispatcher, or read from the store where another process
    /// delivers ([`AppState::with_stored_forwarding`]); `None` where
    /// nothing says, and displays then show no such line.
    pub forwarding: Option<Arc<forwarding::Forwarding>>,
    /// Where `forwarding` comes from the store: refreshed by the reads
    /// that show it ([`AppState::refresh_forwarding`]).
    pub stored_forwarding: Option<Arc<forwarding::StoredForwarding>>,
    /// The same store, for the staff's push subscriptions and the VAPID
    /// keys (DECISIONS §15): every service sets it ([`AppState::with_push`]).
    pub push: Option<Arc<dyn PushStore>>,
    /// The same store, for the supervised links (DECISIONS §19): every
    /// service sets it ([`AppState::with_links`]); `None` only where a test
    /// or benchmark has a store without them, where no sign of life is kept.
    pub links: Option<Arc<dyn LinkStore>>,
    /// When this process last wrote each consumer's sign of life
    /// ([`signs_of_life`]): at most one write per consumer per third of its
    /// interval.
    pub(crate) signs_of_life: Arc<signs_of_life::SignsOfLife>,
    /// The links the reads' `silent` shows, read from the store at most
    /// every 10 s ([`links_read`]).
    pub(crate) links_read: Arc<links_read::LinksRead>,
    /// The same store, for the webhook events of silences (DECISIONS §19,
    /// [`silence`]), which belong to no call's write: every service sets
    /// it ([`AppState::with_outbox`]).
    pub outbox: Option<Arc<dyn crate::store::outbox::EventOutbox>>,
    /// Where the alarm's pushes go: the local server's push adapter; `None`
    /// in the Lambda functions, where an alarm write's pushes leave by the
    /// table's stream (the `alarm` function queues them, `deliver` sends
    /// them: DECISIONS §17).
    pub pushes: Option<Arc<dyn push::PushSink>>,
    /// Whether a write's handler looks at the alarms it touched, in the
    /// background ([`alarm::looks`]); off where another process steps every
    /// alarm ([`AppState::without_alarm_looks`]).
    pub looks_after_writes: bool,
    /// The scopes whose duty looks run: one round at a time per scope
    /// ([`alarm::scope_rounds`]).
    pub(crate) scope_rounds: Arc<alarm::scope_rounds::ScopeRounds>,
    /// The calls whose alarm a look of this process holds: one look at a
    /// time per call ([`alarm::call_locks`]).
    pub(crate) call_locks: Arc<alarm::call_locks::CallLocks>,
}

impl AppState {
    /// A state over `store` alone: no cache, live feed, alarms, pushes or
    /// forwarding until the `with_…` methods add them.
    pub fn new(store: Arc<dyn SandboxStore>, settings: Settings) -> Self {
        AppState {
            store: store.clone(),
            sandbox: store,
            cache: None,
            // No cache: the period a Lambda function's cache would have.
            fallback_log: Arc::new(FallbackLog::new(DEFAULT_TTL)),
            settings,
            live: None,
            alarms: None,
            forwarding: None,
            stored_forwarding: None,
            push: None,
            links: None,
            signs_of_life: Arc::default(),
            links_read: Arc::default(),
            outbox: None,
            pushes: None,
            looks_after_writes: true,
            scope_rounds: Arc::default(),
            call_locks: Arc::default(),
        }
    }

    /// The same state, leaving every alarm step to another process (the
    /// AWS path's `alarm` function, DECISIONS §17): no look after a write.
    pub fn without_alarm_looks(self) -> Self {
        AppState {
            looks_after_writes: false,
            ..self
        }
    }

    /// The same state, routing alarms through `store` (the same store as
    /// the state's, as its alarm-routing trait).
    pub fn with_alarms(self, store: Arc<dyn AlarmStore>) -> Self {
        AppState {
            alarms: Some(store),
            ..self
        }
    }

    /// The same state, keeping push subscriptions and the VAPID keys in
    /// `store` (the same store as the state's).
    pub fn with_push(self, store: Arc<dyn PushStore>) -> Self {
        AppState {
            push: Some(store),
            ..self
        }
    }

    /// The same state, keeping the supervised links' signs of life in
    /// `store` (the same store as the state's).
    pub fn with_links(self, store: Arc<dyn LinkStore>) -> Self {
        AppState {
            links: Some(store),
            ..self
        }
    }

    /// The same state, keeping the silences' webhook events in `store`
    /// (the same store as the state's).
    pub fn with_outbox(self, store: Arc<dyn crate::store::outbox::EventOutbox>) -> Self {
        AppState {
            outbox: Some(store),
            ..self
        }
    }

    /// The same state, handing the alarm's alerts and cancels to `sink`.
    pub fn with_pushes(self, sink: Arc<dyn push::PushSink>) -> Self {
        AppState {
            pushes: Some(sink),
            ..self
        }
    }

    /// The same state, reading call types and consumers through a cache
    /// whose entries live `ttl` ([`crate::store::cache`]).
    pub fn with_cache(self, ttl: Duration) -> Self {
        AppState {
            cache: Some(Arc::new(Cache::new(ttl))),
            fallback_log: Arc::new(FallbackLog::new(ttl)),
            ..self
        }
    }

    /// The same state, telling displays which webhook endpoints fail.
    pub fn with_forwarding(self, forwarding: Arc<forwarding::Forwarding>) -> Self {
        AppState {
            forwarding: Some(forwarding),
            ..self
        }
    }

    /// The same state, telling displays which webhook endpoints fail as
    /// `store` has it (the Lambda functions, DECISIONS §17: the `forward`
    /// function stores it).
    pub fn with_stored_forwarding(self, store: Arc<dyn EndpointsRead>) -> Self {
        let stored = Arc::new(forwarding::StoredForwarding::new(store));
        AppState {
            forwarding: Some(stored.forwarding()),
            stored_forwarding: Some(stored),
            ..self
        }
    }

    /// Brings `forwarding` up to date where it comes from the store (at
    /// most one read every [`forwarding::READ_EVERY`]); nothing otherwise.
    pub async fn refresh_forwarding(&self, now: chrono::DateTime<chrono::Utc>) {
        if let Some(stored) = &self.stored_forwarding {
            stored.refresh(now).await;
        }
    }

    /// The same state, publishing every committed change to `hub`.
    pub fn with_live(self, hub: LiveHub) -> Self {
        AppState {
            live: Some(hub),
            ..self
        }
    }

    /// Tells connected displays about calls that were just written; `types`
    /// are the call types the handler already read for the request.
    pub fn publish_calls(&self, scope: &Scope, calls: &[Call], types: &[CallType]) {
        if let Some(hub) = self.listened_hub() {
            let now = crate::clock::now();
            for call in calls {
                hub.publish_call(scope, call, types, self.settings.time_zone, now);
            }
        }
    }

    /// Tells connected displays about elements that were just written.
    pub fn publish_elements(&self, scope: &Scope, elements: &[Element]) {
        if let Some(hub) = self.listened_hub() {
            for element in elements {
                hub.publish_element(scope, element, self.settings.time_zone);
            }
        }
    }

    /// After a display request changed its element: reads the element back
    /// (the open and close transactions return no element) and publishes it.
    /// Only with a live feed, so the Lambda functions pay no extra read.
    pub async fn publish_element_of(&self, scope: &Scope, address: &str) {
        if self.listened_hub().is_none() {
            return;
        }
        match self.store.snapshot(scope, address).await {
            Ok(snapshot) => {
                if let Some(element) = snapshot.element {
                    self.publish_elements(scope, std::slice::from_ref(&element));
                }
            }
            Err(error) => tracing::warn!(%error, "live feed: element not re-read"),
        }
    }

    /// The live feed, when a display is connected to it: with none, a write
    /// builds no message and reads nothing back (under load with no display,
    /// the element's re-read after every display request cost a fifth more
    /// CPU per request, docs/performance.md).
    pub(crate) fn listened_hub(&self) -> Option<&LiveHub> {
        self.live.as_ref().filter(|hub| hub.has_listeners())
    }

    /// Whose data an authenticated consumer works on (see [`Scope`]).
    pub fn scope_for(&self, consumer: &Consumer) -> Scope {
        match self.settings.mode {
            Mode::Production => Scope::installation(),
            Mode::Sandbox => Scope::consumer(&consumer.id),
        }
    }

    /// Production: a request needs a registered element; the sandbox
    /// creates the elements its visitors name.
    pub fn element_policy(&self) -> ElementPolicy {
        match self.settings.mode {
            Mode::Production => ElementPolicy::MustExist,
            Mode::Sandbox => ElementPolicy::CreateMissing,
        }
    }

    /// Whether this installation is the test server: only then are the sandbox
    /// endpoints and the test page served and the visitor's cookie accepted.
    pub fn is_sandbox(&self) -> bool {
        self.settings.mode == Mode::Sandbox
    }

    /// The configured call types (cached when the state has a cache), with
    /// the fallbacks of hand-edited items (DECISIONS §7), which are logged.
    pub async fn call_types(&self) -> Result<Vec<CallType>, StoreError> {
        match &self.cache {
            Some(cache) => {
                cache
                    .call_types(self.store.as_ref(), &self.fallback_log)
                    .await
            }
            None => self.fallback_log.read(self.store.as_ref()).await,
        }
    }

    /// The alarm store, or an internal error where this service has none
    /// ([`AppState::alarms`]).
    pub(crate) fn alarm_store(&self) -> Result<&Arc<dyn AlarmStore>, StoreError> {
        self.alarms
            .as_ref()
            .ok_or_else(|| StoreError::Internal("this service has no alarm store".into()))
    }

    /// A consumer by id (cached when the state has a cache).
    pub async fn consumer(&self, id: &str) -> Result<Option<Consumer>, StoreError> {
        match &self.cache {
            Some(cache) => cache.consumer(self.store.as_ref(), id).await,
            None => self.store.consumer(id).await,
        }
    }
}
