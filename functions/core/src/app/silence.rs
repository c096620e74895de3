//! What a silence of a central system does (DECISIONS §19): the sweep that
//! finds the silent links and keeps their silence
//! ([`AppState::sweep_links`], the local server every 5 s), and what a
//! silence and its end set off: the live message `consumer.silent` or
//! `consumer.back` to every display and staff page of the consumer's
//! scope, the webhook event of the same name, an audit line; and for a
//! silence, Technik's alert (a push and a live message with a receipt id),
//! again every 5 minutes while it lasts, 3 times at most.
//!
//! Every decision is the store's first: a silence is announced by the
//! process whose `mark_silent` wrote it, an alert sent by the process whose
//! `mark_silence_alerted` counted it, so two processes on one store never
//! both announce. The sweep's decisions are pure ([`crate::domain::silence`]).

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::app::AppState;
use crate::app::push::{PushJob, PushKind, SILENCE_CALL_ID};
use crate::clock;
use crate::domain::alarm::{Audience, Roster, Staff};
use crate::domain::links::{Link, Silence};
use crate::domain::model::Scope;
use crate::domain::silence::{SilenceReceipt, SweepStep, TECHNIK, sweep};
use crate::domain::webhooks::EventType;
use crate::domain::webhooks::outbox::{Facts, LinkFacts, OutboxEvent, is_forwarded};
use crate::store::StoreError;
use crate::wire::live::{LiveAudience, LiveEvent};
use crate::wire::silence::{SilenceNews, SilentRecord, link_scope, message};

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Links this sweep found silent and kept so.
    pub silent: usize,
    /// Technik alerts sent (first ones and repeats).
    pub alerts: usize,
}

impl AppState {
    /// One sweep of the supervised links at `now` (DECISIONS §19): each
    /// link overdue is kept silent and announced; each silent link whose
    /// Technik alert is due is alerted (see the module). A store error on
    /// one link is logged and leaves it to the next sweep; only the read of
    /// the links fails the sweep. Nothing where the state keeps no links.
    pub async fn sweep_links(&self, now: DateTime<Utc>) -> Result<Swept, StoreError> {
        let Some(store) = &self.links else {
            return Ok(Swept::default());
        };
        let began = self.links_read.began(now);
        let links = store.links().await?;
        // What the sweep read serves the reads' `silent` too.
        let links = self.links_read.keep(began, links);
        let mut swept = Swept::default();
        // A link another process found silent first is its to alert.
        let mut not_ours: HashSet<String> = HashSet::new();
        for step in sweep(&links, now) {
            match step {
                SweepStep::GoesSilent {
                    link,
                    seen,
                    silence,
                } => match store.mark_silent(&link.consumer, seen, &silence).await {
                    Ok(true) => {
                        swept.silent += 1;
                        self.announce(
                            SilenceNews::Silent,
                            &link.consumer,
                            &link.name,
                            &silence,
                            now,
                        )
                        .await;
                    }
                    Ok(false) => {
                        tracing::debug!(consumer = %link.consumer, "silence: a request or another process came first");
                        not_ours.insert(link.consumer);
                    }
                    Err(error) => {
                        tracing::warn!(consumer = %link.consumer, %error, "silence not kept: tried again at the next sweep");
                        not_ours.insert(link.consumer);
                    }
                },
                SweepStep::Alert { link, alert } => {
                    if not_ours.contains(&link.consumer) {
                        continue;
                    }
                    match store.mark_silence_alerted(&link.consumer, alert, now).await {
                        Ok(true) => {
                            self.alert_technik(&link, alert, now).await;
                            swept.alerts += 1;
                        }
                        Ok(false) => {
                            tracing::debug!(consumer = %link.consumer, alert, "silence alert: counted by another process, or the link is back")
                        }
                        Err(error) => {
                            tracing::warn!(consumer = %link.consumer, alert, %error, "silence alert not counted: tried again at the next sweep")
                        }
                    }
                }
            }
        }
        Ok(swept)
    }

    /// The silent links of `scope` at `now` (the displays' and staff
    /// pages' `silent`), oldest first, as read from the store at most 10 s
    /// before ([`crate::app::links_read`]); none where the state keeps no
    /// links. A store error is logged and shows none: the read itself must
    /// not fail for it.
    pub(crate) async fn silent_links(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
    ) -> Vec<SilentRecord> {
        let Some(store) = &self.links else {
            return Vec::new();
        };
        let links = match self.links_read.fresh(now) {
            Some(links) => links,
            None => {
                let began = self.links_read.began(now);
                match store.links().await {
                    Ok(links) => self.links_read.keep(began, links),
                    Err(error) => {
                        tracing::warn!(%error, "silent links not read: the read shows none");
                        return Vec::new();
                    }
                }
            }
        };
        let mine: Vec<Link> = links
            .iter()
            .filter(|link| link_scope(self.settings.mode, &link.consumer) == *scope)
            .cloned()
            .collect();
        SilentRecord::of_links(&mine, self.settings.time_zone)
    }

    /// The live message, the webhook event and the audit line of a
    /// silence that began (`Silent`) or ended (`Back`) at `now`.
    async fn announce(
        &self,
        news: SilenceNews,
        consumer: &str,
        name: &str,
        silence: &Silence,
        now: DateTime<Utc>,
    ) {
        let scope = link_scope(self.settings.mode, consumer);
        let record = SilentRecord::new(consumer, name, silence.since, self.settings.time_zone);
        let (kind, audit) = match news {
            SilenceNews::Silent => (EventType::ConsumerSilent, "silent"),
            SilenceNews::Back => (EventType::ConsumerBack, "back"),
        };
        // This process's reads show the change at once.
        self.links_read.forget();
        // The audit line; the store's history of silences is the report's.
        tracing::warn!(
            audit,
            consumer,
            name,
            since = %silence.since,
            detected_at = %silence.detected_at,
            at = %now,
            "central system {}",
            if news == SilenceNews::Silent { "silent" } else { "back" }
        );
        if let Some(hub) = &self.live {
            hub.publish_to(
                LiveEvent {
                    scope: scope.clone(),
                    section: None,
                    message: message(news, &record, None),
                },
                LiveAudience::Everyone,
            );
        }
        if let Some(outbox) = &self.outbox
            && is_forwarded(&scope)
        {
            let event = link_event(kind, scope, consumer, name, silence.since, now);
            if let Err(error) = outbox.keep_events(std::slice::from_ref(&event)).await {
                tracing::error!(consumer, event_id = %event.id, kind = %kind, %error, "webhook event of a silence not kept");
            }
        }
    }

    /// Technik's alert number `alert` about `link`'s silence: to each
    /// member of the group `Technik` (on duty or not), or everyone on duty
    /// where it has none, a live message to their open pages and a push to
    /// their phones, each with its receipt id.
    async fn alert_technik(&self, link: &Link, alert: i64, now: DateTime<Utc>) {
        let Some(silence) = &link.silence else {
            return;
        };
        let scope = link_scope(self.settings.mode, &link.consumer);
        let people = match self.technik(&scope, now).await {
            Ok(people) => people,
            Err(error) => {
                tracing::error!(consumer = %link.consumer, alert, %error, "silence alert: staff not read, nobody alerted");
                return;
            }
        };
        let record = SilentRecord::new(
            &link.consumer,
            &link.name,
            silence.since,
            self.settings.time_zone,
        );
        for staff in &people {
            let receipt = SilenceReceipt::new(silence.since, &link.consumer, &staff.id).to_string();
            let text = message(SilenceNews::Silent, &record, Some(&receipt));
            if let Some(hub) = &self.live {
                hub.publish_to(
                    LiveEvent {
                        scope: scope.clone(),
                        section: None,
                        message: text.clone(),
                    },
                    LiveAudience::Person(staff.id.clone()),
                );
            }
            if let Some(sink) = &self.pushes {
                sink.send(silence_push(&scope, &staff.id, text, now));
            }
        }
        if people.is_empty() {
            // Nobody in Technik and nobody on duty: the banner is all.
            tracing::error!(consumer = %link.consumer, name = %link.name, alert, "central system silent and nobody to alert: no Technik member and nobody on duty");
        }
        let ids: Vec<&str> = people.iter().map(|s| s.id.as_str()).collect();
        tracing::warn!(
            audit = "silence_alert",
            consumer = %link.consumer,
            name = %link.name,
            alert,
            staff = ?ids,
            "Technik alerted: central system silent"
        );
    }

    /// Who a silence alerts: the group `Technik`'s members, else everyone
    /// on duty (never a revoked member).
    async fn technik(&self, scope: &Scope, now: DateTime<Utc>) -> Result<Vec<Staff>, StoreError> {
        let read = self.alarm_store()?.roster(scope, now).await?;
        let roster = Roster {
            staff: &read.staff,
            duties: &read.duties,
            now,
        };
        let mut people = roster.audience(&Audience::Group(TECHNIK.into()), None);
        if people.is_empty() {
            people = roster.audience(&Audience::House, None);
        }
        Ok(people.into_iter().cloned().collect())
    }
}

/// The push of a silence's alert to one person: `payload` is its live
/// message, receipt included.
fn silence_push(scope: &Scope, staff_id: &str, payload: String, now: DateTime<Utc>) -> PushJob {
    PushJob {
        scope: scope.clone(),
        staff_id: staff_id.to_string(),
        call_id: SILENCE_CALL_ID,
        kind: PushKind::Silence,
        payload,
        made_at: now,
        alert: None,
        device: None,
    }
}

/// The outbox event `consumer.silent` or `consumer.back` at `at`.
fn link_event(
    kind: EventType,
    scope: Scope,
    consumer: &str,
    name: &str,
    since: DateTime<Utc>,
    at: DateTime<Utc>,
) -> OutboxEvent {
    OutboxEvent {
        id: clock::new_event_id(),
        position: String::new(),
        scope,
        kind,
        at,
        call_id: None,
        section: None,
        facts: Facts::of_link(LinkFacts {
            consumer: consumer.to_string(),
            name: name.to_string(),
            since,
        }),
    }
}

/// A silent consumer sent a request again at `now`: its silence (since
/// `silence.since`) ended. The live message, the webhook event and the
/// audit line `consumer.back`; Technik's pages drop the banner on it (a
/// phone's notification stays, as it says when the silence began).
pub(crate) async fn announce_back(
    state: &AppState,
    consumer: &str,
    silence: &Silence,
    now: DateTime<Utc>,
) {
    let name = match state.consumer(consumer).await {
        Ok(Some(found)) => found.name,
        Ok(None) => consumer.to_string(),
        Err(error) => {
            tracing::warn!(consumer, %error, "consumer not read: consumer.back names it by id");
            consumer.to_string()
        }
    };
    state
        .announce(SilenceNews::Back, consumer, &name, silence, now)
        .await;
}
